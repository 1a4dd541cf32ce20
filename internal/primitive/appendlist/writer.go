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
	HeaderWrites atomic.Uint64 // head publications (one per batch, or per group of whole batches written together)
	Written      atomic.Uint64 // entries written out in batches (including batches the sink refused)
	Discarded    atomic.Uint64 // pending entries dropped by Resume
}

// Pending returns the entries accepted but neither written out nor discarded
// yet: those waiting in partial batches for the batch to fill or the flush
// delay to pass. It is a snapshot of counters updated concurrently, and never
// negative.
func (s *WriterStats) Pending() uint64 {
	// Every entry is counted in Entries before it is counted in Written or
	// Discarded, so loading those first keeps the difference ≥ 0.
	done := s.Written.Load() + s.Discarded.Load()
	if e := s.Entries.Load(); e > done {
		return e - done
	}
	return 0
}

type listState struct {
	mu     sync.Mutex
	imm    bool
	marked bool   // the list's dirty bit is set
	n      int    // entries pending
	head   uint64 // entries written (and published) so far
	first  int64  // arrival of the oldest pending entry, ns
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
	group   int             // whole batches placed in one write before a head (Spec.Window / Batch)
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
		group:   int(spec.Window()) / spec.Batch,
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
	if l.n > 0 {
		w.stats.Discarded.Add(uint64(l.n))
	}
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
	}
	l.n++
	l.imm = l.imm || imm
	w.stats.Entries.Add(1)
	if l.n < w.spec.Batch && !l.imm {
		w.mark(list, l)
		return nil
	}
	var c emitted
	b.Reset()
	err := w.emitApply(list, l, b, sink, &c)
	b.Reset()
	w.count(&c)
	return err
}

// AddEntries appends the entries packed back to back in entries (a whole
// number of EntrySize-byte entries) to list under one acquisition of the
// list's lock. The list's memory ends as one Add per entry would leave it,
// but whole batches among the entries are placed together: up to
// Spec.Window entries in one write (two when it wraps the ring's end), then
// one head, instead of a write and a head per batch. Each group written
// along the way is applied to sink before AddEntries returns; b is reset
// whenever one is. It returns how many batches the sink refused (a refused
// group drops its batches, each counting as one refused report, as Add's
// error does) and the first such error. Immediate entries are written one
// by one, each with its head, as Add writes them.
func (w *Writer) AddEntries(list uint32, entries []byte, imm bool, now int64, b *memop.Batch, sink memop.Sink) (refused int, err error) {
	if list >= w.spec.Lists {
		return 0, ErrList
	}
	es := w.spec.EntrySize
	if len(entries)%es != 0 {
		return 0, ErrEntrySize
	}
	total := len(entries) / es
	if total == 0 {
		return 0, nil
	}
	l := &w.lists[list]
	l.mu.Lock()
	defer l.mu.Unlock()
	var c emitted
	if imm {
		refused, err = w.addEach(list, l, entries, now, b, sink, &c)
	} else {
		refused, err = w.addGrouped(list, l, entries, now, b, sink, &c)
	}
	if l.n > 0 {
		w.mark(list, l)
	} else {
		w.unmark(list, l)
	}
	w.stats.Entries.Add(uint64(total))
	w.count(&c)
	return refused, err
}

// addEach adds immediate entries one at a time, each written out with its
// head (a write with immediate). The caller holds l.mu.
func (w *Writer) addEach(list uint32, l *listState, entries []byte, now int64, b *memop.Batch, sink memop.Sink, c *emitted) (refused int, err error) {
	es := w.spec.EntrySize
	base := int(list) * w.spec.Batch * es
	for len(entries) > 0 {
		if l.n == 0 {
			l.first = now
		}
		copy(w.pending[base+l.n*es:], entries[:es])
		entries = entries[es:]
		l.n++
		l.imm = true
		b.Reset()
		if e := w.emitApply(list, l, b, sink, c); e != nil {
			refused++
			if err == nil {
				err = e
			}
		}
		b.Reset()
	}
	return refused, err
}

// addGrouped adds entries that are not immediate: it tops up the list's
// partial batch, places whole batches (the topped-up one from the pending
// buffer, the rest straight from entries) up to Window entries beyond the
// published head, publishes the head once per group, and keeps the rest as
// the new partial batch. The caller holds l.mu.
func (w *Writer) addGrouped(list uint32, l *listState, entries []byte, now int64, b *memop.Batch, sink memop.Sink, c *emitted) (refused int, err error) {
	es, bs := w.spec.EntrySize, w.spec.Batch
	base := int(list) * bs * es
	b.Reset()
	g := grouping{start: l.head}
	if l.n > 0 {
		k := min(bs-l.n, len(entries)/es)
		copy(w.pending[base+l.n*es:], entries[:k*es])
		entries = entries[k*es:]
		l.n += k
		if l.n < bs {
			return 0, nil
		}
		w.place(list, l, w.pending[base:base+bs*es:base+bs*es], b, c)
		l.n = 0
		g.placed++
	}
	for len(entries) >= bs*es {
		if g.placed == w.group {
			w.publish(list, l, &g, b, sink, c)
		}
		k := min(len(entries)/(bs*es), w.group-g.placed)
		w.place(list, l, entries[:k*bs*es:k*bs*es], b, c)
		entries = entries[k*bs*es:]
		g.placed += k
	}
	w.publish(list, l, &g, b, sink, c)
	if len(entries) > 0 {
		l.first = now
		copy(w.pending[base:], entries)
		l.n = len(entries) / es
	}
	return g.refused, g.err
}

// grouping follows the whole batches addGrouped placed beyond the published
// head, and what the sink refused.
type grouping struct {
	start   uint64 // the head published before the group
	placed  int    // whole batches placed, not yet published
	refused int    // batches the sink refused
	err     error  // the first refusal
}

// publish writes list's head after the batches g placed and applies the
// group to sink. A refused group is rolled back: the head returns to where
// it was published, so the next batch rewrites the same ring slots and the
// refused ones are never published. The caller holds l.mu.
func (w *Writer) publish(list uint32, l *listState, g *grouping, b *memop.Batch, sink memop.Sink, c *emitted) {
	if g.placed == 0 {
		return
	}
	w.head(list, l, b, c)
	if err := sink.Apply(b.Ops); err != nil {
		l.head = g.start
		g.refused += g.placed
		if g.err == nil {
			g.err = err
		}
	}
	b.Reset()
	g.start, g.placed = l.head, 0
}

// mark sets list's dirty bit, which Flush follows, if it is not set. The
// caller holds l.mu and leaves entries pending.
func (w *Writer) mark(list uint32, l *listState) {
	if !l.marked {
		w.dirty[list/64].Or(1 << (list % 64))
		l.marked = true
	}
}

// unmark clears list's dirty bit if it is set. The caller holds l.mu and
// leaves no entry pending.
func (w *Writer) unmark(list uint32, l *listState) {
	if l.marked {
		w.dirty[list/64].And(^(uint64(1) << (list % 64)))
		l.marked = false
	}
}

// emitted counts what emit and place calls wrote, to be added to the stats
// at once.
type emitted struct{ batches, partial, splits, entries, heads uint64 }

func (w *Writer) count(c *emitted) {
	if c.batches == 0 {
		return
	}
	w.stats.HeaderWrites.Add(c.heads)
	w.stats.Batches.Add(c.batches)
	w.stats.Written.Add(c.entries)
	if c.partial != 0 {
		w.stats.Partial.Add(c.partial)
	}
	if c.splits != 0 {
		w.stats.WrapSplits.Add(c.splits)
	}
}

// emitApply encodes list's pending entries and applies them. If the sink
// refuses them the head is rolled back, so the next batch rewrites the same
// ring slots and the refused batch's stale slots are never published as new.
// The entries are dropped (the caller counts the error).
func (w *Writer) emitApply(list uint32, l *listState, b *memop.Batch, sink memop.Sink, c *emitted) error {
	head := l.head
	w.emit(list, l, b, c)
	if err := sink.Apply(b.Ops); err != nil {
		l.head = head
		return err
	}
	return nil
}

// emit encodes list's pending entries: one write (two when the batch wraps
// the ring's end), then the head word. The caller holds l.mu, and applies
// the ops before releasing it: the writes point into the list's pending
// entries, which only a holder of l.mu changes.
func (w *Writer) emit(list uint32, l *listState, b *memop.Batch, c *emitted) {
	es := w.spec.EntrySize
	k := l.n
	base := int(list) * w.spec.Batch * es
	w.place(list, l, w.pending[base:base+k*es:base+k*es], b, c)
	if k < w.spec.Batch {
		c.partial++
	}
	w.head(list, l, b, c)
	l.n = 0
	w.unmark(list, l)
}

// place encodes the write of data (whole entries) at list's head: one write,
// two when it wraps the ring's end; the head advances past them, unpublished
// until head. Entries placed count as batches of Batch (a last shorter one
// as one batch).
func (w *Writer) place(list uint32, l *listState, data []byte, b *memop.Batch, c *emitted) {
	es := uint64(w.spec.EntrySize)
	k := uint64(len(data)) / es
	pos := l.head % w.spec.Capacity
	if first := w.spec.Capacity - pos; first < k {
		w.write(b, w.spec.EntryOffset(list, l.head), data[:first*es], false, 0)
		w.write(b, w.spec.EntryOffset(list, l.head+first), data[first*es:], false, 0)
		c.splits++
	} else {
		w.write(b, w.spec.EntryOffset(list, l.head), data, false, 0)
	}
	l.head += k
	bs := uint64(w.spec.Batch)
	c.batches += (k + bs - 1) / bs
	c.entries += k
}

// head encodes the write of list's head word (with immediate when the batch
// holds an immediate entry), publishing what place wrote.
func (w *Writer) head(list uint32, l *listState, b *memop.Batch, c *emitted) {
	hdr := b.Alloc(8)
	binary.LittleEndian.PutUint64(hdr, l.head)
	w.write(b, w.spec.HeadOffset(list), hdr, l.imm, list)
	l.imm = false
	c.heads++
}

// Holding reports whether any list has entries waiting in a partial batch
// (which a later Flush may have to write). It reads the pending-list bitmap
// atomically: an Add that happened before the call is seen.
func (w *Writer) Holding() bool {
	for i := range w.dirty {
		if w.dirty[i].Load() != 0 {
			return true
		}
	}
	return false
}

// Flush writes out every partial batch whose oldest entry arrived at or before
// now-maxDelay (every partial batch when maxDelay ≤ 0). It returns the number
// of batches written and the first sink error.
func (w *Writer) Flush(now, maxDelay int64, b *memop.Batch, sink memop.Sink) (int, error) {
	var n int
	var first error
	var c emitted
	defer w.count(&c)
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
				if err := w.emitApply(list, l, b, sink, &c); err != nil && first == nil {
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

// write appends a write (with immediate imm when withImm) to b, filling the op
// in place field by field: memop.Batch.Write appends an Op literal, built on
// the stack and copied, and the copy stalls on store forwarding (about three
// times the cost).
func (w *Writer) write(b *memop.Batch, off uint64, data []byte, withImm bool, imm uint32) {
	n := len(b.Ops)
	if n == cap(b.Ops) {
		b.Ops = append(b.Ops, memop.Op{})
	}
	b.Ops = b.Ops[:n+1]
	op := &b.Ops[n]
	kind := memop.Write
	if withImm {
		kind = memop.WriteImm
	}
	op.Kind, op.Store, op.Offset, op.Data, op.Delta, op.Imm = kind, w.store, off, data, 0, imm
}
