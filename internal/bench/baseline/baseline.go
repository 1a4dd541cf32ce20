// Package baseline is the CPU collector DTA is measured against: what a Go
// engineer would write without DTA, in the manner of the paper's baselines
// (a cuckoo-hash collector, Confluo's MultiLog). It reads datagrams with the
// same batched UDP transport as the translator, parses every report with the
// same decoder, and keeps the data in ordinary Go structures: hash tables
// keyed by flow (Key-Write values, Key-Increment counters, Postcarding paths),
// sharded with one lock per shard and pre-sized for the expected number of
// flows, and per-list in-memory logs (Append) of fixed capacity.
//
// It is a benchmark opponent, not a product: it answers no queries over the
// network and keeps only what a query would need. Keys of more than 15 bytes
// and values of more than 23 bytes are counted as unsupported and dropped.
package baseline

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/dta-go/dta/internal/transport/udp"
	"github.com/dta-go/dta/wire/dta"
)

// Limits of the tables' fixed-size keys and values.
const (
	MaxKeyLen   = 15
	MaxValueLen = 23
	shards      = 64
)

// Config configures a Collector.
type Config struct {
	UDP udp.Config
	// Keys is the number of distinct flows expected in each table: the
	// Key-Write values, Key-Increment counters and Postcarding paths. The
	// tables are pre-sized for them (0: a table grows as needed).
	Keys [dta.NumPrimitives]int
	// Lists, Capacity and EntrySize shape the Append logs: Lists logs of
	// Capacity entries of EntrySize bytes, overwritten round.
	Lists     int
	Capacity  int
	EntrySize int
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	for p, n := range c.Keys {
		if n < 0 || n > 1<<28 {
			return fmt.Errorf("baseline: %v keys %d out of range [0, 2^28]", dta.Primitive(p), n)
		}
	}
	switch {
	case c.Lists < 1 || c.Lists > 1<<20:
		return fmt.Errorf("baseline: lists %d out of range [1, 2^20]", c.Lists)
	case c.EntrySize < 1 || c.EntrySize > dta.MaxValueLen:
		return fmt.Errorf("baseline: entry size %d out of range [1, %d]", c.EntrySize, dta.MaxValueLen)
	case c.Capacity < 1 || uint64(c.Capacity)*uint64(c.EntrySize)*uint64(c.Lists) > 1<<34:
		return fmt.Errorf("baseline: %d logs of %d entries of %d bytes: out of range", c.Lists, c.Capacity, c.EntrySize)
	}
	return c.UDP.Validate()
}

// Stats counts what the collector did. Each reader keeps its own; Collector.Stats sums them.
type Stats struct {
	Datagrams   uint64
	Reports     [dta.NumPrimitives]uint64 // reports stored, by primitive
	Malformed   uint64                    // reports (or datagrams) that did not decode
	Unsupported uint64                    // keys, values or lists the tables cannot hold
}

// Dropped is Malformed + Unsupported.
func (s Stats) Dropped() uint64 { return s.Malformed + s.Unsupported }

type readerStats struct {
	datagrams, malformed, unsupported atomic.Uint64
	reports                           [dta.NumPrimitives]atomic.Uint64
}

// flowKey is a key of up to MaxKeyLen bytes and its length, as a comparable
// value.
type flowKey struct {
	lo, hi uint64 // the key bytes, little-endian; the length in hi's top byte
}

func makeKey(b []byte) (flowKey, bool) {
	if len(b) > MaxKeyLen {
		return flowKey{}, false
	}
	var buf [16]byte
	copy(buf[:], b)
	buf[15] = byte(len(b))
	return flowKey{binary.LittleEndian.Uint64(buf[:8]), binary.LittleEndian.Uint64(buf[8:])}, true
}

// shard picks a key's shard (a multiplicative hash of both words).
func (k flowKey) shard() int {
	h := (k.lo ^ k.hi*0x9E3779B97F4A7C15) * 0xBF58476D1CE4E5B9
	return int(h >> 58) // top 6 bits: 64 shards
}

type value struct {
	n uint8
	b [MaxValueLen]byte
}

type path struct {
	hops    [dta.MaxHops]uint32
	present uint8
	length  uint8
}

// shard is one lock and the three tables under it, padded so that two
// shards' locks never share a cache line.
type shard struct {
	mu       sync.Mutex
	values   map[flowKey]value
	counters map[flowKey]uint64
	paths    map[flowKey]path
	_        [64]byte
}

type appendLog struct {
	mu   sync.Mutex
	buf  []byte
	head uint64 // entries appended
	_    [40]byte
}

// Collector is a running baseline collector.
type Collector struct {
	cfg     Config
	l       *udp.Listener
	shards  [shards]shard
	logs    []appendLog
	mu      sync.Mutex
	readers []*readerStats
}

// New pre-sizes the tables, allocates the logs and binds the UDP sockets.
func New(cfg Config, logger *slog.Logger) (*Collector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Collector{cfg: cfg, logs: make([]appendLog, cfg.Lists)}
	per := func(p dta.Primitive) int {
		n := cfg.Keys[p] / shards
		if n > 0 {
			n += n / 8
		}
		return n
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.values = make(map[flowKey]value, per(dta.KeyWrite))
		s.counters = make(map[flowKey]uint64, per(dta.KeyIncrement))
		s.paths = make(map[flowKey]path, per(dta.Postcard))
	}
	for i := range c.logs {
		// Touch every page now, as the translator's regions are pre-faulted.
		c.logs[i].buf = make([]byte, cfg.Capacity*cfg.EntrySize)
		for j := 0; j < len(c.logs[i].buf); j += 4096 {
			c.logs[i].buf[j] = 0
		}
	}
	l, err := udp.Listen(cfg.UDP, func(int) udp.Handler {
		st := new(readerStats)
		c.mu.Lock()
		c.readers = append(c.readers, st)
		c.mu.Unlock()
		return &handler{c: c, stats: st}
	}, logger)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	c.l = l
	return c, nil
}

// LocalAddr is the address reports are received on.
func (c *Collector) LocalAddr() netip.AddrPort { return c.l.LocalAddr() }

// Listener returns the UDP listener (for its statistics and kernel drops).
func (c *Collector) Listener() *udp.Listener { return c.l }

// Run receives reports until ctx is done or Close is called.
func (c *Collector) Run(ctx context.Context) error {
	err := c.l.Run(ctx)
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// Close stops Run.
func (c *Collector) Close() error { return c.l.Close() }

// Stats sums the readers' counters.
func (c *Collector) Stats() Stats {
	var s Stats
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.readers {
		s.Datagrams += r.datagrams.Load()
		s.Malformed += r.malformed.Load()
		s.Unsupported += r.unsupported.Load()
		for p := range r.reports {
			s.Reports[p] += r.reports[p].Load()
		}
	}
	return s
}

// Value returns the last value written under key by Key-Write reports.
func (c *Collector) Value(key []byte) ([]byte, bool) {
	k, ok := makeKey(key)
	if !ok {
		return nil, false
	}
	s := &c.shards[k.shard()]
	s.mu.Lock()
	v, ok := s.values[k]
	s.mu.Unlock()
	return v.b[:v.n:v.n], ok
}

// Counter returns the sum of key's Key-Increment reports.
func (c *Collector) Counter(key []byte) uint64 {
	k, ok := makeKey(key)
	if !ok {
		return 0
	}
	s := &c.shards[k.shard()]
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counters[k]
}

// Path returns the hop values reported for flow key (0 for hops that did not
// report) up to the last hop that did.
func (c *Collector) Path(key []byte) []uint32 {
	k, ok := makeKey(key)
	if !ok {
		return nil
	}
	s := &c.shards[k.shard()]
	s.mu.Lock()
	p := s.paths[k]
	s.mu.Unlock()
	n := 8
	for n > 0 && p.present&(1<<(n-1)) == 0 {
		n--
	}
	return append([]uint32(nil), p.hops[:n]...)
}

// Log returns the number of entries appended to list and a copy of the
// newest min(that, Capacity) of them, oldest first.
func (c *Collector) Log(list uint32) (uint64, []byte) {
	if int(list) >= len(c.logs) {
		return 0, nil
	}
	l := &c.logs[list]
	l.mu.Lock()
	defer l.mu.Unlock()
	n := min(l.head, uint64(c.cfg.Capacity))
	out := make([]byte, 0, n*uint64(c.cfg.EntrySize))
	for i := l.head - n; i < l.head; i++ {
		at := int(i%uint64(c.cfg.Capacity)) * c.cfg.EntrySize
		out = append(out, l.buf[at:at+c.cfg.EntrySize]...)
	}
	return l.head, out
}

// handler parses the datagrams of one reader and stores their reports.
type handler struct {
	c       *Collector
	stats   *readerStats
	dec     dta.Decoder
	dg      dta.Datagram
	r       dta.Report
	reports [dta.NumPrimitives]uint64
	bad     uint64
	unsup   uint64
}

func (h *handler) HandlePacket(b []byte, _ netip.AddrPort, _ udp.Replier) {
	h.stats.datagrams.Add(1)
	if err := h.dec.Decode(b, &h.dg); err != nil {
		h.stats.malformed.Add(1)
		return
	}
	for {
		err := h.dg.Next(&h.r)
		if err == io.EOF {
			break
		}
		if err != nil {
			h.bad++
			if h.dg.Done() {
				break
			}
			continue
		}
		if h.store(&h.r) {
			h.reports[h.r.Primitive()]++
		} else {
			h.unsup++
		}
	}
	for p, n := range h.reports {
		if n != 0 {
			h.stats.reports[p].Add(n)
			h.reports[p] = 0
		}
	}
	if h.bad != 0 {
		h.stats.malformed.Add(h.bad)
		h.bad = 0
	}
	if h.unsup != 0 {
		h.stats.unsupported.Add(h.unsup)
		h.unsup = 0
	}
}

func (h *handler) EndBatch() {}

// store puts one report into its table or log.
func (h *handler) store(r *dta.Report) bool {
	c := h.c
	if r.Primitive() == dta.Append {
		if int(r.List) >= len(c.logs) || len(r.Value) != c.cfg.EntrySize {
			return false
		}
		l := &c.logs[r.List]
		l.mu.Lock()
		at := int(l.head%uint64(c.cfg.Capacity)) * c.cfg.EntrySize
		copy(l.buf[at:], r.Value)
		l.head++
		l.mu.Unlock()
		return true
	}
	k, ok := makeKey(r.Key)
	if !ok {
		return false
	}
	s := &c.shards[k.shard()]
	switch r.Primitive() {
	case dta.KeyWrite:
		if len(r.Value) > MaxValueLen {
			return false
		}
		v := value{n: uint8(len(r.Value))}
		copy(v.b[:], r.Value)
		s.mu.Lock()
		s.values[k] = v
		s.mu.Unlock()
	case dta.KeyIncrement:
		s.mu.Lock()
		s.counters[k] += r.Delta
		s.mu.Unlock()
	case dta.Postcard:
		if len(r.Value) > 4 {
			return false
		}
		var v uint32
		for _, b := range r.Value {
			v = v<<8 | uint32(b)
		}
		s.mu.Lock()
		p := s.paths[k]
		p.hops[r.Hop-1] = v
		p.present |= 1 << (r.Hop - 1)
		if r.PathLen != 0 {
			p.length = r.PathLen
		}
		s.paths[k] = p
		s.mu.Unlock()
	default:
		return false
	}
	return true
}
