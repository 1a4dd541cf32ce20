package region

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Change tracking.
//
// A consumer that copies a region out from time to time (a checkpoint
// writer, an exporter of changed slots) asks for a [Tracker]: a bitmap with
// one bit per block of the region, set for every write that touches the block.
// Each consumer has its own tracker, so consumers never disturb each other.
//
// The components that apply memory operations to a region (the local sink,
// the software RDMA responder) call [Region.Written] after each write; the
// write methods themselves do not, because a call in them costs them their
// inlining, which measured 10-15 % on the Key-Write translation path
// (BenchmarkHandle/keywrite/cached) even with no tracker. Written is inlined
// and costs an atomic pointer load when the region has no tracker. Tests of
// each writer check that every kind of write it makes is recorded; Zero
// records itself.
//
// Ordering. A write stores its data first and then sets its block's bit (an
// atomic OR, skipped when the bit is already set); [Tracker.Take] clears bits
// with an atomic swap and the consumer reads the blocks afterwards. A write
// that sets a bit after the swap is seen by the next Take. A write that found
// the bit still set, just before the swap, relies on its data being visible
// by the time the consumer reads the block: a CPU may hold a store in its
// store buffer past a later load, so Take waits takeGrace after clearing
// before it returns, far longer than any store buffer needs to drain (a
// goroutine preempted in between has its stores drained by the switch).

// takeGrace is how long Take waits after clearing the bits it returns.
const takeGrace = time.Millisecond

// Tracker limits.
const (
	MinTrackBlock = 4 << 10 // bytes
	MaxTrackBlock = 1 << 30
)

// ErrTrackerStopped is returned by Take after Stop.
var ErrTrackerStopped = errors.New("region: tracker stopped")

// trackers is the set of a region's trackers, replaced whole on change.
type trackers struct {
	list []*Tracker
	size uint64 // the region's
}

// Tracker records which blocks of a region have been written since it last
// handed them out. It is safe for concurrent use with the region's writers;
// Take must not be called concurrently with itself.
type Tracker struct {
	r     *Region
	shift uint
	bits  []atomic.Uint64
	n     uint64 // blocks

	stopped atomic.Bool
}

// Track starts recording the writes to r in blocks of blockSize bytes (a
// power of two in [MinTrackBlock, MaxTrackBlock]). Writes made before Track
// returns are not recorded; every block starts clean.
func (r *Region) Track(blockSize uint64) (*Tracker, error) {
	if blockSize < MinTrackBlock || blockSize > MaxTrackBlock || blockSize&(blockSize-1) != 0 {
		return nil, fmt.Errorf("region: track block size %d: want a power of two in [%d, %d]", blockSize, MinTrackBlock, MaxTrackBlock)
	}
	n := (r.size + blockSize - 1) / blockSize
	t := &Tracker{r: r, shift: uint(bits.TrailingZeros64(blockSize)), n: n, bits: make([]atomic.Uint64, (n+63)/64)}
	r.trackMu.Lock()
	defer r.trackMu.Unlock()
	old := r.trackers.Load()
	next := &trackers{size: r.size}
	if old != nil {
		next.list = slices.Clone(old.list)
	}
	next.list = append(next.list, t)
	r.trackers.Store(next)
	return t, nil
}

// BlockSize returns the bytes per block.
func (t *Tracker) BlockSize() uint64 { return 1 << t.shift }

// Blocks returns the number of blocks; the last may be shorter than BlockSize.
func (t *Tracker) Blocks() uint64 { return t.n }

// Take appends to dst the indices of the blocks written since the previous
// Take (or since Track), in increasing order, clears them, and returns the
// extended slice. Block i covers [i×BlockSize, min((i+1)×BlockSize, size)).
// It waits about a millisecond before returning (see the ordering note
// above), so that the consumer reading those blocks afterwards sees every
// write that preceded the call.
func (t *Tracker) Take(dst []uint64) ([]uint64, error) {
	if t.stopped.Load() {
		return dst, ErrTrackerStopped
	}
	for w := range t.bits {
		if t.bits[w].Load() == 0 {
			continue
		}
		v := t.bits[w].Swap(0)
		for v != 0 {
			b := uint64(bits.TrailingZeros64(v))
			v &= v - 1
			dst = append(dst, uint64(w)*64+b)
		}
	}
	time.Sleep(takeGrace)
	return dst, nil
}

// MarkAll marks every block as written, so that the next Take returns them
// all (a consumer that failed to use what it took calls it to try again).
func (t *Tracker) MarkAll() {
	for w := range t.bits {
		t.bits[w].Store(^uint64(0))
	}
	if rem := t.n % 64; rem != 0 && len(t.bits) > 0 {
		t.bits[len(t.bits)-1].Store(1<<rem - 1)
	}
}

// Stop stops recording; Take then fails. It is idempotent.
func (t *Tracker) Stop() {
	r := t.r
	r.trackMu.Lock()
	defer r.trackMu.Unlock()
	old := r.trackers.Load()
	if old == nil {
		return
	}
	next := &trackers{size: r.size, list: slices.DeleteFunc(slices.Clone(old.list), func(x *Tracker) bool { return x == t })}
	if len(next.list) == 0 {
		next = nil
	}
	r.trackers.Store(next)
	// Writers that loaded the old set may still mark t's bits: they stay.
	t.stopped.Store(true)
}

// Written records, for the region's trackers, that [off, off+n) has been
// written. Writers call it after the write has landed (see the ordering note
// above); a range outside the region, or n = 0, records nothing.
func (r *Region) Written(off, n uint64) {
	if ts := r.trackers.Load(); ts != nil {
		ts.mark(off, n)
	}
}

// mark records a write of n bytes at off in every tracker, if the range lies
// within the region.
func (ts *trackers) mark(off, n uint64) {
	if n == 0 || off > ts.size || n > ts.size-off {
		return
	}
	for _, t := range ts.list {
		last := (off + n - 1) >> t.shift
		for b := off >> t.shift; b <= last; b++ {
			w, m := &t.bits[b/64], uint64(1)<<(b%64)
			if w.Load()&m == 0 {
				w.Or(m)
			}
		}
	}
}

// markAll records a write of the whole region in every tracker.
func (r *Region) markAll() {
	if ts := r.trackers.Load(); ts != nil {
		for _, t := range ts.list {
			t.MarkAll()
		}
	}
}

// trackState is embedded in Region.
type trackState struct {
	trackers atomic.Pointer[trackers]
	trackMu  sync.Mutex
}
