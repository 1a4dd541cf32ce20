package appendlist

import (
	"errors"
	"fmt"

	"github.com/dta-go/dta/internal/region"
)

// ErrCursorAhead is returned by Poll for a cursor beyond the list's head: the
// list was reset or the translator restarted without resuming. Start again
// from the head (or 0).
var ErrCursorAhead = errors.New("cursor is ahead of the list's head")

// Store is an Append store: a Spec bound to a region.
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

// Head returns the number of entries published to list so far.
func (s *Store) Head(list uint32) (uint64, error) {
	if list >= s.spec.Lists {
		return 0, ErrList
	}
	return s.mem.Load64(s.spec.HeadOffset(list))
}

// PollResult is what one Poll returned.
type PollResult struct {
	// Data holds Count entries of EntrySize bytes, oldest first, aliasing the
	// dst given to Poll. Entry j has absolute index First+j.
	Data  []byte
	Count int
	First uint64
	// Next is the cursor to poll from next time.
	Next uint64
	// Lost counts entries between the cursor and First that were overwritten
	// (the writer lapped the reader) before they could be read.
	Lost uint64
	// Head is the list's published head when the poll finished.
	Head uint64
}

// Poll reads up to limit entries of list starting at absolute index cursor.
// It never returns an entry the writer may be overwriting: it reads the head,
// copies entries the writer cannot be touching, and reads the head again to
// drop any the writer reached meanwhile.
func (s *Store) Poll(list uint32, cursor uint64, limit int, dst []byte) (PollResult, error) {
	h1, err := s.Head(list)
	if err != nil {
		return PollResult{}, err
	}
	if limit < 0 {
		return PollResult{}, fmt.Errorf("limit %d is negative", limit)
	}
	if cursor > h1 {
		return PollResult{Head: h1, Next: cursor}, ErrCursorAhead
	}
	start := max64(cursor, s.lowest(list, h1))
	end := start + min(uint64(limit), h1-start)
	es := uint64(s.spec.EntrySize)
	dst = dst[:0]
	for i := start; i < end; {
		// Copy a contiguous run up to the ring's end.
		run := min(end-i, s.spec.Capacity-i%s.spec.Capacity)
		src, err := s.mem.Slice(s.spec.EntryOffset(list, i), run*es)
		if err != nil {
			return PollResult{}, err
		}
		dst = append(dst, src...)
		i += run
	}
	// Re-read the head with an atomic read-modify-write (adding 0): unlike a
	// plain atomic load it also orders the copies above before it on weakly
	// ordered CPUs (arm64), so no entry copied after the writer reached it
	// can slip past the check.
	h2, err := s.mem.Add64(s.spec.HeadOffset(list), 0)
	if err != nil {
		return PollResult{}, err
	}
	if low := s.lowest(list, h2); low > start {
		drop := min(low, end) - start
		dst = dst[drop*es:]
		start += drop
	}
	return PollResult{
		Data:  dst,
		Count: int(end - start),
		First: start,
		Next:  end,
		Lost:  start - min(cursor, start),
		Head:  h2,
	}, nil
}

// lowest is the oldest entry index of list still safe to read when head is
// published (Spec.Lowest with the list's low watermark).
func (s *Store) lowest(list uint32, head uint64) uint64 {
	low, _ := s.mem.Load64(s.spec.LowOffset(list))
	return s.spec.Lowest(head, low)
}

// Low returns list's low watermark: entries below it are not readable.
func (s *Store) Low(list uint32) (uint64, error) {
	if list >= s.spec.Lists {
		return 0, ErrList
	}
	return s.mem.Load64(s.spec.LowOffset(list))
}

func max64(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// Reset zeroes every list (heads and entries). A translator writing to the
// store must be told (Writer.Resume) or it keeps its heads.
func (s *Store) Reset() { s.mem.Zero() }
