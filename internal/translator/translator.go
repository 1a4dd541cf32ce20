package translator

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/appendlist"
	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/internal/ratelog"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/translator/rule"
	"github.com/dta-go/dta/wire/dta"
)

// Config is the translator's configuration.
type Config struct {
	// LegacyHeader decodes the prototype's 2-byte base header {opcode, flags}
	// instead of the 3-byte one. Off by default.
	LegacyHeader bool
	// PostcardCacheEntries is the size of the Postcarding cache (flows held at
	// once). Default 32768.
	PostcardCacheEntries int
	// PostcardMaxAge writes a cached path out, partial, once its first postcard
	// is this old. Default 500ms.
	PostcardMaxAge time.Duration
	// AppendFlushDelay writes a partial Append batch once its oldest entry is
	// this old. Default 5ms.
	AppendFlushDelay time.Duration
	// MaxReporters bounds the reporters whose sequence numbers are tracked for
	// retransmittable reports. Default 65536.
	MaxReporters int
	// Rules are the translator-side query extensions (package rule),
	// compiled by New against the stores. None by default.
	Rules []rule.Config
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		PostcardCacheEntries: postcard.DefaultCacheEntries,
		PostcardMaxAge:       500 * time.Millisecond,
		AppendFlushDelay:     5 * time.Millisecond,
		MaxReporters:         65536,
	}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.PostcardCacheEntries < 1 || c.PostcardCacheEntries > 1<<26:
		return fmt.Errorf("postcard_cache: %d entries out of range [1, 2^26]", c.PostcardCacheEntries)
	case c.PostcardMaxAge <= 0 || c.PostcardMaxAge > time.Hour:
		return fmt.Errorf("postcard_max_age: %v out of range (0, 1h]: a path held longer is as good as never written", c.PostcardMaxAge)
	case c.AppendFlushDelay <= 0 || c.AppendFlushDelay > time.Hour:
		return fmt.Errorf("append_flush_delay: %v out of range (0, 1h]: a batch held longer is as good as never written", c.AppendFlushDelay)
	case c.MaxReporters < 64 || c.MaxReporters > 1<<24:
		return fmt.Errorf("max_reporters: %d out of range [64, 2^24]", c.MaxReporters)
	}
	// What needs the stores (do the named ones exist, are they of the right
	// primitive) New checks.
	return rule.Check(c.Rules)
}

// Stats counts what the translator did. Each Worker keeps its own so that
// readers on different cores never share a counter's cache line;
// Translator.Stats sums them.
type Stats struct {
	Datagrams atomic.Uint64
	Reports   [dta.NumPrimitives]atomic.Uint64 // reports applied, by primitive
	Ops       atomic.Uint64                    // memory ops of Key-Write and Key-Increment reports handed to the sink by workers (rules' ops are not counted)
	Drops     [NumReasons]atomic.Uint64
	Acks      atomic.Uint64
	Nacks     atomic.Uint64
}

// Snapshot is a point-in-time copy of the summed Stats.
type Snapshot struct {
	Datagrams uint64
	Reports   [dta.NumPrimitives]uint64
	Ops       uint64
	Drops     [NumReasons]uint64
	Acks      uint64
	Nacks     uint64
}

// Dropped is the total of all drop reasons.
func (s *Snapshot) Dropped() uint64 {
	var n uint64
	for _, d := range s.Drops {
		n += d
	}
	return n
}

func (s *Snapshot) add(o *Stats) {
	s.Datagrams += o.Datagrams.Load()
	for i := range o.Reports {
		s.Reports[i] += o.Reports[i].Load()
	}
	s.Ops += o.Ops.Load()
	for i := range o.Drops {
		s.Drops[i] += o.Drops[i].Load()
	}
	s.Acks += o.Acks.Load()
	s.Nacks += o.Nacks.Load()
}

// Translator holds the store table, the stateful primitives' state and the
// sink. Create one Worker per reading goroutine.
type Translator struct {
	cfg      Config
	stores   []store.Descriptor
	byID     []int32 // wire store id → index, -1 if none
	defaults [dta.NumPrimitives]int32
	sink     memop.Sink
	cache    *postcard.Cache
	sketches []*sketchState       // by store index; nil entries for other primitives
	writers  []*appendlist.Writer // by store index; nil for other primitives
	seq      *seqTracker
	logger   *slog.Logger
	limiter  *ratelog.Limiter

	// rules are the compiled rules (nil: none); ruleSlots, by rule index,
	// hold what a Postcarding rule's action needs when it fires inside the
	// cache's observer (rules.go).
	rules     *rule.Set
	ruleSlots []ruleSlot
	// observers are the path observers after the rules (AddPathObserver).
	observers atomic.Pointer[[]func(postcard.Path)]

	// asleep is set by a Tick that found nothing held; the first worker to
	// hold something afterwards clears it and sends on wake.
	asleep atomic.Bool
	wake   chan struct{}

	mu      sync.Mutex
	workers []*Worker
	tick    *memop.Batch // used by Tick, under mu
	base    Stats        // drops found outside workers (Tick)
}

// New returns a translator over stores (their Index is their position in the
// slice) writing to sink.
func New(cfg Config, stores []store.Descriptor, sink memop.Sink, logger *slog.Logger) (*Translator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if sink == nil {
		return nil, errors.New("translator: nil sink")
	}
	if len(stores) > 1<<16 {
		return nil, fmt.Errorf("translator: %d stores, at most 65536", len(stores))
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	t := &Translator{
		cfg:     cfg,
		stores:  stores,
		byID:    make([]int32, 1<<16),
		sink:    sink,
		writers: make([]*appendlist.Writer, len(stores)),
		seq:     newSeqTracker(cfg.MaxReporters),
		logger:  logger,
		limiter: ratelog.New(logger, int(NumReasons), time.Second),
		tick:    memop.NewBatch(1024, 64<<10),
		wake:    make(chan struct{}, 1),
	}
	for i := range t.byID {
		t.byID[i] = -1
	}
	for i := range t.defaults {
		t.defaults[i] = -1
	}
	var err error
	if t.cache, err = postcard.NewCache(cfg.PostcardCacheEntries); err != nil {
		return nil, err
	}
	for i := range stores {
		d := &stores[i]
		if err := d.Validate(); err != nil {
			return nil, fmt.Errorf("translator: store %s: %w", d.Name, err)
		}
		if d.ID == 0 || t.byID[d.ID] >= 0 {
			return nil, fmt.Errorf("translator: store %s: id %d is zero or taken", d.Name, d.ID)
		}
		t.byID[d.ID] = int32(i)
		if d.Default {
			if t.defaults[d.Primitive] >= 0 {
				return nil, fmt.Errorf("translator: store %s: a second default %v store", d.Name, d.Primitive)
			}
			t.defaults[d.Primitive] = int32(i)
		}
		if d.Primitive == dta.Append {
			if t.writers[i], err = appendlist.NewWriter(d.Append, uint16(i)); err != nil {
				return nil, fmt.Errorf("translator: store %s: %w", d.Name, err)
			}
		}
		if d.Primitive == dta.SketchMerge {
			if t.sketches == nil {
				t.sketches = make([]*sketchState, len(stores))
			}
			t.sketches[i] = newSketchState(&d.SketchMerge)
		}
	}
	if err := t.compileRules(cfg.Rules); err != nil {
		return nil, fmt.Errorf("translator: %w", err)
	}
	t.cache.SetObserver(t.observePath)
	return t, nil
}

// Stores returns the store table.
func (t *Translator) Stores() []store.Descriptor { return t.stores }

// PostcardCache returns the Postcarding cache (for its statistics). Watch
// the paths it writes out with AddPathObserver, not with its SetObserver,
// which would take the place of the rules and of every other observer.
func (t *Translator) PostcardCache() *postcard.Cache { return t.cache }

// AppendWriter returns the Append writer of the store at index i, or nil.
func (t *Translator) AppendWriter(i int) *appendlist.Writer {
	if i < 0 || i >= len(t.writers) {
		return nil
	}
	return t.writers[i]
}

// ResumeAppend sets the head of list in the Append store at index i, for a
// translator starting against a store that already holds entries.
func (t *Translator) ResumeAppend(i int, list uint32, head uint64) {
	if w := t.AppendWriter(i); w != nil {
		w.Resume(list, head)
	}
}

// Stats sums the counters of every worker.
func (t *Translator) Stats() Snapshot {
	var s Snapshot
	t.mu.Lock()
	defer t.mu.Unlock()
	s.add(&t.base)
	for _, w := range t.workers {
		s.add(&w.stats)
	}
	return s
}

// Tick writes out what has waited long enough: Postcarding paths older than
// PostcardMaxAge and Append batches older than AppendFlushDelay. Call it
// periodically (every millisecond or so) from one goroutine; now is in ns.
//
// It reports idle when the translator holds nothing at all (no cached path,
// no partial batch): until a worker holds something again no Tick has work,
// and the caller may stop ticking until Wake delivers. A worker that holds
// something after an idle Tick sends on Wake once.
func (t *Translator) Tick(now int64) (idle bool) {
	t.flush(now, int64(t.cfg.PostcardMaxAge), int64(t.cfg.AppendFlushDelay))
	if t.holding() {
		return false
	}
	// Announce the sleep first, then look again: a worker holds (an atomic
	// bitmap update) before it reads asleep, so either this second look sees
	// what it holds, or the worker sees asleep and wakes the ticker.
	t.asleep.Store(true)
	if t.holding() {
		t.asleep.Store(false)
		return false
	}
	return true
}

// Wake returns the channel on which, after Tick reported idle, the first
// worker to hold something signals that ticking is needed again.
func (t *Translator) Wake() <-chan struct{} { return t.wake }

// holding reports whether the Postcarding cache or an Append writer holds
// anything.
func (t *Translator) holding() bool {
	if t.cache.Holding() {
		return true
	}
	for _, w := range t.writers {
		if w != nil && w.Holding() {
			return true
		}
	}
	return false
}

// woken is called by a worker after it handled reports that may have left
// something held: it wakes the ticker if an idle Tick put it to sleep.
func (t *Translator) woken() {
	if t.asleep.Load() && t.asleep.CompareAndSwap(true, false) {
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
}

// FlushAll writes out every cached path and partial batch (at shutdown).
func (t *Translator) FlushAll() { t.flush(0, 0, 0) }

func (t *Translator) flush(now, pcAge, alDelay int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, err := t.cache.Flush(now, pcAge, t.tick, t.sink); err != nil {
		t.base.Drops[ReasonSink].Add(1)
		t.limiter.Log(int(ReasonSink), time.Now().UnixNano(), slog.LevelWarn, "postcard flush failed", slog.String("err", err.Error()))
	}
	for _, w := range t.writers {
		if w == nil {
			continue
		}
		if _, err := w.Flush(now, alDelay, t.tick, t.sink); err != nil {
			t.base.Drops[ReasonSink].Add(1)
			t.limiter.Log(int(ReasonSink), time.Now().UnixNano(), slog.LevelWarn, "append flush failed", slog.String("err", err.Error()))
		}
	}
}

// route returns the store index a report goes to.
func (t *Translator) route(r *dta.Report, p dta.Primitive) (uint16, error) {
	var i int32
	if r.Store == 0 {
		i = t.defaults[p]
	} else {
		i = t.byID[r.Store]
	}
	if i < 0 {
		return 0, ErrUnknownStore
	}
	if t.stores[i].Primitive != p {
		return 0, ErrWrongPrimitive
	}
	return uint16(i), nil
}
