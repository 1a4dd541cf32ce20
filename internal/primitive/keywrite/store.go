package keywrite

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/dta-go/dta/internal/hashing"
	"github.com/dta-go/dta/internal/region"
)

// Status is the outcome of a query.
type Status uint8

// Query outcomes.
const (
	// Empty: no copy carries the key's checksum (never written, or all copies
	// overwritten), or the leading value has fewer votes than the threshold.
	Empty Status = iota
	// Found: one value has the most votes and at least the threshold.
	Found
	// Conflict: two or more different values share the most votes.
	Conflict
)

// String returns the status name used by the query API.
func (s Status) String() string {
	switch s {
	case Found:
		return "found"
	case Conflict:
		return "conflict"
	}
	return "empty"
}

// Result is the answer to one query.
type Result struct {
	Status Status
	Value  []byte // the winning value (Found), aliasing the dst given to Query
	Votes  int    // copies that carry the winning value
	Checks int    // copies whose checksum matched
	Copies int    // copies read (N)
}

// Store is a Key-Write store: a Spec bound to a region.
type Store struct {
	spec Spec
	mem  *region.Region
}

// NewStore binds spec to mem, which must be at least spec.RegionSize() bytes.
func NewStore(spec Spec, mem *region.Region) (*Store, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if mem.Size() < spec.RegionSize() {
		return nil, fmt.Errorf("region of %d bytes is smaller than the %d the store needs", mem.Size(), spec.RegionSize())
	}
	return &Store{spec: spec, mem: mem}, nil
}

// Spec returns the store's geometry.
func (s *Store) Spec() Spec { return s.spec }

// Query looks key up reading n copies (0 means the store's MaxRedundancy) and
// votes among the copies whose checksum matches. A value wins with the most
// votes if no other value has as many and it has at least threshold votes (0
// or 1 mean plain plurality). The value is appended to dst[:0].
func (s *Store) Query(key []byte, n, threshold int, dst []byte) (Result, error) {
	if n == 0 {
		n = s.spec.MaxRedundancy
	}
	if n < 1 || n > s.spec.MaxRedundancy {
		return Result{}, fmt.Errorf("redundancy %d out of range [1, %d]", n, s.spec.MaxRedundancy)
	}
	if threshold < 0 || threshold > n {
		return Result{}, fmt.Errorf("threshold %d out of range [0, %d]", threshold, n)
	}
	k := s.spec.Hash.Key(key)
	var offs [hashing.MaxCopies]uint64
	for i := range n {
		offs[i] = s.spec.Offset(k, i)
	}
	return s.vote(k.Checksum(), offs[:n], threshold, dst)
}

// vote reads the slots at offs and applies the plurality rule. It votes on
// views of the region and copies the winner out; if a concurrent write changed
// the winning slot meanwhile it votes again (at most a few times).
func (s *Store) vote(sum uint32, offs []uint64, threshold int, dst []byte) (Result, error) {
	size := s.spec.SlotSize()
	for attempt := 0; ; attempt++ {
		var vals [hashing.MaxCopies][]byte
		res := Result{Copies: len(offs)}
		for _, off := range offs {
			slot, err := s.mem.Slice(off, size)
			if err != nil {
				return Result{}, err
			}
			if binary.LittleEndian.Uint32(slot) != sum {
				continue
			}
			vals[res.Checks] = slot[ChecksumLen : ChecksumLen+s.spec.ValueSize]
			res.Checks++
		}
		best, bestVotes, tie := -1, 0, false
		for i := 0; i < res.Checks; i++ {
			votes := 0
			for j := 0; j < res.Checks; j++ {
				if bytes.Equal(vals[i], vals[j]) {
					votes++
				}
			}
			switch {
			case votes > bestVotes:
				best, bestVotes, tie = i, votes, false
			case votes == bestVotes && !bytes.Equal(vals[i], vals[best]):
				tie = true
			}
		}
		res.Votes = bestVotes
		switch {
		case best < 0 || bestVotes < threshold:
			res.Status = Empty
			return res, nil
		case tie:
			res.Status = Conflict
			return res, nil
		}
		res.Status = Found
		res.Value = append(dst[:0], vals[best]...)
		if bytes.Equal(res.Value, vals[best]) || attempt >= 3 {
			return res, nil
		}
	}
}
