package translator

import (
	"sync"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/internal/translator/rule"
	"github.com/dta-go/dta/wire/dta"
)

// Rules run in two places (docs/ARCHITECTURE.md, "Rules"):
//
//   - A rule over a Key-Write, Key-Increment or Append store is evaluated by
//     the worker that translated the report, right after the report's own
//     translation. Its counter ops join the datagram's pending ops (applied
//     in the same sink call, after the report's); its Append entries go
//     through the target store's writer with the worker's own batch and sink,
//     after the entries of earlier reports the worker holds for that list.
//     Counts are kept per worker and published once per datagram.
//   - A rule over a Postcarding store is evaluated in the cache's observer,
//     which the cache calls under the path's entry lock, on the goroutine of
//     the worker (Add) or of the ticker (Flush) that writes the path out.
//     Its action takes the rule's own lock, which guards the batch it encodes
//     into, and applies its ops to the translator's sink before the path's
//     chunks are applied. Lock order: cache stripe → rule → Append list; no
//     path takes them the other way, and no cache lock is taken twice (an
//     action never touches the cache).

// ruleSlot is what a Postcarding rule's action encodes into, under mu: 64
// bytes, so that workers firing different rules do not share a line.
type ruleSlot struct {
	mu    sync.Mutex
	batch *memop.Batch
	entry []byte // an entry of the target store's size
	_     [24]byte
}

// compileRules compiles cfgs against the stores.
func (t *Translator) compileRules(cfgs []rule.Config) error {
	set, err := rule.Compile(cfgs, t.stores)
	if err != nil || set.Len() == 0 {
		return err
	}
	t.rules = set
	t.ruleSlots = make([]ruleSlot, set.Len())
	for _, r := range set.Rules() {
		if r.Primitive != dta.Postcard {
			continue
		}
		s := &t.ruleSlots[r.Index]
		s.batch = memop.NewBatch(8, 256)
		s.entry = make([]byte, r.Action.EntrySize)
	}
	return nil
}

// Rules returns the compiled rules in configuration order (none: nil), for
// their statistics.
func (t *Translator) Rules() []*rule.Rule { return t.rules.Rules() }

// AddPathObserver makes fn see every path the Postcarding cache writes out,
// after the rules have: fn runs under the path's entry lock on the
// translation workers' hot path (and the ticker's), before the path's
// chunks reach the sink, and must neither block nor allocate (copy what it
// keeps into a bounded queue and drop when it is full). p.Key and p.Values
// are valid only during the call. It may be called at any time; the
// observers are called in the order they were added.
func (t *Translator) AddPathObserver(fn func(postcard.Path)) {
	if fn == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var next []func(postcard.Path)
	if old := t.observers.Load(); old != nil {
		next = append(next, *old...)
	}
	next = append(next, fn)
	t.observers.Store(&next)
}

// observePath is the cache's observer: the Postcarding rules of the path's
// store, then every observer added.
func (t *Translator) observePath(p postcard.Path) {
	for _, r := range t.rules.For(p.Store) {
		st := r.Stats()
		st.Evaluations.Add(1)
		agg := r.PathAggregate(p.Values, p.Present)
		if !r.Holds(agg) {
			continue
		}
		st.Fires.Add(1)
		s := &t.ruleSlots[r.Index]
		s.mu.Lock()
		err := t.act(r, p.Key, agg, p.Now, s.batch, s.entry, t.sink)
		s.mu.Unlock()
		if err != nil {
			st.Errors.Add(1)
		}
	}
	if obs := t.observers.Load(); obs != nil {
		for _, fn := range *obs {
			fn(p)
		}
	}
}

// act runs r's action for key with aggregate agg, encoding into b (which it
// resets) and applying to sink; entry is scratch of at least the target
// store's entry size. An Append entry may wait in the list's partial batch,
// written by a later batch or flush as the entries of reports are.
func (t *Translator) act(r *rule.Rule, key []byte, agg uint64, now int64, b *memop.Batch, entry []byte, sink memop.Sink) error {
	a := &r.Action
	if a.Type == rule.AppendEntry {
		e := entry[:a.EntrySize]
		rule.PutEntry(e, key, agg)
		return t.writers[a.Store].Add(a.ListOf(key), e, false, now, b, sink)
	}
	b.Reset()
	t.stores[a.Store].KeyIncrement.Translate(b, a.Store, key, a.Delta(agg))
	err := sink.Apply(b.Ops)
	b.Reset()
	return err
}

// ruleCount is what a worker counted for one rule since it last published.
type ruleCount struct {
	evals, fires, errors uint64
	pending              uint64 // fires whose counter ops wait in the worker's pending ops
}

// evaluate runs the rules rs of the store a report was just translated
// for: v is the report's value (Key-Write, Append) or delta
// (Key-Increment).
func (w *Worker) evaluate(rs []*rule.Rule, r *dta.Report, v uint64, now int64) {
	key := rule.Key(r, &w.ruleKey)
	w.rulesDirty = true
	for _, ru := range rs {
		c := &w.rc[ru.Index]
		c.evals++
		agg := ru.ReportAggregate(v)
		if !ru.Holds(agg) {
			continue
		}
		c.fires++
		a := &ru.Action
		if a.Type == rule.Increment {
			// Into the datagram's pending ops, which are below maxPendingOps
			// here and have room for one more translation's N ops.
			s := &w.t.stores[a.Store].KeyIncrement
			s.Translate(w.pending, a.Store, key, a.Delta(agg))
			w.ruleOps += s.Redundancy
			c.pending++
			if len(w.pending.Ops) >= maxPendingOps {
				w.flushPending()
			}
			continue
		}
		w.mayHold = true
		if a.Type == rule.AppendEntry {
			// Entries of reports this worker holds for the list go first,
			// so that the list keeps the order of arrival.
			w.flushRunOf(a.Store, a.ListOf(key))
		}
		if err := w.t.act(ru, key, agg, now, w.batch, w.ruleEntry, w.sink); err != nil {
			c.errors++
		}
	}
}

// rulePendingDone settles the rule fires whose counter ops were in a
// pending flush: refused (the sink failed) or not.
func (w *Worker) rulePendingDone(refused bool) {
	for i := range w.rc {
		c := &w.rc[i]
		if refused {
			c.errors += c.pending
		}
		c.pending = 0
	}
	w.ruleOps = 0
}

// publishRules adds the rule counts since the last call to the rules' stats.
func (w *Worker) publishRules() {
	rs := w.t.rules.Rules()
	for i := range w.rc {
		c := &w.rc[i]
		if c.evals == 0 && c.errors == 0 {
			continue
		}
		st := rs[i].Stats()
		st.Evaluations.Add(c.evals)
		if c.fires != 0 {
			st.Fires.Add(c.fires)
		}
		if c.errors != 0 {
			st.Errors.Add(c.errors)
		}
		c.evals, c.fires, c.errors = 0, 0, 0
	}
	w.rulesDirty = false
}
