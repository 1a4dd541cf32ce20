package postcard

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/region"
)

// Status is the outcome of a query.
type Status uint8

// Query outcomes.
const (
	Empty    Status = iota // no chunk decodes as a path of this flow
	Found                  // the valid chunks agree on a path
	Conflict               // two valid chunks disagree
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

// Hop is one hop of a decoded path.
type Hop struct {
	Value   uint32
	Present bool // false: the hop did not report (a hole in a partial path)
}

// Result is the answer to one query.
type Result struct {
	Status Status
	// Hops is the path up to PathLen (or, when that is unknown, its last
	// reporting hop), aliasing the dst given to Query. A hop with Present false
	// did not report (a partial path written early).
	Hops []Hop
	// PathLen is the path's length when the chunk shows it (an End marker
	// after the last hop, or a report from hop B); 0 when the end is unknown,
	// as for a path written early whose postcards carried no length.
	PathLen int
	// Complete is true when the path length is known and no hop is missing.
	Complete bool
	Valid    int // chunks that decoded as a path of this flow
	Copies   int // chunks read (N)
}

// Store is a Postcarding store: a Spec bound to a region.
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

// Query decodes the path of the flow with (hashed) key bytes key. The hops are
// appended to dst[:0].
func (s *Store) Query(key []byte, dst []Hop) (Result, error) {
	var sums [hashing.MaxHops]uint32
	for i := range s.spec.Hops {
		sums[i] = hashing.HopChecksum(i+1, key)
	}
	k := s.spec.Hash.Key(key)
	res := Result{Copies: s.spec.Redundancy}
	var vals, got [hashing.MaxHops]uint32
	var present, ends uint8
	conflict := false
	for n := range s.spec.Redundancy {
		chunk, err := s.mem.Slice(s.spec.Offset(k, n), s.spec.ChunkSize())
		if err != nil {
			return Result{}, err
		}
		p, e, ok := s.decode(chunk, &sums, &got)
		if !ok {
			continue
		}
		res.Valid++
		if res.Valid == 1 {
			vals, present, ends = got, p, e
			continue
		}
		if p != present || e != ends || got != vals {
			conflict = true
		}
	}
	switch {
	case res.Valid == 0:
		return res, nil
	case conflict:
		res.Status = Conflict
		return res, nil
	}
	res.Status = Found
	res.PathLen = pathLen(present, ends, s.spec.Hops)
	n := res.PathLen
	if n == 0 {
		n = 8 - bits.LeadingZeros8(present)
	}
	res.Hops = dst[:0]
	res.Complete = res.PathLen != 0
	for i := range n {
		h := Hop{Value: vals[i], Present: present&(1<<i) != 0}
		res.Complete = res.Complete && h.Present
		res.Hops = append(res.Hops, h)
	}
	return res, nil
}

// pathLen returns the path length a chunk shows: the first End slot, or B
// when the last hop reported; 0 when the end is unknown (a path written early
// without its length).
func pathLen(present, ends uint8, hops int) int {
	if ends != 0 {
		return bits.TrailingZeros8(ends)
	}
	if present&(1<<(hops-1)) != 0 {
		return hops
	}
	return 0
}

// decode checks one chunk: every slot must decode to a member of the value
// set, to Blank or to End, at least one to a member, and End slots only after
// every reporting hop.
func (s *Store) decode(chunk []byte, sums, out *[hashing.MaxHops]uint32) (present, ends uint8, ok bool) {
	*out = [hashing.MaxHops]uint32{}
	for i := range s.spec.Hops {
		v := binary.BigEndian.Uint32(chunk[i*SlotSize:]) ^ sums[i]
		switch {
		case v == Blank:
		case v == End:
			ends |= 1 << i
		case v >= s.spec.MinValue && v <= s.spec.MaxValue:
			out[i] = v
			present |= 1 << i
		default:
			return 0, 0, false
		}
	}
	if present == 0 || ends != 0 && bits.TrailingZeros8(ends) < 8-bits.LeadingZeros8(present) {
		return 0, 0, false
	}
	return present, ends, true
}
