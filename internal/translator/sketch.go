package translator

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/sketchmerge"
	"github.com/dta-go/dta/wire/dta"
)

// sketchState is the translator's epoch state of one Sketch-Merge store.
// Workers read newest without a lock; opening an epoch (clears and tags,
// applied to the sink before any counter of the epoch) holds mu.
type sketchState struct {
	spec   *sketchmerge.Spec
	newest atomic.Int64 // the newest epoch opened; -1: none
	mu     sync.Mutex
	open   *sketchmerge.Opener
	batch  *memop.Batch
	opens  atomic.Uint64
}

func newSketchState(spec *sketchmerge.Spec) *sketchState {
	s := &sketchState{spec: spec, open: sketchmerge.NewOpener(spec), batch: memop.NewBatch(64, 0)}
	s.newest.Store(-1)
	return s
}

// SketchEpoch returns the newest epoch the translator has opened in the
// Sketch-Merge store at index i, and whether it has opened one.
func (t *Translator) SketchEpoch(i int) (uint32, bool) {
	if i < 0 || i >= len(t.sketches) || t.sketches[i] == nil {
		return 0, false
	}
	n := t.sketches[i].newest.Load()
	return uint32(n), n >= 0
}

// SketchOpens counts the epochs opened in the store at index i.
func (t *Translator) SketchOpens(i int) uint64 {
	if i < 0 || i >= len(t.sketches) || t.sketches[i] == nil {
		return 0
	}
	return t.sketches[i].opens.Load()
}

// ResumeSketch tells the translator that epoch e is open in the Sketch-Merge
// store at index i (read from a restored store's tags), so that it neither
// clears e's counters nor those of e+1 when their reports come.
func (t *Translator) ResumeSketch(i int, e uint32) {
	if i < 0 || i >= len(t.sketches) || t.sketches[i] == nil {
		return
	}
	s := t.sketches[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open.Resume(e)
	s.newest.Store(int64(e))
}

// sketch translates one Sketch-Merge report into FETCH_ADDs in w.pending,
// opening its epoch first if it is new.
func (w *Worker) sketch(idx uint16, r *dta.Report) error {
	st := w.t.sketches[idx]
	run := sketchmerge.Run{Epoch: r.Epoch, Row: int(r.Row), Column: uint64(r.Column), Counters: r.Value}
	if err := st.spec.Check(&run); err != nil {
		return err
	}
	if n := st.newest.Load(); n < 0 || int64(r.Epoch) > n {
		if err := w.openEpoch(st, idx, r.Epoch); err != nil {
			return err
		}
	} else if int64(r.Epoch) < n {
		return sketchmerge.ErrOldEpoch
	}
	st.spec.Add(w.pending, idx, &run)
	return nil
}

// openEpoch opens epoch e (unless another worker did meanwhile) and applies
// what that writes before returning, so that no counter of e can reach the
// sink before its copy is clear.
func (w *Worker) openEpoch(st *sketchState, idx uint16, e uint32) error {
	// The ops this worker holds (a batch's, with DeferToBatch) go first: a
	// counter of an older epoch must not land after the open clears its
	// copy for a newer one.
	w.flushPending()
	return w.t.openSketch(st, idx, e)
}

func (t *Translator) openSketch(st *sketchState, idx uint16, e uint32) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	open, err := st.open.Accept(e)
	if err != nil || !open {
		return err
	}
	st.batch.Reset()
	st.open.Open(st.batch, idx, e)
	if err := t.sink.Apply(st.batch.Ops); err != nil {
		return fmt.Errorf("%w: opening sketch epoch %d: %w", ErrSink, e, err)
	}
	st.newest.Store(int64(e))
	st.opens.Add(1)
	return nil
}

// RestartSketches opens again, on a collector that restarted, the newest
// epoch of every Sketch-Merge store the translator has opened one in: for
// each, read fills dst with the store's HeaderSize bytes of tags as the
// restarted collector holds them (an RDMA READ), and the translator writes
// what sketchmerge.Opener.Restarted says the store lacks. Without it, a
// collector that restarted empty would hold counters of the open epoch under
// no tag, and queries of that epoch would fail until the next one opens. It
// returns how many stores it wrote and the first error; a store whose tags
// cannot be read is left as it is.
func (t *Translator) RestartSketches(read func(store int, dst []byte) error) (int, error) {
	var hdr [sketchmerge.HeaderSize]byte
	n := 0
	var first error
	for i, st := range t.sketches {
		if st == nil || st.newest.Load() < 0 {
			continue
		}
		if err := read(i, hdr[:]); err != nil {
			first = cmpErr(first, fmt.Errorf("reading the tags of sketch store %d: %w", i, err))
			continue
		}
		st.mu.Lock()
		st.batch.Reset()
		if st.open.Restarted(st.batch, uint16(i), hdr[:]) {
			if err := t.sink.Apply(st.batch.Ops); err != nil {
				first = cmpErr(first, fmt.Errorf("%w: opening sketch store %d's epoch again: %w", ErrSink, i, err))
			} else {
				n++
				st.opens.Add(1)
			}
		}
		st.mu.Unlock()
	}
	return n, first
}

// cmpErr keeps the first error.
func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// CheckSketchRun reports whether the Sketch-Merge report r would be taken
// (its store exists and is a Sketch-Merge store, its row and columns lie
// within the store's geometry) without taking it, changing nothing: a front
// end over several collectors asks before it opens r's epoch everywhere, so
// that a report its translator will refuse opens nothing. The epoch is not
// checked: an older one is refused when the report is taken.
func (t *Translator) CheckSketchRun(r *dta.Report) error {
	idx, err := t.route(r, dta.SketchMerge)
	if err != nil {
		return err
	}
	run := sketchmerge.Run{Epoch: r.Epoch, Row: int(r.Row), Column: uint64(r.Column), Counters: r.Value}
	return t.sketches[idx].spec.Check(&run)
}

// OpenSketchEpoch opens epoch e in the Sketch-Merge store with id store (0:
// the default one) if it is newer than the newest opened, as a report of it
// would: a front end over several collectors calls it on every collector's
// translator when one of them sees a new epoch, so that every collector's
// copy of the epoch exists (and the previous one closes) even where no run
// of it lands.
func (t *Translator) OpenSketchEpoch(store uint16, e uint32) error {
	idx, err := t.route(&dta.Report{Store: store}, dta.SketchMerge)
	if err != nil {
		return err
	}
	st := t.sketches[idx]
	if n := st.newest.Load(); n >= 0 && int64(e) <= n {
		return nil
	}
	return t.openSketch(st, idx, e)
}
