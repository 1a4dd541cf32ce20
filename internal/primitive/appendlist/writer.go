package appendlist

import (
	"encoding/binary"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/dta-go/dta/internal/memop"
)

// WriterStats counts what a Writer did. Fields are updated atomically.
type WriterStats struct {
	Entries      atomic.Uint64 // entries accepted
	Batches      atomic.Uint64 // batches written (full or partial)
	Partial      atomic.Uint64 // of which partial (flushed by delay or immediate)
	WrapSplits   atomic.Uint64 // batches split in two writes at the ring's end
	HeaderWrites atomic.Uint64 // head publications
}

type listState struct {
	mu    sync.Mutex
	imm   bool
	n     int    // entries pending
	head  uint64 // entries written (and published) so far
	first int64  // arrival of the oldest pending entry, ns
}

// Writer is the translator-side state of one Append store: each list's head
// and partial batch. It is safe for concurrent use; the entries of one list
// are serialised by that list's lock, held while their ops are applied, so
// heads are published in order.
type Writer struct {
	spec    Spec
	store   uint16
	lists   []listState
	pending []byte          // Lists × Batch × EntrySize
	dirty   []atomic.Uint64 // bit per list with pending entries
	stats   WriterStats
}

// NewWriter returns the writer for the store with spec at index store of the
// translator's store table. Heads start at 0; see Resume.
func NewWriter(spec Spec, store uint16) (*Writer, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return &Writer{
		spec:    spec,
		store:   store,
		lists:   make([]listState, spec.Lists),
		pending: make([]byte, int(spec.Lists)*spec.Batch*spec.EntrySize),
		dirty:   make([]atomic.Uint64, (spec.Lists+63)/64),
	}, nil
}

// Spec returns the store's geometry.
func (w *Writer) Spec() *Spec { return &w.spec }

// Stats returns the writer's counters.
func (w *Writer) Stats() *WriterStats { return &w.stats }

// Resume sets list's head, for a translator that (re)starts against a store
// that already holds entries (the head is read from the store's header).
func (w *Writer) Resume(list uint32, head uint64) {
	if list >= w.spec.Lists {
		return
	}
	l := &w.lists[list]
	l.mu.Lock()
	l.head, l.n = head, 0
	l.mu.Unlock()
}

// Add appends entry to list. When the batch is full, or imm asks for it, the
// batch is encoded into b (which Add resets) and applied to sink before Add
// returns. now is the arrival time in ns.
func (w *Writer) Add(list uint32, entry []byte, imm bool, now int64, b *memop.Batch, sink memop.Sink) error {
	if list >= w.spec.Lists {
		return ErrList
	}
	if len(entry) != w.spec.EntrySize {
		return ErrEntrySize
	}
	l := &w.lists[list]
	l.mu.Lock()
	defer l.mu.Unlock()
	es := w.spec.EntrySize
	base := int(list) * w.spec.Batch * es
	copy(w.pending[base+l.n*es:], entry)
	if l.n == 0 {
		l.first = now
		w.dirty[list/64].Or(1 << (list % 64))
	}
	l.n++
	l.imm = l.imm || imm
	w.stats.Entries.Add(1)
	if l.n < w.spec.Batch && !l.imm {
		return nil
	}
	b.Reset()
	err := w.emitApply(list, l, b, sink)
	b.Reset()
	return err
}

// emitApply encodes list's pending entries and applies them. If the sink
// refuses them the head is rolled back, so the next batch rewrites the same
// ring slots and the refused batch's stale slots are never published as new.
// The entries are dropped (the caller counts the error).
func (w *Writer) emitApply(list uint32, l *listState, b *memop.Batch, sink memop.Sink) error {
	head := l.head
	w.emit(list, l, b)
	if err := sink.Apply(b.Ops); err != nil {
		l.head = head
		return err
	}
	return nil
}

// emit encodes list's pending entries: one write (two when the batch wraps
// the ring's end), then the head word. The caller holds l.mu.
func (w *Writer) emit(list uint32, l *listState, b *memop.Batch) {
	es := uint64(w.spec.EntrySize)
	k := uint64(l.n)
	data := b.Alloc(int(k * es))
	base := uint64(list) * uint64(w.spec.Batch) * es
	copy(data, w.pending[base:base+k*es])
	pos := l.head % w.spec.Capacity
	if first := w.spec.Capacity - pos; first < k {
		b.Write(w.store, w.spec.EntryOffset(list, l.head), data[:first*es])
		b.Write(w.store, w.spec.EntryOffset(list, l.head+first), data[first*es:])
		w.stats.WrapSplits.Add(1)
	} else {
		b.Write(w.store, w.spec.EntryOffset(list, l.head), data)
	}
	l.head += k
	hdr := b.Alloc(8)
	binary.LittleEndian.PutUint64(hdr, l.head)
	if l.imm {
		b.WriteImm(w.store, w.spec.HeadOffset(list), hdr, list)
	} else {
		b.Write(w.store, w.spec.HeadOffset(list), hdr)
	}
	w.stats.HeaderWrites.Add(1)
	w.stats.Batches.Add(1)
	if int(k) < w.spec.Batch {
		w.stats.Partial.Add(1)
	}
	l.n, l.imm = 0, false
	w.dirty[list/64].And(^(uint64(1) << (list % 64)))
}

// Flush writes out every partial batch whose oldest entry arrived at or before
// now-maxDelay (every partial batch when maxDelay ≤ 0). It returns the number
// of batches written and the first sink error.
func (w *Writer) Flush(now, maxDelay int64, b *memop.Batch, sink memop.Sink) (int, error) {
	var n int
	var first error
	for wi := range w.dirty {
		bitsSet := w.dirty[wi].Load()
		for bitsSet != 0 {
			bit := bits.TrailingZeros64(bitsSet)
			bitsSet &^= 1 << bit
			list := uint32(wi*64 + bit)
			l := &w.lists[list]
			l.mu.Lock()
			if l.n > 0 && (maxDelay <= 0 || now-l.first >= maxDelay) {
				b.Reset()
				if err := w.emitApply(list, l, b, sink); err != nil && first == nil {
					first = err
				}
				b.Reset()
				n++
			}
			l.mu.Unlock()
		}
	}
	return n, first
}
