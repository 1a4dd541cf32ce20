package reporter

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/dta-go/dta/partition"
	"github.com/dta-go/dta/rdma/requester"
	"github.com/dta-go/dta/wire/advert"
	"github.com/dta-go/dta/wire/dta"
)

// Errors of the direct (DART) mode, returned wrapped with the collector or
// field at fault.
var (
	// ErrRedundancy: a write asks for more copies than the store allows.
	ErrRedundancy = errors.New("reporter: redundancy out of the store's range")
	// ErrValueSize: a value's size differs from the store's value size.
	ErrValueSize = errors.New("reporter: value size differs from the store's")
	// ErrNoStore: a collector hosts no Key-Write store of the name asked
	// for (or no default one).
	ErrNoStore = errors.New("reporter: no such Key-Write store")
	// ErrStoresChanged: a collector came back from a reconnect with a
	// different Key-Write store; the Direct reporter refuses to write to
	// it rather than write with the old geometry.
	ErrStoresChanged = errors.New("reporter: the collector came back with a different store")
)

// DirectConfig configures a [Direct] reporter.
type DirectConfig struct {
	// Collectors are the collectors keys are spread over, each written
	// through its own RoCEv2 connection. Their names form the partition
	// map (package partition): give them exactly as the translators and
	// query clients of the deployment do, as partition.ParseMembers parses
	// "[NAME=]IP:PORT,..." lists (a name defaults to the address).
	Collectors []partition.Member
	// Store is the name of the Key-Write store written on every
	// collector; "" means each collector's default Key-Write store (or
	// StoreID's).
	Store string
	// StoreID selects the store by its id (the store id of extended
	// reports) when Store is empty; 0 means the default store.
	StoreID uint16
	// CompareSwap selects DART's §7 variant: a key's first copy is an RDMA
	// WRITE, every further copy a COMPARE_SWAP of the slot's first 8 bytes
	// against 0, so that it only takes an empty slot and never overwrites
	// another key. The store's slots must then be a multiple of 8 bytes
	// (value sizes 4, 12, 20, ...).
	CompareSwap bool
	// Requester configures the connections; its Collector is set per
	// member. A zero Requester means requester.DefaultConfig().
	Requester requester.Config
}

// DefaultDirectConfig returns a configuration that writes plain copies to
// the default Key-Write store with the requester's defaults; Collectors is
// left empty.
func DefaultDirectConfig() DirectConfig {
	return DirectConfig{Requester: requester.DefaultConfig()}
}

// Validate reports every field out of range, naming it. The requester
// configuration is validated per collector by DialDirect.
func (c DirectConfig) Validate() error {
	var errs []error
	if len(c.Collectors) == 0 {
		errs = append(errs, errors.New("reporter: DirectConfig.Collectors is empty"))
	} else {
		names := make([]string, len(c.Collectors))
		for i, m := range c.Collectors {
			names[i] = m.Name
			if !m.Addr.IsValid() {
				errs = append(errs, fmt.Errorf("reporter: DirectConfig.Collectors[%d] (%q): no address", i, m.Name))
			}
		}
		if _, err := partition.New(names); err != nil {
			errs = append(errs, fmt.Errorf("reporter: DirectConfig.Collectors: %w", err))
		}
	}
	if len(c.Store) > advert.MaxNameLen {
		errs = append(errs, fmt.Errorf("reporter: DirectConfig.Store %q: longer than %d bytes", c.Store, advert.MaxNameLen))
	}
	return errors.Join(errs...)
}

// DirectStats counts what a Direct reporter did. The counters are live:
// read them with Load at any time.
type DirectStats struct {
	Keys   atomic.Uint64 // keys written (KeyWrite calls that posted their copies)
	Writes atomic.Uint64 // RDMA WRITEs posted: first copies, plain copies, and slots rewritten after a swap
	Swaps  atomic.Uint64 // COMPARE_SWAPs posted (CompareSwap mode)
	// SwapsWon counts swaps that took an empty slot.
	SwapsWon atomic.Uint64
	// SwapsTaken counts swaps that met another key's slot: that copy was
	// not written, as DART's variant wants.
	SwapsTaken atomic.Uint64
	// SwapsRewritten counts swaps that met a slot with the key's own
	// checksum (an older value of the same key): the slot was rewritten,
	// so that a key written again does not keep stale copies.
	SwapsRewritten atomic.Uint64
	// SwapsFailed counts swaps without an answer: refused by the collector,
	// or the connection went down.
	SwapsFailed atomic.Uint64
	Errors      atomic.Uint64 // KeyWrite calls that failed
}

// Direct is a DART reporter: it writes Key-Write slots straight into the
// memory of the collector that owns each key, over RoCEv2, with no
// translator in between. The collector is the one the shared partition
// function names (partition.Map.Owner over the key's wire bytes); the slots
// and their bytes are those a translator would write (same hashing, same
// layout), so `dta query keywrite` and the query API find the keys. Its
// methods are safe for concurrent use; KeyWrite calls are serialised.
type Direct struct {
	cfg   DirectConfig
	log   *slog.Logger
	pm    *partition.Map
	cols  []*directCollector
	stats DirectStats

	mu          sync.Mutex // serialises writers; guards everything below
	closed      bool
	slot        []byte
	ops         []requester.Op
	tail        []requester.Op
	pending     pendingSwaps
	outstanding int // swaps posted and not yet resolved

	cmu   sync.Mutex   // guards done: filled by the requesters' receive goroutines
	done  []swapResult // completions not yet handled
	spare []swapResult
}

// directCollector is one collector's connection and store.
type directCollector struct {
	name   string
	req    *requester.Requester
	target uint16     // index of the store in the collector's advertisement
	layout slotLayout // fixed for the reporter's life (a change fails the collector)
	broken atomic.Bool
	keys   atomic.Uint64
}

// swapResult is a COMPARE_SWAP's completion, as handed over by a receive
// goroutine.
type swapResult struct {
	id   uint64
	orig uint64
	err  error
}

// DialDirect connects to every collector of cfg (CM handshake, store
// advertisement) and returns a Direct reporter writing to them. logger may
// be nil. It fails if a collector cannot be reached or has no suitable
// Key-Write store; Close the reporter when done.
func DialDirect(ctx context.Context, cfg DirectConfig, logger *slog.Logger) (*Direct, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Requester.MTU == 0 {
		cfg.Requester = requester.DefaultConfig()
	}
	pm, err := partition.FromMembers(cfg.Collectors)
	if err != nil {
		return nil, fmt.Errorf("reporter: %w", err)
	}
	d := &Direct{cfg: cfg, log: logger, pm: pm, done: make([]swapResult, 0, 1024), spare: make([]swapResult, 0, 1024)}
	var maxSlot uint64
	for i, m := range cfg.Collectors {
		c, err := d.dial(ctx, i, m)
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("reporter: collector %s: %w", m.Name, err)
		}
		d.cols = append(d.cols, c)
		maxSlot = max(maxSlot, c.layout.slotSize)
	}
	d.slot = make([]byte, maxSlot)
	d.ops = make([]requester.Op, 0, dta.MaxRedundancy)
	d.tail = make([]requester.Op, 1)
	return d, nil
}

// dial connects to member i and learns its store.
func (d *Direct) dial(ctx context.Context, i int, m partition.Member) (*directCollector, error) {
	rc := d.cfg.Requester
	rc.Collector = m.Addr
	req, err := requester.Dial(ctx, rc, d.log.With("collector", m.Name))
	if err != nil {
		return nil, err
	}
	stores, target, layout, err := d.store(req.Advertisement())
	if err != nil {
		req.Close()
		return nil, err
	}
	c := &directCollector{name: m.Name, req: req, target: target, layout: layout}
	req.SetTargets(targets(stores))
	req.OnAtomic(d.onAtomic)
	req.OnReconnect(func(adv []byte) { d.reconnected(c, adv) })
	d.log.Info("dart: connected to collector", "collector", m.Name, "addr", m.Addr.String(),
		"store", stores[target].Name, "slots", layout.slots, "value_size", layout.valueSize)
	return c, nil
}

// store decodes an advertisement and finds the Key-Write store to write.
func (d *Direct) store(adv []byte) ([]advert.Store, uint16, slotLayout, error) {
	stores, err := advert.Decode(adv)
	if err != nil {
		return nil, 0, slotLayout{}, err
	}
	i := advert.Find(stores, dta.KeyWrite, d.cfg.Store)
	if d.cfg.Store == "" && d.cfg.StoreID != 0 {
		i = -1
		for j := range stores {
			if stores[j].ID == d.cfg.StoreID && stores[j].Primitive == dta.KeyWrite {
				i = j
			}
		}
	}
	if i < 0 {
		switch {
		case d.cfg.Store != "":
			return nil, 0, slotLayout{}, fmt.Errorf("%w: %q", ErrNoStore, d.cfg.Store)
		case d.cfg.StoreID != 0:
			return nil, 0, slotLayout{}, fmt.Errorf("%w: id %d", ErrNoStore, d.cfg.StoreID)
		}
		return nil, 0, slotLayout{}, fmt.Errorf("%w: the collector has no default Key-Write store", ErrNoStore)
	}
	s := &stores[i]
	l, err := layoutOf(s)
	if err != nil {
		return nil, 0, slotLayout{}, err
	}
	if d.cfg.CompareSwap && (l.slotSize%8 != 0 || s.VA%8 != 0) {
		return nil, 0, slotLayout{}, fmt.Errorf("store %s: compare-and-swap needs 8-byte aligned slots, and its slots are %d bytes (value size %d; use 4, 12, 20, ...)",
			s.Name, l.slotSize, l.valueSize)
	}
	return stores, uint16(i), l, nil
}

func targets(stores []advert.Store) []requester.Target {
	t := make([]requester.Target, len(stores))
	for i, s := range stores {
		t[i] = requester.Target{VA: s.VA, RKey: s.RKey, Length: s.Length}
	}
	return t
}

// reconnected takes a collector's new advertisement: the same store
// geometry gets the new addresses and keys (a restarted collector), another
// one fails the collector.
func (d *Direct) reconnected(c *directCollector, adv []byte) {
	stores, target, l, err := d.store(adv)
	if err != nil || target != c.target || l != c.layout {
		c.broken.Store(true)
		c.req.SetTargets(nil)
		d.log.Error("dart: collector came back with a different store; not writing to it", "collector", c.name, "err", err)
		return
	}
	c.req.SetTargets(targets(stores))
	d.log.Info("dart: reconnected to collector", "collector", c.name)
}

// onAtomic receives every swap's completion on a requester's receive
// goroutine: it only queues it, for the next writer to handle.
func (d *Direct) onAtomic(x requester.Completion) {
	d.cmu.Lock()
	d.done = append(d.done, swapResult{id: x.ID, orig: x.Orig, err: x.Err})
	d.cmu.Unlock()
}

// Owner returns the name of the collector that owns key.
func (d *Direct) Owner(key dta.Key) string { return d.cols[d.pm.Owner(key.Bytes)].name }

// Stats returns the reporter's live counters.
func (d *Direct) Stats() *DirectStats { return &d.stats }

// CollectorKeys is a collector's name and the keys written to it.
type CollectorKeys struct {
	Name string
	Keys uint64
}

// Collectors returns, per collector in the order of
// DirectConfig.Collectors, its name and the keys written to it so far.
func (d *Direct) Collectors() []CollectorKeys {
	out := make([]CollectorKeys, len(d.cols))
	for i, c := range d.cols {
		out[i] = CollectorKeys{Name: c.name, Keys: c.keys.Load()}
	}
	return out
}

// KeyWrite writes value under key with n copies (1 to the store's
// redundancy) into the collector that owns key. Plain copies are RDMA
// WRITEs of the whole slot. With CompareSwap, copy 0 is a WRITE and every
// other copy a COMPARE_SWAP of the slot's first 8 bytes (checksum and the
// value's head) against 0; when the swap wins and the slot is longer than 8
// bytes, or when it meets the key's own checksum (an older value of the
// same key), the whole slot is written next. (Writing the whole slot
// rather than only its rest keeps a slot that another key's first copy
// overwrote meanwhile whole, never a mix of two keys.)
//
// Swap outcomes arrive asynchronously; the whole-slot write a swap calls
// for goes out with the next KeyWrite or Flush, so a program that stops
// writing calls Flush.
//
// It returns once the packets are sent, not acknowledged (see Flush),
// blocking while a connection's window is full. Errors: ErrRedundancy,
// ErrValueSize, ErrStoresChanged, the requester's (ErrNotConnected while a
// collector reconnects), each wrapped with the collector's name; ErrClosed
// after Close. It allocates nothing once warm.
func (d *Direct) KeyWrite(key dta.Key, value []byte, n int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	d.handleSwapsLocked()
	ci := d.pm.Owner(key.Bytes)
	c := d.cols[ci]
	l := &c.layout
	switch {
	case n < 1 || n > l.maxN:
		d.stats.Errors.Add(1)
		return fmt.Errorf("%w: %d copies, collector %s allows 1 to %d", ErrRedundancy, n, c.name, l.maxN)
	case len(value) != l.valueSize:
		d.stats.Errors.Add(1)
		return fmt.Errorf("%w: %d bytes, collector %s's store takes %d", ErrValueSize, len(value), c.name, l.valueSize)
	case c.broken.Load():
		d.stats.Errors.Add(1)
		return fmt.Errorf("collector %s: %w", c.name, ErrStoresChanged)
	}
	k := l.keyed(key)
	slot := d.slot[:l.slotSize]
	l.fill(slot, k, value)
	ops := d.ops[:0]
	first := d.pending.seqNext()
	swaps := 0
	for i := range n {
		off := l.offset(k, i)
		if i == 0 || !d.cfg.CompareSwap {
			ops = append(ops, requester.Op{Kind: requester.Write, Target: c.target, Offset: off, Data: slot})
			continue
		}
		id := d.pending.put(ci, off, slot)
		swaps++
		ops = append(ops, requester.Op{Kind: requester.CompareSwap, Target: c.target, Offset: off,
			Compare: 0, Swap: binary.LittleEndian.Uint64(slot), ID: id})
	}
	d.ops = ops
	d.outstanding += swaps
	if err := c.req.Post(ops); err != nil {
		// Which swaps went out is unknown: forget them all, so that late
		// completions are ignored, and count them failed.
		d.outstanding -= d.pending.dropSince(first)
		d.stats.SwapsFailed.Add(uint64(swaps))
		d.stats.Errors.Add(1)
		return fmt.Errorf("collector %s: %w", c.name, err)
	}
	d.stats.Keys.Add(1)
	d.stats.Writes.Add(uint64(n - swaps))
	d.stats.Swaps.Add(uint64(swaps))
	c.keys.Add(1)
	return nil
}

// handleSwapsLocked handles the swaps completed since the last call:
// counts them, and writes the whole slot of a swap that won a slot longer
// than 8 bytes or met the key's own checksum. Called with mu held.
func (d *Direct) handleSwapsLocked() {
	d.cmu.Lock()
	done := d.done
	d.done = d.spare[:0]
	d.cmu.Unlock()
	for i := range done {
		x := &done[i]
		p := d.pending.take(x.id)
		if p == nil {
			continue // forgotten after a failed Post, or not ours
		}
		d.outstanding--
		c := d.cols[p.col]
		sum := binary.LittleEndian.Uint32(p.slot)
		rewrite := false
		switch {
		case x.err != nil:
			d.stats.SwapsFailed.Add(1)
		case x.orig == 0:
			d.stats.SwapsWon.Add(1)
			rewrite = len(p.slot) > 8
		case uint32(x.orig) == sum:
			d.stats.SwapsRewritten.Add(1)
			rewrite = true
		default:
			d.stats.SwapsTaken.Add(1)
		}
		if rewrite {
			d.tail[0] = requester.Op{Kind: requester.Write, Target: c.target, Offset: p.off, Data: p.slot}
			if err := c.req.Post(d.tail); err != nil {
				d.stats.SwapsFailed.Add(1)
			} else {
				d.stats.Writes.Add(1)
			}
		}
		d.pending.release(x.id)
	}
	clear(done) // drop the errors' references
	d.cmu.Lock()
	d.spare = done[:0]
	d.cmu.Unlock()
}

// Flush waits until every copy posted is acknowledged by its collector,
// including the slots a won swap still had to write. It returns the first
// collector's error (ErrNotConnected if a connection went down meanwhile:
// its unacknowledged copies may be lost), or ctx's.
func (d *Direct) Flush(ctx context.Context) error {
	for {
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			return ErrClosed
		}
		d.handleSwapsLocked()
		out := d.outstanding
		d.mu.Unlock()
		for _, c := range d.cols {
			if err := c.req.Flush(ctx); err != nil {
				return fmt.Errorf("collector %s: %w", c.name, err)
			}
		}
		if out == 0 {
			// Everything acknowledged: the swaps' completions are all in,
			// so one more pass posts their last writes, if any.
			d.mu.Lock()
			d.handleSwapsLocked()
			out = d.outstanding
			d.mu.Unlock()
			if out == 0 {
				for _, c := range d.cols {
					if err := c.req.Flush(ctx); err != nil {
						return fmt.Errorf("collector %s: %w", c.name, err)
					}
				}
				return nil
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// Close closes every connection (DREQ). Copies not yet acknowledged are
// abandoned: Flush first to wait for them. It is idempotent.
func (d *Direct) Close() error {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	var errs []error
	for _, c := range d.cols {
		if err := c.req.Close(); err != nil {
			errs = append(errs, fmt.Errorf("reporter: collector %s: %w", c.name, err))
		}
	}
	return errors.Join(errs...)
}

// pendingSwaps holds the swaps posted and not yet resolved: their
// collector, offset and slot bytes, for the write that may follow. IDs
// carry a sequence number so that a completion of a forgotten swap, or of
// an entry since reused, is recognised. It is used under Direct.mu only and
// allocates nothing once its entries are warm.
type pendingSwaps struct {
	e    []pendingSwap
	free []uint32
	seq  uint32
}

type pendingSwap struct {
	seq  uint32 // 0: free
	col  int
	off  uint64
	slot []byte
}

// seqNext returns the sequence number the next put will use.
func (p *pendingSwaps) seqNext() uint32 { return p.seq + 1 }

// put records a swap and returns its ID.
func (p *pendingSwaps) put(col int, off uint64, slot []byte) uint64 {
	p.seq++
	if p.seq == 0 {
		p.seq = 1
	}
	var i uint32
	if n := len(p.free); n > 0 {
		i = p.free[n-1]
		p.free = p.free[:n-1]
	} else {
		p.e = append(p.e, pendingSwap{})
		i = uint32(len(p.e) - 1)
	}
	e := &p.e[i]
	e.seq, e.col, e.off = p.seq, col, off
	e.slot = append(e.slot[:0], slot...)
	return uint64(p.seq)<<32 | uint64(i)
}

// take returns the live entry of id, or nil.
func (p *pendingSwaps) take(id uint64) *pendingSwap {
	i := uint32(id)
	if int(i) >= len(p.e) || p.e[i].seq == 0 || p.e[i].seq != uint32(id>>32) {
		return nil
	}
	return &p.e[i]
}

// release frees the entry of id.
func (p *pendingSwaps) release(id uint64) {
	if e := p.take(id); e != nil {
		e.seq = 0
		p.free = append(p.free, uint32(id))
	}
}

// dropSince frees every live entry put with a sequence number from first
// on (the swaps of a failed Post) and returns how many.
func (p *pendingSwaps) dropSince(first uint32) int {
	n := 0
	for i := range p.e {
		if e := &p.e[i]; e.seq != 0 && e.seq-first < 1<<31 {
			e.seq = 0
			p.free = append(p.free, uint32(i))
			n++
		}
	}
	return n
}
