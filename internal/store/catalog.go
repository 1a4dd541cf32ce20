package store

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/appendlist"
	"github.com/dta-go/dta/internal/primitive/keyincrement"
	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/internal/primitive/sketchmerge"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/tea"
	"github.com/dta-go/dta/wire/dta"
)

// Store is one live store: its descriptor, region, and the query Store of its
// primitive (exactly one of KeyWrite, KeyIncrement, Postcard, Append is set).
type Store struct {
	Descriptor
	Index  uint16 // position in the catalogue; memops address stores by it
	Region *region.Region

	KeyWrite     *keywrite.Store
	KeyIncrement *keyincrement.Store
	Postcard     *postcard.Store
	Append       *appendlist.Store
	SketchMerge  *sketchmerge.Store

	// atomicWords: aligned 8-byte writes must be atomic stores (Append head
	// words, which readers poll).
	atomicWords bool
}

// Notification is the immediate of a write with immediate, delivered when the
// write has been applied.
type Notification struct {
	Store  string
	Offset uint64
	Imm    uint32
}

// SinkStats counts what the local sink applied and refused.
type SinkStats struct {
	Ops           atomic.Uint64 // ops applied
	Bytes         atomic.Uint64 // bytes written
	Rejected      atomic.Uint64 // ops refused (unknown store, out of bounds, misaligned)
	Notifications atomic.Uint64 // immediates delivered
	NotifyDropped atomic.Uint64 // immediates a slow subscriber missed
}

// Catalog holds the collector's stores. It is the local sink: Apply writes
// memory ops into the stores' regions.
type Catalog struct {
	stores []*Store
	byName map[string]*Store
	byID   map[uint16]*Store
	stats  SinkStats

	mu   sync.Mutex
	subs map[chan Notification]struct{}
}

// Open maps a region for every descriptor (with rc's huge-page and prefault
// settings) and binds each to its primitive's Store.
func Open(descs []Descriptor, rc region.Config, logger *slog.Logger) (*Catalog, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if len(descs) > 1<<16 {
		return nil, fmt.Errorf("%d stores: at most 65536", len(descs))
	}
	c := &Catalog{byName: map[string]*Store{}, byID: map[uint16]*Store{}, subs: map[chan Notification]struct{}{}}
	for i, d := range descs {
		s, err := open(d, uint16(i), rc, logger)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("store %s: %w", d.Name, err)
		}
		c.stores = append(c.stores, s)
		c.byName[d.Name] = s
		c.byID[d.ID] = s
	}
	return c, nil
}

func open(d Descriptor, index uint16, rc region.Config, logger *slog.Logger) (*Store, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	rc.Size = d.RegionSize()
	r, err := region.New(rc, logger.With("store", d.Name))
	if err != nil {
		return nil, fmt.Errorf("map region: %w", err)
	}
	s := &Store{Descriptor: d, Index: index, Region: r, atomicWords: d.Primitive == dta.Append}
	switch d.Primitive {
	case dta.KeyWrite:
		s.KeyWrite, err = keywrite.NewStore(d.KeyWrite, r)
	case dta.KeyIncrement:
		s.KeyIncrement, err = keyincrement.NewStore(d.KeyIncrement, r)
	case dta.Postcard:
		s.Postcard, err = postcard.NewStore(d.Postcard, r)
	case dta.Append:
		s.Append, err = appendlist.NewStore(d.Append, r)
	case dta.SketchMerge:
		s.SketchMerge, err = sketchmerge.NewStore(d.SketchMerge, r)
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	logger.Info("store ready", "store", d.Name, "id", d.ID, "primitive", d.Primitive.String(),
		"bytes", rc.Size, "backing", r.Backing())
	return s, nil
}

// Stores returns the stores in catalogue order (Index order).
func (c *Catalog) Stores() []*Store { return c.stores }

// Descriptors returns the stores' descriptors in Index order.
func (c *Catalog) Descriptors() []Descriptor {
	out := make([]Descriptor, len(c.stores))
	for i, s := range c.stores {
		out[i] = s.Descriptor
	}
	return out
}

// ByName returns the store called name, or nil.
func (c *Catalog) ByName(name string) *Store { return c.byName[name] }

// ByID returns the store with wire id id, or nil.
func (c *Catalog) ByID(id uint16) *Store { return c.byID[id] }

// Default returns the default store of primitive p, or nil.
func (c *Catalog) Default(p dta.Primitive) *Store {
	for _, s := range c.stores {
		if s.Primitive == p && s.Default {
			return s
		}
	}
	return nil
}

// Stats returns the local sink's counters.
func (c *Catalog) Stats() *SinkStats { return &c.stats }

// Sink errors.
var (
	ErrNoStore = errors.New("local sink: no store at that index")
	ErrOpKind  = errors.New("local sink: unknown op kind")
)

// Apply applies ops in order to the stores' regions. An 8-byte write at an
// 8-aligned offset into an Append store is a single atomic store (as an RDMA
// NIC places it), so readers polling a head word never see it torn; other
// writes are plain copies (a Key-Write query re-checks the value it voted
// for, a Postcarding query the whole chunk), which unlike atomic stores do not
// wait for their cache misses one at a time. Fetch-and-adds are atomic; when a
// call carries several, Apply first loads every counter they target, so that
// the cache misses overlap instead of each stalling a locked instruction, and
// then adds with a compare-and-swap from the value loaded (an atomic add if
// the counter changed meanwhile). It stops at the first op that cannot be
// applied (nothing of that op is written) and returns its error.
func (c *Catalog) Apply(ops []memop.Op) error {
	var bytes uint64
	for start := 0; start < len(ops); start += prefetchWindow {
		window := ops[start:min(start+prefetchWindow, len(ops))]
		var err error
		var n int
		if len(ops) > 2 {
			// Two ops or fewer (an Append batch and its head, one report's
			// copies) gain nothing: their stores or loads overlap anyway.
			c.prefetch(window)
		}
		if len(ops) > 1 && hasFetchAdd(window) {
			var olds [prefetchWindow]uint64
			c.loadCounters(window, &olds)
			n, err = c.apply(window, &olds, &bytes)
		} else {
			n, err = c.apply(window, nil, &bytes)
		}
		if err != nil {
			c.applied(uint64(start+n), bytes)
			c.stats.Rejected.Add(1)
			return err
		}
	}
	c.applied(uint64(len(ops)), bytes)
	return nil
}

// apply applies ops (at most prefetchWindow) in order, adding the bytes each
// touches to *bytes. olds, when not nil, holds the counters loaded for the
// fetch-and-adds. It returns how many ops it applied before an error.
func (c *Catalog) apply(ops []memop.Op, olds *[prefetchWindow]uint64, bytes *uint64) (int, error) {
	for i := range ops {
		op := &ops[i]
		if int(op.Store) >= len(c.stores) {
			return i, ErrNoStore
		}
		s := c.stores[op.Store]
		var err error
		switch op.Kind {
		case memop.Write, memop.WriteImm:
			switch {
			case len(op.Data) != 8:
				err = s.Region.Write(op.Offset, op.Data)
			case s.atomicWords && op.Offset%8 == 0:
				err = s.Region.Store64(op.Offset, leUint64(op.Data))
			default:
				err = s.Region.Write64(op.Offset, leUint64(op.Data))
			}
			if err == nil && op.Kind == memop.WriteImm {
				c.notify(Notification{Store: s.Name, Offset: op.Offset, Imm: op.Imm})
			}
		case memop.FetchAdd:
			if olds != nil {
				err = addFrom(s.Region, op, olds[i])
			} else {
				_, err = s.Region.Add64(op.Offset, op.Delta)
			}
		default:
			err = ErrOpKind
		}
		if err != nil {
			return i, fmt.Errorf("store %s offset %d: %w", s.Name, op.Offset, err)
		}
		s.Region.Written(op.Offset, op.Len())
		*bytes += op.Len()
	}
	return len(ops), nil
}

// prefetchWindow is how many ops Apply looks ahead to load counters.
const prefetchWindow = 64

// prefetch asks for the cache lines of every op of ops (at most
// prefetchWindow) before any is applied, so that their misses overlap.
func (c *Catalog) prefetch(ops []memop.Op) {
	var offs [prefetchWindow]uint64
	first := ops[0].Store
	for i := range ops {
		if ops[i].Store != first {
			return // a window over several stores: not worth sorting out
		}
		offs[i] = ops[i].Offset
	}
	if int(first) < len(c.stores) {
		c.stores[first].Region.Prefetch(offs[:len(ops)])
	}
}

func hasFetchAdd(ops []memop.Op) bool {
	for i := range ops {
		if ops[i].Kind == memop.FetchAdd {
			return true
		}
	}
	return false
}

// loadCounters loads the counter of every fetch-and-add of ops into olds (an
// invalid one loads nothing; applying it fails in order).
func (c *Catalog) loadCounters(ops []memop.Op, olds *[prefetchWindow]uint64) {
	for i := range ops {
		op := &ops[i]
		if op.Kind == memop.FetchAdd && int(op.Store) < len(c.stores) {
			olds[i], _ = c.stores[op.Store].Region.Load64(op.Offset)
		}
	}
}

// addFrom applies a fetch-and-add as a compare-and-swap from old, the value
// loaded before, falling back on an atomic add if the counter changed since.
func addFrom(r *region.Region, op *memop.Op, old uint64) error {
	swapped, _, err := r.CompareAndSwap64(op.Offset, old, old+op.Delta)
	if err != nil || swapped {
		return err
	}
	_, err = r.Add64(op.Offset, op.Delta)
	return err
}

// applied counts n ops of bytes bytes applied by one Apply call.
func (c *Catalog) applied(n, bytes uint64) {
	if n > 0 {
		c.stats.Ops.Add(n)
		c.stats.Bytes.Add(bytes)
	}
}

func leUint64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// Subscribe returns a channel of notifications (write-with-immediate) and a
// function that cancels the subscription. A subscriber that falls more than
// buf notifications behind misses the excess (counted in NotifyDropped).
func (c *Catalog) Subscribe(buf int) (<-chan Notification, func()) {
	ch := make(chan Notification, max(buf, 1))
	c.mu.Lock()
	c.subs[ch] = struct{}{}
	c.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			c.mu.Lock()
			delete(c.subs, ch)
			c.mu.Unlock()
		})
	}
}

// Notify delivers an immediate that arrived by other means (the RDMA
// responder) to subscribers.
func (c *Catalog) Notify(n Notification) { c.notify(n) }

func (c *Catalog) notify(n Notification) {
	c.stats.Notifications.Add(1)
	c.mu.Lock()
	for ch := range c.subs {
		select {
		case ch <- n:
		default:
			c.stats.NotifyDropped.Add(1)
		}
	}
	c.mu.Unlock()
}

// Close unmaps every region. No store may be used afterwards.
func (c *Catalog) Close() error {
	var errs []error
	for _, s := range c.stores {
		if err := s.Region.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// AppendHeads returns the lists of an Append store whose head is not 0, in
// list order, stopping after MaxAdvertHeads+1 (more than an advertisement
// carries). It returns nil for other stores.
func (s *Store) AppendHeads() []ListHead {
	if s.Append == nil {
		return nil
	}
	var out []ListHead
	for l := range s.Append.Spec().Lists {
		if h, _ := s.Append.Head(l); h != 0 {
			out = append(out, ListHead{List: l, Head: h})
			if len(out) > MaxAdvertHeads {
				break
			}
		}
	}
	return out
}

// Occupancy estimates the share of the store's units (slots, counters,
// chunks, TEA table cells) that are not all zero, from samples evenly spaced units. For Append
// stores it is the share of lists whose head is not zero. It reads memory
// without locks; the estimate is for monitoring only.
func (s *Store) Occupancy(samples int) float64 {
	var unit, n uint64
	switch s.Primitive {
	case dta.KeyWrite:
		unit, n = s.KeyWrite.Spec().SlotSize(), s.KeyWrite.Spec().Slots
	case dta.KeyIncrement:
		unit, n = keyincrement.CounterSize, s.KeyIncrement.Spec().Slots
	case dta.Postcard:
		unit, n = s.Postcard.Spec().ChunkSize(), s.Postcard.Spec().Chunks
	case dta.SketchMerge:
		// Counters of every copy (the header's tags are not counters).
		sp := s.SketchMerge.Spec()
		used, samples := 0, min(max(samples, 1), int(sp.Counters())*sp.Epochs)
		step := sp.Counters() * uint64(sp.Epochs) / uint64(samples)
		for i := range uint64(samples) {
			if v, _ := s.Region.Load64(sketchmerge.HeaderSize + i*step*sketchmerge.CounterSize); v != 0 {
				used++
			}
		}
		return float64(used) / float64(samples)
	case dta.TeaTable:
		// Cells whose flag says they hold an entry (originals only).
		sp := s.Descriptor.TeaTable
		used, samples := 0, int(min(uint64(max(samples, 1)), sp.Entries()))
		step := sp.Entries() / uint64(samples)
		for i := range uint64(samples) {
			j := i * step
			if b, err := s.Region.Slice(sp.CellOffset(j/uint64(sp.Cells), int(j%uint64(sp.Cells))), 1); err == nil && b[0]&tea.FlagValid != 0 {
				used++
			}
		}
		return float64(used) / float64(samples)
	case dta.Append:
		lists := s.Append.Spec().Lists
		var used int
		for l := range lists {
			if h, _ := s.Append.Head(l); h != 0 {
				used++
			}
		}
		return float64(used) / float64(lists)
	}
	if n == 0 || samples <= 0 {
		return 0
	}
	samples = int(min(uint64(samples), n))
	step := n / uint64(samples)
	used := 0
	for i := range uint64(samples) {
		b, err := s.Region.Slice(i*step*unit, unit)
		if err != nil {
			continue
		}
		for _, c := range b {
			if c != 0 {
				used++
				break
			}
		}
	}
	return float64(used) / float64(samples)
}
