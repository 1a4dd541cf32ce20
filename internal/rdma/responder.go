package rdma

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dta-go/dta/internal/admit"
	"github.com/dta-go/dta/internal/ratelog"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/transport/xdp"
	"github.com/dta-go/dta/rdma/sock"
	"github.com/dta-go/dta/wire/roce"
)

// Immediate is the completion of an RDMA WRITE with immediate, delivered
// to the function set with [Responder.OnImmediate] after the bytes landed.
type Immediate struct {
	QPN    uint32 // the responder QP that received it
	MR     string // name of the MR written ("" for a zero-length write)
	Offset uint64 // offset of the write's first byte in the MR
	Length uint64 // bytes written
	Imm    uint32 // the immediate value
}

// QPInfo is a snapshot of one responder QP, for metrics and debugging.
type QPInfo struct {
	QPN         uint32         // local QP number
	RemoteQPN   uint32         // the requester's QP number
	Peer        netip.AddrPort // the requester's address
	Established bool           // RTU (or a first packet) received
	ExpectedPSN uint32         // next request PSN expected
	MSN         uint32         // messages completed, mod 2^24
	PMTU        int            // path MTU in bytes
}

// Responder is a software RoCEv2 responder: the collector side of DTA,
// doing what an RDMA NIC does for remote writes, reads and atomics on
// registered memory regions. Create it with [NewResponder], register
// regions, then call [Responder.Run].
//
// It receives on ResponderConfig.ReadLoops sockets bound to one address
// (an SO_REUSEPORT group, sock.ListenGroup), each read by its own
// goroutine, a read loop. The group sends every datagram to the socket a
// hash of its source address and port names, so the whole life of a
// requester's QP, from its REQ on, arrives at one loop: the QP belongs to
// the loop that received its REQ, and that loop executes its packets under
// its own lock, taken once per receive batch. Loops serving different QPs
// never wait for each other.
//
// Locks: each loop's mu guards its send batch, scratch state and the QPs it
// owns; Responder.mu guards the QP table (qps, byPeer) and is always taken
// last (a leaf). Whatever concerns QPs of several loops (the timer, Close,
// the allowlist, QPs, a REQ that must reclaim another loop's QP, a packet
// for a QP another loop owns) runs with every loop's lock held, taken in
// loop order; a loop defers such packets until after its batch, when it
// holds no lock.
type Responder struct {
	cfg     ResponderConfig
	logger  *slog.Logger
	local   netip.AddrPort // the address every loop's socket is bound to
	loops   []*loop
	capture *sock.Capture
	// maxPacket is the largest packet taken: a longer datagram is counted
	// truncated.
	maxPacket int
	stats     ResponderStats
	guid      uint64
	limiter   *ratelog.Limiter

	regMu   sync.Mutex // serialises MR registration
	mrs     atomic.Pointer[mrTable]
	adv     atomic.Pointer[[]byte]
	advFunc atomic.Pointer[func() []byte]
	onImm   atomic.Pointer[func(Immediate)]
	allow   atomic.Pointer[admit.Prefixes] // nil: every source

	// mu guards the QP table. A QP enters and leaves it with mu and its
	// owner loop's lock held, so either one suffices to read the maps;
	// taken after any loop lock, never before.
	mu     sync.Mutex
	qps    map[uint32]*qp
	byPeer map[netip.AddrPort]*qp
	// shut: Close has begun, packets are ignored. Written with every loop
	// lock held, read with any.
	shut bool

	// startPSN, if set, picks the responder's starting PSNs (tests of the
	// 24-bit wrap). Read with mu held.
	startPSN func() uint32

	running   atomic.Bool
	done      chan struct{}
	timer     *sock.Ticker  // handshake and advertisement deadlines; armed with a loop lock held
	xdp       *xdp.Listener // the AF_XDP readers of cfg.XDP, or nil
	closeOnce sync.Once
	closeErr  error
}

// loop is one read loop: a socket of the group, the goroutine reading it,
// and everything that goroutine needs to execute a batch without touching
// another loop's state.
type loop struct {
	r   *Responder
	id  int
	s   *sock.Conn
	xdp bool // fed by an AF_XDP reader (xdpIngest); s is the first UDP loop's

	// Owned by the loop's goroutine: used without a lock.
	rx   *sock.Receiver
	pf   prefetcher
	slow []deferred // packets to run with every loop lock held, after the batch
	// all: the goroutine holds every loop's lock (in runSlow, or always
	// with a single loop), so nothing needs deferring.
	all bool

	mu sync.Mutex // guards everything below and the QPs the loop owns; held per receive batch
	tx *sock.Sender
	// An AF_XDP loop's TX ring (ResponderConfig.XDP.TXFrames), or nil:
	// responses to a QP whose requests came over a known link leave
	// there (queueQP). link is the request being handled's link, set by
	// xdpIngest for the duration of its handle, nil otherwise.
	xtx  *xdp.Transmitter
	link *xdp.Link
	// ip is the IPv4 ID and DF bit of the request being handled when its
	// frame showed them (AF_XDP, set with link); a socket shows neither.
	ip    ipv4ID
	qps   map[uint32]*qp // the QPs this loop owns
	dirty []*qp          // QPs with an ACK to send at the end of the batch
	hot   hotStats
	icrc  roce.ICRCCache // the prefixes of the ICRCs this loop checks and seals
	pkt   roce.Packet
	env   roce.Envelope // the packet being handled's (handle); other fields stay zero
	// The QP and the MR the last request named (dispatch, lookup): most
	// packets of a batch name the same ones, and these save two map
	// lookups a packet. last is one of this loop's own QPs; a destroyed
	// QP is dead, and an MR belongs to mrTab, the table it was found in
	// (a change of MRs installs a new table).
	last  *qp
	mrTab *mrTable
	mrKey uint32
	mr    *mr
	cm    roce.CM
	cmOut roce.CM
	mad   []byte
	now   int64
	// rounds counts a UDP loop's reads, each answered at its end;
	// waited is set when a requester had all the READ and atomic
	// requests it may have out among those answered in the last two
	// (qp.owe).
	rounds uint64
	waited bool

	// received counts the packets this loop received (the sum over loops
	// is Stats().Packets); published with the hot counters.
	received atomic.Uint64
}

// deferred is a packet a loop received for a QP, or a CM exchange, that
// another loop's lock guards: run after the batch by runSlow. b points into
// the loop's receive buffers, valid until its next read.
type deferred struct {
	b    []byte
	from netip.AddrPort
	dst  netip.Addr
}

// Log keys of the responder's rate-limited warnings.
const (
	logAccess = iota
	logCM
	logRead
	logNotAllowed
	logKeys
)

// maxHeaders is the most header and trailer bytes of a request packet:
// BTH, RETH, ImmDt, pad and ICRC.
const maxHeaders = roce.BTHLen + roce.RETHLen + roce.ImmDtLen + 3 + roce.ICRCLen

// NewResponder binds the responder's sockets. logger may be nil.
func NewResponder(cfg ResponderConfig, logger *slog.Logger) (*Responder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ReadLoops > 1 && !reusePortSupported {
		logger.Warn("rdma responder: several read loops need SO_REUSEPORT (Linux); using one", "read_loops", cfg.ReadLoops)
		cfg.ReadLoops = 1
	}
	if cfg.XDP != nil {
		if m := xdpMTU(cfg.XDP.FrameSize); cfg.MTU > m {
			logger.Info("rdma responder: path MTU capped so that a request fits one AF_XDP frame", "max_mtu", m, "frame_size", cfg.XDP.FrameSize)
			cfg.MTU = m
		}
	}
	capt, err := sock.NewCapture(cfg.Capture, sock.MACResponder, sock.MACRequester)
	if err != nil {
		return nil, fmt.Errorf("rdma: capture: %w", err)
	}
	r := &Responder{
		cfg:       cfg,
		logger:    logger,
		maxPacket: cfg.MTU + maxHeaders,
		capture:   capt,
		guid:      randomU64(),
		limiter:   ratelog.New(logger, logKeys, 10*time.Second),
		qps:       make(map[uint32]*qp),
		byPeer:    make(map[netip.AddrPort]*qp),
		done:      make(chan struct{}),
		timer:     sock.NewTicker(cfg.Timeout / 4),
	}
	conns, err := sock.ListenGroup(cfg.Addr, cfg.ReadLoops, cfg.RecvBuffer, 0)
	if err != nil {
		return nil, err
	}
	r.local = conns[0].LocalAddr()
	for i, s := range conns {
		// Runs of packets a requester on this host sends as one GSO
		// super-datagram arrive whole; the loop splits them.
		s.EnableGRO()
		if s.LocalAddr().Addr().Unmap().IsLoopback() {
			// Bound to loopback, every peer is on this host: runs of ACKs go
			// as GSO super-datagrams. Never where a packet reaches a wire
			// (sock.Conn.EnableGSO).
			s.EnableGSO()
		}
		r.loops = append(r.loops, r.newLoop(i, s, sock.NewReceiver(s, cfg.BatchSize, cfg.MTU+maxHeaders+1)))
	}
	if cfg.XDP != nil {
		if err := r.listenXDP(); err != nil {
			r.closeSockets()
			return nil, err
		}
	}
	for _, l := range r.loops {
		l.all = len(r.loops) == 1
	}
	r.mrs.Store(&mrTable{byKey: map[uint32]*mr{}, byName: map[string]*mr{}, nextVA: newVABase()})
	if !cfg.AllowTranslators.Any() {
		r.allow.Store(cfg.AllowTranslators)
	}
	empty := []byte{}
	r.adv.Store(&empty)
	logger.Info("rdma responder listening", "addr", r.local.String(), "max_mtu", cfg.MTU, "max_qps", cfg.MaxQPs, "read_loops", len(r.loops))
	return r, nil
}

// newLoop returns read loop id, which sends through s and receives with
// rx (nil for an AF_XDP loop, which its reader feeds).
func (r *Responder) newLoop(id int, s *sock.Conn, rx *sock.Receiver) *loop {
	return &loop{
		r:   r,
		id:  id,
		s:   s,
		rx:  rx,
		tx:  sock.NewSender(s, r.cfg.BatchSize, max(320, r.cfg.MTU+maxHeaders)), // READ responses carry up to MTU bytes
		qps: make(map[uint32]*qp),
		mad: make([]byte, 0, roce.MADLen),
	}
}

// closeSockets closes every loop's socket and returns the first error.
func (r *Responder) closeSockets() error {
	var first error
	if r.xdp != nil {
		first = r.xdp.Close()
	}
	for _, l := range r.loops {
		if l.xdp {
			continue // sends through a UDP loop's socket
		}
		if err := l.s.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// lockLoops takes every loop's lock, in loop order.
func (r *Responder) lockLoops() {
	for _, l := range r.loops {
		l.mu.Lock()
	}
}

// unlockLoops releases what lockLoops took.
func (r *Responder) unlockLoops() {
	for i := len(r.loops) - 1; i >= 0; i-- {
		r.loops[i].mu.Unlock()
	}
}

// lockAll takes every loop's lock and then mu: all the responder's state.
func (r *Responder) lockAll() {
	r.lockLoops()
	r.mu.Lock()
}

// unlockAll releases what lockAll took.
func (r *Responder) unlockAll() {
	r.mu.Unlock()
	r.unlockLoops()
}

// allLocker is the Locker of the timer: every lock of the responder.
type allLocker struct{ r *Responder }

func (a allLocker) Lock()   { a.r.lockAll() }
func (a allLocker) Unlock() { a.r.unlockAll() }

// ReadLoops returns the number of read loops receiving: the UDP sockets'
// (the configured ReadLoops, or 1 where SO_REUSEPORT is not available),
// then one per AF_XDP receive queue (XDP).
func (r *Responder) ReadLoops() int { return len(r.loops) }

// XDP returns the AF_XDP listener of ResponderConfig.XDP (its counters),
// or nil.
func (r *Responder) XDP() *xdp.Listener { return r.xdp }

// ReadLoopPackets returns the packets each read loop has received so far,
// in loop order (their sum is Stats().Packets once each loop has
// published its batch): how the socket group spread the requesters.
func (r *Responder) ReadLoopPackets() []uint64 {
	out := make([]uint64, len(r.loops))
	for i, l := range r.loops {
		out[i] = l.received.Load()
	}
	return out
}

// LocalAddr returns the address the responder is bound to, with the port
// the kernel chose when the configured one was 0.
func (r *Responder) LocalAddr() netip.AddrPort { return r.local }

// Stats returns the responder's live counters.
func (r *Responder) Stats() *ResponderStats { return &r.stats }

// RegisterMR makes region reg reachable by remote requests carrying the
// returned RKey, at addresses VA..VA+Length-1, with the given rights. It
// may be called before or while Run runs.
func (r *Responder) RegisterMR(name string, reg *region.Region, access Access) (MR, error) {
	if reg == nil || reg.Size() == 0 {
		return MR{}, fmt.Errorf("rdma: register MR %q: empty region", name)
	}
	if access == 0 || access&^accessAll != 0 {
		return MR{}, fmt.Errorf("rdma: register MR %q: access %v", name, access)
	}
	r.regMu.Lock()
	defer r.regMu.Unlock()
	t, m, err := r.mrs.Load().register(name, reg, access)
	if err != nil {
		return MR{}, fmt.Errorf("rdma: register MR: %w", err)
	}
	r.mrs.Store(t)
	r.logger.Info("rdma MR registered", "name", name, "va", fmt.Sprintf("%#x", m.VA), "length", m.Length, "access", access.String())
	return m, nil
}

// DeregisterMR removes the MR called name: later requests naming its RKey
// get NAK remote access error. A multi-packet WRITE already under way
// completes.
func (r *Responder) DeregisterMR(name string) error {
	r.regMu.Lock()
	defer r.regMu.Unlock()
	t, err := r.mrs.Load().deregister(name)
	if err != nil {
		return fmt.Errorf("rdma: deregister MR: %w", err)
	}
	r.mrs.Store(t)
	return nil
}

// SetAdvertisement sets the bytes posted, as an RC SEND segmented by the
// path MTU, to every connection right after it is established. They are
// opaque to this package (the collector puts its store table there). The
// slice is copied; connections already established keep what they got.
func (r *Responder) SetAdvertisement(b []byte) {
	c := append([]byte{}, b...)
	r.adv.Store(&c)
	r.advFunc.Store(nil)
}

// SetAdvertisementFunc makes every new connection get the bytes fn returns
// at the moment it is established, instead of fixed bytes (the collector
// puts each Append list's current head there). fn runs on a receive
// goroutine (with several read loops, on several at once): it must be
// quick, safe for concurrent use, and must not call the Responder's
// methods.
// nil goes back to the bytes of SetAdvertisement.
func (r *Responder) SetAdvertisementFunc(fn func() []byte) {
	if fn == nil {
		r.advFunc.Store(nil)
		return
	}
	r.advFunc.Store(&fn)
}

// advertisement returns the bytes to post on a new connection.
func (r *Responder) advertisement() []byte {
	if fn := r.advFunc.Load(); fn != nil {
		return (*fn)()
	}
	return *r.adv.Load()
}

// OnImmediate sets the function called, on the receive goroutine, for
// every WRITE with immediate after its bytes landed. With several read
// loops it is called from several goroutines at once (the immediates of
// one QP always in order, from one goroutine at a time). It must not
// block and must not call the Responder's methods. nil removes it.
func (r *Responder) OnImmediate(fn func(Immediate)) {
	if fn == nil {
		r.onImm.Store(nil)
		return
	}
	r.onImm.Store(&fn)
}

// QPs returns a snapshot of the QP table.
func (r *Responder) QPs() []QPInfo {
	r.lockAll()
	defer r.unlockAll()
	out := make([]QPInfo, 0, len(r.qps))
	for _, q := range r.qps {
		out = append(out, QPInfo{
			QPN: q.qpn, RemoteQPN: q.remoteQPN, Peer: q.peer, Established: q.state == qpEstablished,
			ExpectedPSN: q.ePSN, MSN: q.msn, PMTU: q.pmtu,
		})
	}
	return out
}

// Run receives and answers packets until ctx is done or Close is called,
// then closes the responder. It returns nil on such a stop, or the error
// that stopped a socket. It may be called once. The first read loop runs
// on the calling goroutine, the others on goroutines of their own.
func (r *Responder) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("rdma: Responder.Run called twice")
	}
	stop := context.AfterFunc(ctx, func() { r.Close() })
	defer stop()
	var wg sync.WaitGroup
	wg.Go(r.timerLoop)
	errs := make([]error, len(r.loops)+1)
	if r.xdp != nil {
		wg.Go(func() {
			errs[len(r.loops)] = r.xdp.Run(context.Background()) // Close stops it
			r.Close()
		})
	}
	for _, l := range r.loops[1:] {
		if l.xdp {
			continue // its reader runs it
		}
		wg.Go(func() {
			defer r.pinReadLoop(l)()
			errs[l.id] = l.run()
			r.Close() // one loop's socket failed: stop them all
		})
	}
	defer r.pinReadLoop(r.loops[0])()
	errs[0] = r.loops[0].run()
	r.Close()
	wg.Wait()
	return errors.Join(errs...)
}

// kernelWaitBound bounds one wait of a KernelWait read loop in the kernel:
// a safety net, since closing the socket ends the wait at once (sock.Conn.Close).
const kernelWaitBound = 250 * time.Millisecond

// pinReadLoop locks the calling goroutine, which is about to run l, to its
// OS thread when the configuration asks for it (OnReadLoop, KernelWait),
// and returns what undoes that.
func (r *Responder) pinReadLoop(l *loop) func() {
	if r.cfg.OnReadLoop == nil && !r.cfg.KernelWait {
		return func() {}
	}
	runtime.LockOSThread()
	if r.cfg.KernelWait {
		l.rx.WaitInKernel(kernelWaitBound)
		l.rx.PollBeforeWait(r.cfg.PollBeforeWait)
		l.rx.KeepProcessor(r.cfg.KeepProcessor)
	}
	if r.cfg.OnReadLoop != nil {
		r.cfg.OnReadLoop()
	}
	return runtime.UnlockOSThread
}

// Close sends a DREQ to every established connection (best effort), so
// that requesters reconnect at once, and closes the sockets, which stops
// Run. It is idempotent.
func (r *Responder) Close() error {
	r.closeOnce.Do(func() {
		r.lockAll()
		r.shut = true // no new connections between the DREQs and the close
		l := r.loops[0]
		for _, q := range r.qps {
			if q.state == qpEstablished {
				l.sendDREQ(q)
			}
		}
		l.flush()
		r.unlockAll()
		close(r.done)
		r.closeErr = r.closeSockets()
	})
	return r.closeErr
}

// crash closes the sockets without a word to the peers, as a killed
// process would (tests).
func (r *Responder) crash() {
	r.closeOnce.Do(func() {
		close(r.done)
		r.closeErr = r.closeSockets()
	})
}

func (r *Responder) closing() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// run is the read loop: it reads a batch, executes it under the loop's
// lock, sends the responses, then runs what it deferred.
func (l *loop) run() error {
	r := l.r
	p := pacer{min: r.cfg.Pause, max: max(r.cfg.PauseMax, r.cfg.Pause), batch: r.cfg.BatchSize, pause: r.cfg.Pause}
	for {
		var n int
		var err error
		if p.streaming {
			d := p.next()
			if d > 0 {
				r.stats.Pauses.Add(1)
			}
			n, err = l.rx.ReadAfter(d)
			if err == nil && n == 0 {
				p.empty()
				continue
			}
		} else {
			n, err = l.rx.Read()
		}
		if err == nil {
			p.got(n)
		}
		if err != nil {
			if r.closing() {
				return nil
			}
			r.stats.ReadErrors.Add(1)
			if sock.TransientError(err) {
				if ok, sup := r.limiter.Allow(logRead, time.Now().UnixNano()); ok {
					r.logger.Warn("rdma responder: read failed", "err", err, "suppressed", sup, "loop", l.id)
				}
				continue
			}
			return fmt.Errorf("rdma responder: read loop %d: %w", l.id, err)
		}
		r.stats.Batches.Add(1)
		l.prefetch(n)
		l.mu.Lock()
		l.now = time.Now().UnixNano()
		for i := range n {
			b, from, dst, trunc := l.rx.Datagram(i)
			if trunc {
				l.hot.packets++
				r.stats.Truncated.Add(1)
				continue
			}
			if r.shut {
				continue
			}
			seg := l.rx.SegmentSize(i)
			if seg <= 0 || len(b) == 0 {
				seg = len(b)
			} else if seg < len(b) {
				// Several packets the kernel coalesced (UDP GRO): each one
				// is a packet as sent, checked and executed on its own.
				r.stats.Coalesced.Add(1)
			}
			for {
				k := min(seg, len(b))
				if k > r.maxPacket {
					l.hot.packets++
					r.stats.Truncated.Add(1)
				} else {
					l.handle(b[:k:k], from, dst)
				}
				if b = b[k:]; len(b) == 0 {
					break
				}
			}
		}
		l.flushACKs()
		l.flush()
		l.rounds++
		if l.waited {
			// A requester waits for these responses: its next
			// requests come a round trip after them, not a pause.
			l.waited = false
			p.hold()
		}
		l.mu.Unlock()
		if len(l.slow) > 0 {
			l.runSlow()
		}
	}
}

// pacer is a read loop's rule for ResponderConfig.Pause: whether it reads
// after pauses (streaming) or waits to be woken, and how long it pauses.
// The rule is the AF_XDP reader's (xdp.Config.Coalesce).
type pacer struct {
	min, max  time.Duration // Pause and PauseMax (min 0: never streaming)
	batch     int
	pause     time.Duration
	streaming bool // reading after pauses, not waiting to be woken
	full      bool // the last read filled a batch: read again at once
	since     int  // datagrams read since the last pause
	empties   int  // reads in a row after a pause that found nothing
}

// Bounds of the pacer's rule: fewer datagrams than pacerLight since the
// last pause set it back to Pause (a light load, for which a short wait
// matters more than a wake-up's cost); up to 2 batches double it, more than
// pacerTarget batches halve it; pacerEmpties empty reads in a row end the
// streaming.
const (
	pacerLight   = 8
	pacerTarget  = 4
	pacerEmpties = 4
)

// next returns how long to sleep before the next read.
func (p *pacer) next() time.Duration {
	if p.full {
		return 0
	}
	return p.pause
}

// got notes a read of n datagrams (n > 0).
func (p *pacer) got(n int) {
	if p.min == 0 {
		return
	}
	p.streaming, p.empties = true, 0
	p.since += n
	if p.full = n >= p.batch; p.full {
		return
	}
	switch {
	case p.since < pacerLight:
		p.pause = p.min
	case p.since > pacerTarget*p.batch:
		p.pause = max(p.pause/2, p.min)
	case p.since <= pacerTarget*p.batch/2:
		p.pause = min(2*p.pause, p.max)
	}
	p.since = 0
}

// hold ends the streaming after a read whose responses a requester waits
// for, all its READ and atomic requests outstanding (qp.owe): the next
// read waits to be woken by its next request, as without a pause.
func (p *pacer) hold() {
	p.streaming, p.full, p.since, p.empties, p.pause = false, false, 0, 0, p.min
}

// empty notes a read after a pause that found nothing.
func (p *pacer) empty() {
	p.since, p.pause, p.full = 0, p.min, false
	if p.empties++; p.empties >= pacerEmpties {
		p.streaming, p.empties = false, 0
	}
}

// defer notes a packet to run after the batch with every loop lock held.
func (l *loop) deferPacket(b []byte, from netip.AddrPort, dst netip.Addr) {
	l.slow = append(l.slow, deferred{b: b, from: from, dst: dst})
}

// runSlow runs the packets deferred during the batch, with every loop's
// lock held: packets of QPs other loops own (a forged source port, or a
// group whose spreading changed), and CM exchanges that touch another
// loop's QP. They were
// counted, ICRC-checked and captured when received.
func (l *loop) runSlow() {
	r := l.r
	r.lockLoops()
	l.all = true
	l.now = time.Now().UnixNano()
	for _, d := range l.slow {
		if r.shut {
			break
		}
		p := &l.pkt
		if p.Decode(d.b) != nil { // decoded once already: cannot fail
			continue
		}
		l.dispatch(p, d.b, d.from, d.dst)
	}
	l.flushACKs()
	l.flush()
	l.all = len(r.loops) == 1
	clear(l.slow) // the receive buffers are not kept
	l.slow = l.slow[:0]
	r.unlockLoops()
}

// prefetch asks for the cache lines the n datagrams just read will write
// (prefetcher). It runs on the read loop, which owns rx and pf.
func (l *loop) prefetch(n int) {
	t := l.r.mrs.Load()
	f := &l.pf
	for i := range n {
		b, _, _, trunc := l.rx.Datagram(i)
		if trunc {
			continue
		}
		seg := l.rx.SegmentSize(i)
		if seg <= 0 {
			seg = len(b)
		}
		for len(b) > 0 {
			k := min(seg, len(b))
			f.add(t, b[:k])
			b = b[k:]
		}
	}
	f.reset()
}

// timerLoop drops half-open QPs and retransmits advertisements, every
// quarter of the timeout while a QP has either pending; a new QP and an
// advertisement sent wake it. It holds every lock and sends with the first
// loop's socket.
func (r *Responder) timerLoop() {
	r.timer.Run(allLocker{r}, r.done, func() bool {
		l := r.loops[0]
		l.now = time.Now().UnixNano()
		l.expire()
		l.flush()
		return r.timing()
	})
}

// timing reports whether a QP waits for something with a deadline: its RTU,
// or the acknowledgement of advertisement packets. Called with every lock
// held.
func (r *Responder) timing() bool {
	for _, q := range r.qps {
		if q.state == qpHalfOpen || q.state == qpEstablished && q.advUna < len(q.adv) {
			return true
		}
	}
	return false
}

// hotStats are the counters every request updates, kept as plain integers
// under the loop's lock and added to the atomic Stats at each flush, before
// any response leaves: a locked add per packet would wait for the cache
// miss of the write just placed, where plain stores overlap theirs.
type hotStats struct {
	packets, bytes, writes, writeBytes, atomics, acks, atomicACKs uint64
}

// publish adds the hot counters to the stats. Called with l.mu held.
func (l *loop) publish() {
	h, st := &l.hot, &l.r.stats
	if h.packets != 0 {
		st.Packets.Add(h.packets)
		st.Bytes.Add(h.bytes)
		l.received.Add(h.packets)
	}
	if h.writes != 0 || h.writeBytes != 0 {
		st.Writes.Add(h.writes)
		st.WriteBytes.Add(h.writeBytes)
	}
	if h.atomics != 0 {
		st.Atomics.Add(h.atomics)
	}
	if h.acks != 0 {
		st.ACKs.Add(h.acks)
	}
	if h.atomicACKs != 0 {
		st.AtomicACKs.Add(h.atomicACKs)
	}
	*h = hotStats{}
}

// flush publishes the hot counters and sends the queued responses. Called
// with l.mu held.
func (l *loop) flush() {
	l.publish()
	l.flushXDP()
	before := l.tx.Errors()
	_ = l.tx.Flush()
	if d := l.tx.Errors() - before; d > 0 {
		l.r.stats.SendErrors.Add(d)
	}
}

// queue adds a packet built in b (a tx scratch buffer or bytes that live
// until the flush) to the send batch, from local to peer.
func (l *loop) queue(env *roce.Envelope, b []byte, to netip.AddrPort) {
	l.r.capture.Record(env, b, true)
	l.tx.Add(b, to, env.Src)
	if l.tx.Full() {
		l.flush()
	}
}

// queueQP adds a packet built in b to the send batch for q's peer: on the
// loop's AF_XDP TX ring over the link q's requests arrive on, when the
// loop has one and q has been seen on it, else as queue does. A full ring
// is flushed once; should it stay full, the packet goes through the socket.
func (l *loop) queueQP(q *qp, b []byte) {
	if l.xtx == nil || !q.linked {
		l.queue(&q.out, b, q.peer)
		return
	}
	l.r.capture.Record(&q.out, b, true)
	src := netip.AddrPortFrom(q.out.Src, q.out.SrcPort)
	if l.xtx.Add(&q.link, src, q.peer, b) {
		return
	}
	l.flushXDP()
	if l.xtx.Add(&q.link, src, q.peer, b) {
		return
	}
	l.tx.Add(b, q.peer, q.out.Src)
	if l.tx.Full() {
		l.flush()
	}
}

// flushXDP hands the frames queued on the loop's TX ring to the kernel.
func (l *loop) flushXDP() {
	if l.xtx != nil && l.xtx.Flush() != nil {
		l.r.stats.SendErrors.Add(1)
	}
}

// ipv4ID is an IPv4 header's identification and Don't Fragment bit, when
// known.
type ipv4ID struct {
	id    uint16
	df    bool
	known bool
}

// handle processes one datagram. Called with l.mu held.
func (l *loop) handle(b []byte, from netip.AddrPort, dst netip.Addr) {
	r := l.r
	st := &r.stats
	l.hot.packets++
	l.hot.bytes += uint64(len(b))
	if len(b) < roce.BTHLen+roce.ICRCLen {
		st.Malformed.Add(1)
		return
	}
	allowed := true
	if al := r.allow.Load(); al != nil && !al.Contains(from.Addr()) {
		// Only a REQ is answered (with a REJ), so only a packet to QP1 is
		// worth its ICRC check; the rest is dropped at once.
		allowed = false
		if binary.BigEndian.Uint32(b[4:])&roce.PSNMask != roce.GSIQP {
			st.NotAllowed.Add(1)
			if ok, sup := r.limiter.Allow(logNotAllowed, l.now); ok {
				r.logger.Warn("rdma responder: packet from a source outside allow_translators dropped", "peer", from.String(), "suppressed", sup)
			}
			return
		}
	}
	// Field by field into the loop's own Envelope: a composite literal is
	// built on the stack and copied with 16-byte moves that cannot forward
	// from its 8- and 2-byte stores (a store-forwarding stall per packet).
	env := &l.env
	env.Src, env.Dst, env.SrcPort, env.DstPort = from.Addr(), dst, from.Port(), r.local.Port()
	// The ICRC covers the IPv4 ID and DF bit. An AF_XDP frame shows them
	// and the check is exact; a socket shows neither, so a packet that does
	// not match ID 0 with DF (dta's senders) is checked against the ID and
	// DF bit its trailer implies (a NIC's, rxe's).
	env.ID, env.NoDF = 0, false
	var err error
	id, df := l.ip.id, l.ip.df
	if l.ip.known {
		err = l.icrc.VerifyID(env, b, id, df)
	} else {
		id, df, err = l.icrc.VerifyAnyID(env, b)
	}
	if err != nil {
		if err == roce.ErrICRC {
			st.BadICRC.Add(1)
		} else {
			st.Malformed.Add(1)
		}
		return
	}
	if id != 0 || !df {
		st.ForeignIPID.Add(1)
		env.ID, env.NoDF = id, !df // a capture shows the packet as it came
	}
	p := &l.pkt
	if err := p.Decode(b); err != nil {
		st.Malformed.Add(1)
		return
	}
	// Every QP here, QP1 included, is in the default partition (P_Key
	// 0xFFFF): a P_Key of another partition does not match (IBA: the low 15
	// bits must be equal) and, as a NIC does, the packet is dropped unseen.
	// So is a packet of another transport than the QP's: UD only to QP1
	// (the CM), RC to every other.
	transport := p.BTH.Opcode >> 5 // 0: RC, 3: UD
	if p.BTH.PKey&0x7FFF != roce.DefaultPKey&0x7FFF ||
		p.BTH.DestQP == roce.GSIQP && transport != roce.OpUDSendOnly>>5 || p.BTH.DestQP != roce.GSIQP && transport != 0 {
		st.Malformed.Add(1)
		return
	}
	if r.capture != nil {
		r.capture.Record(env, b, false)
	}
	if p.BTH.DestQP == roce.GSIQP && !allowed {
		l.refuseCM(p, from, dst)
		return
	}
	l.dispatch(p, b, from, dst)
}

// dispatch executes a checked packet p (decoded from b): a CM MAD, or a
// request or response of a QP. A QP another loop owns is run later, by
// runSlow, unless this goroutine holds every loop lock already.
func (l *loop) dispatch(p *roce.Packet, b []byte, from netip.AddrPort, dst netip.Addr) {
	r := l.r
	if p.BTH.DestQP == roce.GSIQP {
		l.handleCM(p, b, from, dst)
		return
	}
	if q := l.last; q != nil && q.qpn == p.BTH.DestQP && !q.dead && q.peer == from {
		q.lastActive = l.now
		l.handleRC(q, p)
		return
	}
	q := l.qps[p.BTH.DestQP]
	if q != nil {
		l.last = q
	}
	if q == nil && len(r.loops) > 1 {
		// Not one of this loop's QPs: another loop's, or none.
		r.mu.Lock()
		q = r.qps[p.BTH.DestQP]
		r.mu.Unlock()
		if q != nil && q.peer == from && !l.all {
			l.deferPacket(b, from, dst)
			return
		}
	}
	if q == nil || q.peer != from {
		r.stats.UnknownQP.Add(1)
		return
	}
	q.lastActive = l.now
	l.handleRC(q, p)
}

// reusePortSupported: several sockets can share the responder's address
// (sock.ListenGroup).
const reusePortSupported = runtime.GOOS == "linux"
