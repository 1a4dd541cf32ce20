package tea

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Lookup errors.
var (
	// ErrBusy reports a lookup refused because every in-flight slot is taken
	// (the switch drops the packet).
	ErrBusy = errors.New("tea: too many lookups in flight")
	// ErrUnavailable reports a lookup no server holding its bucket answered:
	// all were down, timed out, failed or at their outstanding-read limit.
	ErrUnavailable = errors.New("tea: no server holding the bucket answered")
)

// A Reader reads one server's share of the table: the seam where an RDMA
// READ plugs in. Read posts a read of len(dst) bytes at byte offset off of
// the server's memory and returns at once (or after completing it). It must
// call done(id, err) exactly once per Read, from any goroutine, with dst
// filled when err is nil, and must not touch dst after that call. A read
// that is lost must still complete eventually, with an error (as an RDMA
// queue pair flushes its requests when it fails): the engine reuses dst only
// then. The engine never holds a lock while it calls Read.
type Reader interface {
	Read(off uint64, dst []byte, id uint64, done func(id uint64, err error))
}

// A Writer writes a server's memory: where the engine parks a packet in a
// scratchpad before the read (an RDMA WRITE on the same queue pair, so that
// the read that follows sees it). A Reader that is also a Writer gets the
// packets of LookupPacket.
type Writer interface {
	Write(off uint64, b []byte) error
}

// Source says what answered a lookup.
type Source uint8

// The sources of an answer.
const (
	FromNone   Source = iota // nothing answered: the lookup failed
	FromStash                // the SRAM stash
	FromCache                // the SRAM popularity cache
	FromMemory               // one read of a row in a server's memory
)

// String returns the source's name.
func (s Source) String() string {
	switch s {
	case FromStash:
		return "stash"
	case FromCache:
		return "cache"
	case FromMemory:
		return "memory"
	}
	return "none"
}

// Result is the answer to one lookup. The engine owns it: Key, Value and
// Packet are valid only until the Done callback returns.
type Result struct {
	Tag        uint64 // the caller's tag
	Key        []byte // the key looked up
	Found      bool   // the key is in the table
	Value      []byte // its value
	Packet     []byte // the packet parked in the scratchpad and read back with the row
	PacketLost bool   // a packet was parked, but another lookup of the same row overwrote it
	Source     Source // what answered
	Server     int    // the server that answered (FromMemory), else −1
	Bucket     uint64 // the bucket holding the key (its home or the next one) when found in memory; else its home
	Cell       int    // FromMemory and Found: the cell in Bucket
	Reads      int    // rows read to answer: 0 from SRAM, 1 from memory, never more
	Retries    int    // reads sent again to another holder after a timeout or an error
	Err        error  // ErrUnavailable, or nil
}

// Config configures an Engine.
type Config struct {
	Placement *Placement // the table's layout and its servers; required
	Readers   []Reader   // one per server of Placement, in its order; required
	Stash     *Stash     // the control plane's stash; nil: none
	Cache     *Cache     // the control plane's cache; nil: none
	// Done receives every result, once per accepted lookup, from the
	// goroutine that completes it: the caller of Lookup for SRAM answers and
	// synchronous readers, a Reader's goroutine, or Expire's. Required.
	Done func(*Result)

	InFlight       int           // lookups in flight at once; default 256
	MaxOutstanding int           // reads in flight per server (a NIC's limit, 16 in the paper); 0: no limit
	Timeout        time.Duration // a read unanswered this long goes to the next holder; default 1ms
	Holddown       time.Duration // a server that timed out or failed gets no reads for this long; default 100ms

	SketchRows    int    // count-min rows; default DefaultSketchRows
	SketchColumns uint64 // counters per row, a power of two; default DefaultSketchColumns
	HotThreshold  uint32 // lookups (per sketch epoch) that make a key a cache candidate; default 64; math.MaxUint32: never
	DigestQueue   int    // candidates waiting for the control plane; default 1024; beyond, dropped and counted

	Now func() time.Time // the clock; nil: time.Now
}

// DefaultConfig returns the defaults of the optional fields.
func DefaultConfig() Config {
	return Config{
		InFlight:      256,
		Timeout:       time.Millisecond,
		Holddown:      100 * time.Millisecond,
		SketchRows:    DefaultSketchRows,
		SketchColumns: DefaultSketchColumns,
		HotThreshold:  64,
		DigestQueue:   1024,
	}
}

// Validate reports the first thing wrong with c, naming the field.
func (c Config) Validate() error {
	switch {
	case c.Placement == nil:
		return errors.New("placement: required")
	case len(c.Readers) != len(c.Placement.servers):
		return fmt.Errorf("readers: %d for %d servers", len(c.Readers), len(c.Placement.servers))
	case c.Done == nil:
		return errors.New("done: required")
	case c.InFlight < 1 || c.InFlight > 1<<24:
		return fmt.Errorf("in_flight: %d out of range [1, 2^24]", c.InFlight)
	case c.MaxOutstanding < 0:
		return fmt.Errorf("max_outstanding: %d is negative", c.MaxOutstanding)
	case c.Timeout <= 0:
		return fmt.Errorf("timeout: %v, want > 0", c.Timeout)
	case c.Holddown < 0:
		return fmt.Errorf("holddown: %v is negative", c.Holddown)
	case c.DigestQueue < 0:
		return fmt.Errorf("digest_queue: %d is negative", c.DigestQueue)
	}
	for i, r := range c.Readers {
		if r == nil {
			return fmt.Errorf("readers[%d]: nil", i)
		}
	}
	return nil
}

// Digest reports a key the sketch found popular to the control plane (the
// switch's digest), which may then Promote it into the cache.
type Digest struct {
	key   [MaxKeySize]byte
	n     uint8
	Count uint32 // the sketch's estimate when it crossed HotThreshold
}

// Key returns the popular key.
func (d *Digest) Key() []byte { return d.key[:d.n] }

// Stats counts an engine's lookups; all fields are updated atomically.
type Stats struct {
	Lookups     atomic.Uint64 // lookups accepted
	Busy        atomic.Uint64 // lookups refused: no in-flight slot
	StashHits   atomic.Uint64 // answered by the stash
	CacheHits   atomic.Uint64 // answered by the cache
	MemoryReads atomic.Uint64 // answered by one read of a row (found or not)
	Found       atomic.Uint64 // answers that found the key, from anywhere
	Unavailable atomic.Uint64 // lookups no holder answered
	Retries     atomic.Uint64 // reads sent to another holder
	Late        atomic.Uint64 // reads completed after the engine had given up on them
	PacketsLost atomic.Uint64 // parked packets overwritten by another lookup of the row
	Digests     atomic.Uint64 // popular keys reported
	DigestDrops atomic.Uint64 // popular keys not reported: the queue was full
}

// ServerStats counts the reads of one server.
type ServerStats struct {
	Reads    atomic.Uint64 // reads posted
	Served   atomic.Uint64 // lookups it answered
	Timeouts atomic.Uint64 // reads it did not answer in time
	Errors   atomic.Uint64 // reads it failed
	Skipped  atomic.Uint64 // reads sent elsewhere: it was down or at MaxOutstanding
}

type server struct {
	reader      Reader
	writer      Writer
	outstanding int
	downUntil   int64 // unix nanos; math.MaxInt64: down until SetServerUp
	stats       ServerStats
}

type slot struct {
	res       Result
	key       []byte
	val       []byte   // a value from SRAM
	bufs      [][]byte // one read buffer per holder tried
	pkt       []byte   // the packet to park, pkt[:pktLen]
	pktLen    int      // 0: no packet
	parks     [][]byte // per holder tried: scratchpad header ‖ packet, as written
	home      uint64
	tried     uint8  // holders a read was posted to, one bit each
	posted    int    // reads posted for this lookup
	srv       int    // server of the read in flight
	parked    bool   // the read in flight covers a parked packet
	gen       uint32 // bumped at every read posted
	pending   int    // reads posted and not completed
	live      bool   // the read with gen is wanted
	deadline  int64
	delivered bool
}

// Engine is the lookup side of TEA (Algorithm 2), as the switch runs it:
// every lookup updates the popularity sketch, is answered from the stash or
// the cache when they hold the key, and otherwise by ONE read of the key's
// home row on the first server holding it that is up, with many lookups in
// flight. Lookup, Expire and the Reader's completions may run concurrently.
type Engine struct {
	cfg     Config
	spec    Spec
	p       *Placement
	pop     *popularity
	digests chan Digest
	now     func() time.Time
	done    func(uint64, error) // e.complete, bound once

	mu      sync.Mutex
	slots   []slot
	free    []int32
	servers []server

	expireMu sync.Mutex
	expired  []int32

	stats Stats
}

// New returns an engine for cfg; zero optional fields take DefaultConfig's
// values.
func New(cfg Config) (*Engine, error) {
	d := DefaultConfig()
	if cfg.InFlight == 0 {
		cfg.InFlight = d.InFlight
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = d.Timeout
	}
	if cfg.Holddown == 0 {
		cfg.Holddown = d.Holddown
	}
	if cfg.SketchRows == 0 {
		cfg.SketchRows = d.SketchRows
	}
	if cfg.SketchColumns == 0 {
		cfg.SketchColumns = d.SketchColumns
	}
	if cfg.HotThreshold == 0 {
		cfg.HotThreshold = d.HotThreshold
	}
	if cfg.DigestQueue == 0 {
		cfg.DigestQueue = d.DigestQueue
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pop, err := newPopularity(cfg.SketchRows, cfg.SketchColumns)
	if err != nil {
		return nil, err
	}
	e := &Engine{
		cfg:     cfg,
		spec:    cfg.Placement.spec,
		p:       cfg.Placement,
		pop:     pop,
		digests: make(chan Digest, cfg.DigestQueue),
		now:     cfg.Now,
		slots:   make([]slot, cfg.InFlight),
		free:    make([]int32, 0, cfg.InFlight),
		servers: make([]server, len(cfg.Readers)),
		expired: make([]int32, 0, cfg.InFlight),
	}
	if e.now == nil {
		e.now = time.Now
	}
	if cfg.Stash == nil {
		e.cfg.Stash = NewStash(0)
	}
	if cfg.Cache == nil {
		e.cfg.Cache = NewCache(1)
	}
	e.done = e.complete
	for i, r := range cfg.Readers {
		e.servers[i].reader = r
		if w, ok := r.(Writer); ok && e.spec.Scratchpad > 0 {
			e.servers[i].writer = w
		}
	}
	readLen := e.spec.ReadLen(e.spec.Scratchpad)
	for i := range e.slots {
		s := &e.slots[i]
		s.key = make([]byte, e.spec.KeySize)
		s.val = make([]byte, e.spec.ValueSize)
		s.bufs = make([][]byte, e.p.replicas)
		for k := range s.bufs {
			s.bufs[k] = make([]byte, readLen)
		}
		if e.spec.Scratchpad > 0 {
			s.pkt = make([]byte, e.spec.Scratchpad)
			s.parks = make([][]byte, e.p.replicas)
			for k := range s.parks {
				s.parks[k] = make([]byte, e.spec.ScratchpadSize())
			}
		}
		e.free = append(e.free, int32(len(e.slots)-1-i))
	}
	return e, nil
}

// Stats returns the engine's counters.
func (e *Engine) Stats() *Stats { return &e.stats }

// ServerStats returns server i's counters.
func (e *Engine) ServerStats(i int) *ServerStats { return &e.servers[i].stats }

// Digests returns the queue of popular keys for the control plane.
func (e *Engine) Digests() <-chan Digest { return e.digests }

// Estimate returns the sketch's count of lookups of key this epoch; it is
// the popularity Table.Promote compares.
func (e *Engine) Estimate(key []byte) uint64 { return uint64(e.pop.estimate(e.spec.Hash.Sum(key))) }

// ResetSketch starts a new popularity epoch: counters and the duplicate
// filter of reported keys are cleared.
func (e *Engine) ResetSketch() { e.pop.reset() }

// SetServerUp marks server i up or down (the paper's port-status events): a
// down server gets no reads until it is marked up again.
func (e *Engine) SetServerUp(i int, up bool) {
	e.mu.Lock()
	if up {
		e.servers[i].downUntil = 0
	} else {
		e.servers[i].downUntil = math.MaxInt64
	}
	e.mu.Unlock()
}

// Lookup looks key up; the result goes to Config.Done, tagged with tag. It
// returns an error, and calls nothing, when the lookup is not accepted:
// ErrKeySize, or ErrBusy when InFlight lookups are in flight. It does not
// allocate.
func (e *Engine) Lookup(key []byte, tag uint64) error { return e.LookupPacket(key, nil, tag) }

// LookupPacket is Lookup that also parks packet in the row's scratchpad with
// an RDMA-style write before the read, and returns it in Result.Packet, as
// TEA defers a packet's processing (§4.2.2); a packet larger than the
// scratchpad is refused with ErrPacketSize. Lookups answered from SRAM, and
// reads through a Reader that is not a Writer, return the packet as given.
func (e *Engine) LookupPacket(key, packet []byte, tag uint64) error {
	if len(key) != e.spec.KeySize {
		return ErrKeySize
	}
	if len(packet) > e.spec.Scratchpad {
		return ErrPacketSize
	}
	now := e.now().UnixNano() // before the stash is checked: see retry
	h := e.spec.Hash.Sum(key)
	est := e.pop.add(h)
	s, idx := e.acquire()
	if s == nil {
		e.stats.Busy.Add(1)
		return ErrBusy
	}
	e.stats.Lookups.Add(1)
	copy(s.key, key)
	s.home = e.spec.Home(h)
	s.res = Result{Tag: tag, Key: s.key, Server: -1, Bucket: s.home}
	s.pktLen = copy(s.pkt, packet)
	if e.fromSRAM(s, idx) {
		return nil
	}
	if est >= e.cfg.HotThreshold && e.pop.firstReport(h) {
		var d Digest
		d.n = uint8(copy(d.key[:], key))
		d.Count = est
		select {
		case e.digests <- d:
			e.stats.Digests.Add(1)
		default:
			e.stats.DigestDrops.Add(1)
		}
	}
	e.post(s, idx, now)
	return nil
}

// fromSRAM answers the lookup from the stash or the cache if either holds
// its key.
func (e *Engine) fromSRAM(s *slot, idx int32) bool {
	src := FromStash
	v, ok := e.cfg.Stash.Get(s.key, s.val[:0])
	if !ok {
		src = FromCache
		if v, ok = e.cfg.Cache.Get(s.key, s.val[:0]); !ok {
			return false
		}
	}
	if src == FromStash {
		e.stats.StashHits.Add(1)
	} else {
		e.stats.CacheHits.Add(1)
	}
	s.res.Found, s.res.Value, s.res.Source = true, v, src
	if s.pktLen > 0 {
		s.res.Packet = s.pkt[:s.pktLen]
	}
	e.stats.Found.Add(1)
	e.deliver(s, idx)
	return true
}

// retry sends a lookup whose read failed or timed out to its next holder,
// checking the stash and the cache again first: the deadline of every read
// is at most Timeout after its lookup last checked the stash, which is what
// the control plane's grace period relies on.
func (e *Engine) retry(s *slot, idx int32) {
	now := e.now().UnixNano()
	if e.fromSRAM(s, idx) {
		return
	}
	e.post(s, idx, now)
}

func (e *Engine) acquire() (*slot, int32) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.free) == 0 {
		return nil, 0
	}
	idx := e.free[len(e.free)-1]
	e.free = e.free[:len(e.free)-1]
	s := &e.slots[idx]
	s.tried, s.posted, s.pending, s.live, s.delivered = 0, 0, 0, false, false
	return s, idx
}

// post sends the slot's read to the first holder not tried yet that is up
// and below its outstanding limit. When every such holder is held down
// after a failure, it tries the first of them anyway rather than give up
// (a probe: there is nowhere else to go); servers marked down with
// SetServerUp are never tried. With no holder left it answers
// ErrUnavailable.
func (e *Engine) post(s *slot, idx int32, now int64) {
	e.mu.Lock()
	k, probe := -1, -1
	for h := range e.p.replicas {
		if s.tried&(1<<h) != 0 {
			continue
		}
		srv, _ := e.p.RowAddr(s.home, h)
		st := &e.servers[srv]
		if e.cfg.MaxOutstanding > 0 && st.outstanding >= e.cfg.MaxOutstanding || st.downUntil == math.MaxInt64 {
			st.stats.Skipped.Add(1)
			continue
		}
		if now < st.downUntil {
			st.stats.Skipped.Add(1)
			if probe < 0 {
				probe = h
			}
			continue
		}
		k = h
		break
	}
	if k < 0 {
		k = probe
	}
	if k < 0 {
		e.mu.Unlock()
		s.res.Err = ErrUnavailable
		e.stats.Unavailable.Add(1)
		e.deliver(s, idx)
		return
	}
	srv, off := e.p.RowAddr(s.home, k)
	st := &e.servers[srv]
	s.tried |= 1 << k
	if s.posted > 0 {
		s.res.Retries++
		e.stats.Retries.Add(1)
	}
	s.posted++
	s.gen++
	s.srv, s.live, s.deadline = srv, true, now+int64(e.cfg.Timeout)
	s.parked = s.pktLen > 0 && st.writer != nil
	s.pending++
	st.outstanding++
	id := uint64(s.gen)<<32 | uint64(k)<<24 | uint64(idx)
	e.mu.Unlock()
	st.stats.Reads.Add(1)
	n := e.spec.ReadLen(0)
	if s.parked {
		// The packet's tag is this read's id: a response carrying another
		// tag means another lookup reused the scratchpad.
		n = e.spec.ReadLen(s.pktLen)
		park := s.parks[k][:ScratchpadHeaderLen+s.pktLen]
		PutScratchpadHeader(park, id, s.pktLen)
		copy(park[ScratchpadHeaderLen:], s.pkt[:s.pktLen])
		if err := st.writer.Write(off+2*e.spec.BucketSize(), park); err != nil {
			e.complete(id, err)
			return
		}
	}
	st.reader.Read(off, s.bufs[k][:n], id, e.done)
}

// complete is the Readers' done callback.
func (e *Engine) complete(id uint64, err error) {
	idx, k, gen := int32(id&(1<<24-1)), int(id>>24&0xFF), uint32(id>>32)
	if int(idx) >= len(e.slots) || k >= e.p.replicas {
		return // not an id of ours
	}
	s := &e.slots[idx]
	e.mu.Lock()
	s.pending--
	if gen != s.gen || !s.live {
		e.stats.Late.Add(1)
		if s.delivered && s.pending == 0 {
			e.free = append(e.free, idx)
		}
		e.mu.Unlock()
		return
	}
	s.live = false
	srv := s.srv
	st := &e.servers[srv]
	st.outstanding--
	if err != nil {
		st.stats.Errors.Add(1)
		st.downUntil = e.now().UnixNano() + int64(e.cfg.Holddown)
		e.mu.Unlock()
		e.retry(s, idx)
		return
	}
	if now := e.now().UnixNano(); now > s.deadline {
		// Too late to be trusted (see retry): as good as a timeout.
		st.stats.Timeouts.Add(1)
		st.downUntil = now + int64(e.cfg.Holddown)
		e.stats.Late.Add(1)
		e.mu.Unlock()
		e.retry(s, idx)
		return
	}
	if st.downUntil != math.MaxInt64 {
		st.downUntil = 0 // it answered: up again
	}
	e.mu.Unlock()

	buf := s.bufs[k]
	j, v := e.spec.Match(buf[:2*e.spec.BucketSize()], s.key)
	s.res.Source, s.res.Server, s.res.Reads = FromMemory, srv, 1
	if j >= 0 {
		s.res.Found, s.res.Value = true, v
		s.res.Bucket, s.res.Cell = s.home, j
		if j >= e.spec.Cells {
			s.res.Bucket, s.res.Cell = e.spec.Next(s.home), j-e.spec.Cells
		}
		e.stats.Found.Add(1)
	}
	switch {
	case s.parked:
		tag, pkt, err := DecodeScratchpad(buf[2*e.spec.BucketSize():], e.spec.Scratchpad)
		if err == nil && tag == id && len(pkt) == s.pktLen {
			s.res.Packet = pkt
		} else {
			s.res.PacketLost = true
			e.stats.PacketsLost.Add(1)
		}
	case s.pktLen > 0:
		s.res.Packet = s.pkt[:s.pktLen] // no Writer: it waited in the slot
	}
	e.stats.MemoryReads.Add(1)
	st.stats.Served.Add(1)
	e.deliver(s, idx)
}

// deliver hands the result to Done and frees the slot once no read of it
// is pending.
func (e *Engine) deliver(s *slot, idx int32) {
	e.cfg.Done(&s.res)
	e.mu.Lock()
	s.delivered = true
	if s.pending == 0 {
		e.free = append(e.free, idx)
	}
	e.mu.Unlock()
}

// Expire gives up on reads unanswered past their deadline at now: their
// server is held down for Holddown and each lookup goes to its next holder
// (or fails with ErrUnavailable). It returns how many reads expired. Run
// calls it; tests call it with their own clock.
func (e *Engine) Expire(now time.Time) int {
	e.expireMu.Lock()
	defer e.expireMu.Unlock()
	t := now.UnixNano()
	e.mu.Lock()
	e.expired = e.expired[:0]
	for i := range e.slots {
		s := &e.slots[i]
		if !s.live || s.deadline > t {
			continue
		}
		s.live = false
		st := &e.servers[s.srv]
		st.outstanding--
		st.downUntil = t + int64(e.cfg.Holddown)
		st.stats.Timeouts.Add(1)
		e.expired = append(e.expired, int32(i))
	}
	e.mu.Unlock()
	for _, idx := range e.expired {
		e.retry(&e.slots[idx], idx)
	}
	return len(e.expired)
}

// Run calls Expire every Timeout/2 until ctx is done; it returns nil then.
func (e *Engine) Run(ctx context.Context) error {
	tick := time.NewTicker(max(e.cfg.Timeout/2, time.Microsecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			e.Expire(e.now())
		}
	}
}
