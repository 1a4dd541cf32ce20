package keywrite

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/dta-go/dta/hashing"
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
	// words: a slot is one 8-byte word (values of at most 4 bytes), read as a
	// whole by one atomic load: checksum in the low half, value in the high
	// half (masked by valueMask).
	words     bool
	valueMask uint64
}

// NewStore binds spec to mem, which must be at least spec.RegionSize() bytes.
func NewStore(spec Spec, mem *region.Region) (*Store, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if mem.Size() < spec.RegionSize() {
		return nil, fmt.Errorf("region of %d bytes is smaller than the %d the store needs", mem.Size(), spec.RegionSize())
	}
	st := &Store{spec: spec, mem: mem, words: spec.SlotSize() == 8}
	if st.words {
		st.valueMask = uint64(1)<<(8*spec.ValueSize) - 1
	}
	return st, nil
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
	sum := k.Checksum()
	var offs [hashing.MaxCopies]uint64
	for i := range n {
		offs[i] = s.spec.Offset(k, i)
	}
	if s.words {
		return s.queryWords(sum, &offs, n, threshold, dst)
	}
	// Load every copy's checksum before looking at any: the loads do not
	// depend on each other, so their cache misses overlap.
	var mask uint8
	for i := range n {
		w, err := s.checksumAt(offs[i])
		if err != nil {
			return Result{}, err
		}
		if w == sum {
			mask |= 1 << i
		}
	}
	return s.vote(sum, offs[:n], mask, threshold, dst)
}

// checksumAt loads the checksum word of the slot at off.
func (s *Store) checksumAt(off uint64) (uint32, error) {
	slot, err := s.mem.Slice(off, ChecksumLen)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(slot), nil
}

// allCopies is the copy mask of vote that reads every copy.
const allCopies = 1<<hashing.MaxCopies - 1

// queryAhead is how many queries QueryBatch keeps in flight: it hashes query
// q and prefetches its slots, then votes query q-queryAhead, whose lines have
// arrived meanwhile. A steady trickle of prefetches, spread between the votes,
// keeps the core's miss buffers busy all the time, where a burst per chunk of
// queries (the previous design: 32 queries prefetched, then voted) stalls on
// full buffers and then leaves memory idle while the chunk is voted. On a
// 4 GiB store, N=2: 4 ahead is 10–15 % slower than 8 to 32, 64 no better
// (docs/BENCHMARKS.md). A power of two.
const queryAhead = 32

// queryGroup is how many consecutive queries QueryBatch hashes and then
// prefetches with one Region.Prefetch call (a call into assembly, which Go
// does not inline): 8 per call measured 5–15 % faster than 1 or 2, 16 and
// 32 no better. It divides queryAhead.
const queryGroup = 8

// QueryBatch answers one query per key, as Query(keys[i], n, threshold, ...)
// would, into res[i]; res must be at least as long as keys. A found value is
// copied into vals[i*ValueSize:(i+1)*ValueSize], which res[i].Value aliases;
// vals must hold len(keys)*ValueSize bytes. It allocates nothing.
//
// It is faster than one Query per key on a store larger than the caches: it
// is software-pipelined, hashing each key and prefetching its slots
// (Region.Prefetch) queryAhead queries before it reads and votes them, so
// the cache misses of many queries overlap instead of each query waiting for
// its own.
func (s *Store) QueryBatch(keys [][]byte, n, threshold int, res []Result, vals []byte) error {
	if n == 0 {
		n = s.spec.MaxRedundancy
	}
	if n < 1 || n > s.spec.MaxRedundancy {
		return fmt.Errorf("redundancy %d out of range [1, %d]", n, s.spec.MaxRedundancy)
	}
	if threshold < 0 || threshold > n {
		return fmt.Errorf("threshold %d out of range [0, %d]", threshold, n)
	}
	if len(res) < len(keys) {
		return fmt.Errorf("%d results for %d keys", len(res), len(keys))
	}
	vs := s.spec.ValueSize
	if len(vals) < len(keys)*vs {
		return fmt.Errorf("%d value bytes for %d keys of %d bytes", len(vals), len(keys), vs)
	}
	if s.words {
		if words := s.wordView(); words != nil {
			return s.queryBatchWords(words, keys, n, threshold, res, vals)
		}
	}
	// The ring of queries in flight: query q is in place q%queryAhead, its
	// checksum in sums and its n slot offsets in offs[place*n:], so that the
	// offsets of a group of consecutive queries are consecutive too. Query q
	// takes the place of query q-queryAhead once that one is voted.
	var (
		sums [queryAhead]uint32
		offs [queryAhead * hashing.MaxCopies]uint64
	)
	for g := 0; g < len(keys)+queryAhead; g += queryGroup {
		for v := max(g-queryAhead, 0); v < min(g-queryAhead+queryGroup, len(keys)); v++ {
			place := v & (queryAhead - 1)
			r, err := s.vote(sums[place], offs[place*n:place*n+n], allCopies, threshold, vals[v*vs:v*vs:(v+1)*vs])
			if err != nil {
				return err
			}
			res[v] = r
		}
		s.prefetchGroup(&sums, &offs, keys, g, n)
	}
	return nil
}

// prefetchGroup hashes the keys of queries g to g+queryGroup-1 (those that
// exist) into their places of QueryBatch's ring and prefetches their slots
// with one call.
func (s *Store) prefetchGroup(sums *[queryAhead]uint32, offs *[queryAhead * hashing.MaxCopies]uint64, keys [][]byte, g, n int) {
	end := min(g+queryGroup, len(keys))
	if g >= end {
		return
	}
	alg, slots, size := s.spec.Hash, s.spec.Slots, s.spec.SlotSize()
	for q := g; q < end; q++ {
		place := q & (queryAhead - 1)
		key := keys[q]
		var k hashing.Keyed
		if len(key) == 4 {
			// A compat key, hashed without the byte loop (the same Keyed).
			k = alg.Key32(binary.LittleEndian.Uint32(key))
		} else {
			k = alg.Key(key)
		}
		sums[place] = k.Checksum()
		o := offs[place*n : place*n+n]
		for i := range o {
			o[i] = hashing.Reduce(k.Slot(i), slots) * size
		}
	}
	first := g & (queryAhead - 1)
	s.mem.Prefetch(offs[first*n : (first+end-g)*n])
}

// wordView returns the store's slots as 8-byte words, or nil if the region's
// memory is not 8-byte aligned (it is page aligned). The view is valid while
// the region is open, as the views of Region.Slice are; QueryBatch takes it
// anew at every call.
func (s *Store) wordView() []uint64 {
	size := s.spec.RegionSize()
	b, err := s.mem.Slice(0, size)
	if err != nil || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%8 != 0 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), size/8)
}

// queryBatchWords is QueryBatch on a store of one-word slots, whose words
// are words. It votes inline for the usual outcomes (no copy matches, or every
// matching copy holds the same value) and calls voteWords for the others.
func (s *Store) queryBatchWords(words []uint64, keys [][]byte, n, threshold int, res []Result, vals []byte) error {
	vs, mask := s.spec.ValueSize, s.valueMask
	var (
		sums [queryAhead]uint32
		offs [queryAhead * hashing.MaxCopies]uint64
	)
	for g := 0; g < len(keys)+queryAhead; g += queryGroup {
		for v := max(g-queryAhead, 0); v < min(g-queryAhead+queryGroup, len(keys)); v++ {
			place := v & (queryAhead - 1)
			sum, o := sums[place], offs[place*n:place*n+n]
			checks, same, first := 0, true, uint64(0)
			for _, off := range o {
				w := atomic.LoadUint64(&words[off/8])
				if uint32(w) != sum {
					continue
				}
				if val := w >> 32 & mask; checks == 0 {
					first = val
				} else if val != first {
					same = false
				}
				checks++
			}
			r := &res[v]
			dst := vals[v*vs : (v+1)*vs : (v+1)*vs]
			switch {
			case !same:
				// Copies disagree (rare): the general vote, on a fresh
				// load of the copies.
				if err := s.voteWords(r, sum, o, threshold, dst); err != nil {
					return err
				}
			case checks == 0 || checks < threshold:
				r.Status, r.Value, r.Votes, r.Checks, r.Copies = Empty, nil, checks, checks, n
			default:
				if vs == 4 {
					binary.LittleEndian.PutUint32(dst, uint32(first))
				} else {
					for i := range dst {
						dst[i] = byte(first >> (8 * i))
					}
				}
				// Field by field: a composite literal is built on the stack
				// and copied with 16-byte loads that straddle its 8-byte
				// stores, which the CPU cannot forward (a stall per query).
				r.Status, r.Value, r.Votes, r.Checks, r.Copies = Found, dst, checks, checks, n
			}
		}
		s.prefetchGroup(&sums, &offs, keys, g, n)
	}
	return nil
}

// voteWords is queryWords for QueryBatch: it answers the query of checksum
// sum and slots offs on a store of one-word slots into *r, copying a found
// value into dst (exactly ValueSize bytes long) without a call to copy it.
func (s *Store) voteWords(r *Result, sum uint32, offs []uint64, threshold int, dst []byte) error {
	var vals [hashing.MaxCopies]uint64
	checks := 0
	for _, off := range offs {
		w, err := s.mem.Load64(off)
		if err != nil {
			return err
		}
		if uint32(w) == sum {
			vals[checks&(hashing.MaxCopies-1)] = w >> 32 & s.valueMask
			checks++
		}
	}
	*r = Result{Copies: len(offs), Checks: checks}
	if checks == 0 {
		return nil
	}
	best, votes, tie := vals[0], checks, false
	for _, v := range vals[1:checks] {
		if v != best {
			best, votes, tie = pluralityWords(vals[:checks])
			break
		}
	}
	r.Votes = votes
	switch {
	case votes < threshold:
		return nil
	case tie:
		r.Status = Conflict
		return nil
	}
	r.Status = Found
	if len(dst) == 4 {
		binary.LittleEndian.PutUint32(dst, uint32(best))
	} else {
		for i := range dst {
			dst[i] = byte(best >> (8 * i))
		}
	}
	r.Value = dst
	return nil
}

// pluralityWords votes among values that are not all equal: the value with
// the most copies (the first such in vals), its votes, and whether another
// value has as many.
func pluralityWords(vals []uint64) (best uint64, bestVotes int, tie bool) {
	for _, v := range vals {
		votes := 0
		for _, u := range vals {
			if u == v {
				votes++
			}
		}
		switch {
		case votes > bestVotes:
			best, bestVotes, tie = v, votes, false
		case votes == bestVotes && v != best:
			tie = true
		}
	}
	return best, bestVotes, tie
}

// vote reads the slots at offs whose bit is set in mask (the others did not
// match when their checksum was loaded) and applies the plurality rule. It votes on views of the
// region and copies the winner out; if a concurrent write changed the winning
// slot meanwhile it votes again (at most a few times).
func (s *Store) vote(sum uint32, offs []uint64, mask uint8, threshold int, dst []byte) (Result, error) {
	size := s.spec.SlotSize()
	for attempt := 0; ; attempt++ {
		var vals [hashing.MaxCopies][]byte
		res := Result{Copies: len(offs)}
		for i, off := range offs {
			if mask&(1<<i) == 0 {
				continue
			}
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
		// The usual case: every matching copy holds the same value.
		same := res.Checks > 0
		for i := 1; i < res.Checks && same; i++ {
			same = equalValue(vals[i], vals[0])
		}
		if same {
			best, bestVotes = 0, res.Checks
		}
		for i := 0; i < res.Checks && !same; i++ {
			votes := 0
			for j := 0; j < res.Checks; j++ {
				if equalValue(vals[i], vals[j]) {
					votes++
				}
			}
			switch {
			case votes > bestVotes:
				best, bestVotes, tie = i, votes, false
			case votes == bestVotes && !equalValue(vals[i], vals[best]):
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
		if equalValue(res.Value, vals[best]) || attempt >= 3 {
			return res, nil
		}
	}
}

// queryWords answers a query on a store of one-word slots: it loads the n
// copies at offs, each as one atomic 8-byte load (so a copy is never torn
// between a concurrent writer's checksum and value, and needs no re-vote),
// and votes on the values of those whose checksum is sum. It answers exactly
// as vote does.
func (s *Store) queryWords(sum uint32, offs *[hashing.MaxCopies]uint64, n, threshold int, dst []byte) (Result, error) {
	var words [hashing.MaxCopies]uint64
	for i := range n {
		w, err := s.mem.Load64(offs[i])
		if err != nil {
			return Result{}, err
		}
		words[i] = w
	}
	res := Result{Copies: n}
	var vals [hashing.MaxCopies]uint64
	for _, w := range words[:n] {
		if uint32(w) == sum {
			vals[res.Checks] = w >> 32 & s.valueMask
			res.Checks++
		}
	}
	if res.Checks == 0 {
		return res, nil
	}
	best, bestVotes, tie := vals[0], 1, false
	same := true
	for _, v := range vals[1:res.Checks] {
		if v != best {
			same = false
			break
		}
	}
	if same {
		bestVotes = res.Checks
	} else {
		bestVotes = 0
		for i, v := range vals[:res.Checks] {
			votes := 0
			for _, u := range vals[:res.Checks] {
				if u == v {
					votes++
				}
			}
			switch {
			case votes > bestVotes:
				best, bestVotes, tie = vals[i], votes, false
			case votes == bestVotes && v != best:
				tie = true
			}
		}
	}
	res.Votes = bestVotes
	switch {
	case bestVotes < threshold:
		return res, nil
	case tie:
		res.Status = Conflict
		return res, nil
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], best)
	res.Status = Found
	res.Value = append(dst[:0], b[:s.spec.ValueSize]...)
	return res, nil
}

// equalValue is bytes.Equal for two values of a store (equal lengths), with
// the usual 4- and 8-byte values compared as words rather than by a call.
func equalValue(a, b []byte) bool {
	switch {
	case len(a) != len(b):
		return false
	case len(a) == 4:
		return binary.LittleEndian.Uint32(a) == binary.LittleEndian.Uint32(b)
	case len(a) == 8:
		return binary.LittleEndian.Uint64(a) == binary.LittleEndian.Uint64(b)
	}
	return bytes.Equal(a, b)
}
