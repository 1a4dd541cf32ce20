package requester

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dta-go/dta/rdma/sock"
	"github.com/dta-go/dta/wire/roce"
)

// Target is where a store lives in the collector's memory, as learned from
// its advertisement: ops for store index i go to targets[i].
type Target struct {
	VA     uint64 // virtual address of the store's first byte
	RKey   uint32 // remote key of its MR
	Length uint64 // bytes
}

type connState uint8

const (
	stateConnecting connState = iota // CM handshake or advertisement under way
	stateConnected
	stateDown // lost; the reconnect loop is at work
	stateClosed
)

// Requester is a software RoCEv2 requester on one RC QP to one collector:
// the translator side of DTA, and a DART reporter's link to a collector.
// Create it with [Dial]. Its methods are safe for concurrent use.
type Requester struct {
	cfg       Config
	logger    *slog.Logger
	s         *sock.Conn
	rx        *sock.Receiver
	maxPacket int // the longest packet taken: longer ones are stray
	capture   *sock.Capture
	stats     Stats
	limiter   throttle
	collector netip.AddrPort
	out       roce.Envelope // what we send: local -> collector
	in        roce.Envelope // what we receive: collector -> local
	pmtu      int
	guid      uint64

	applyMu sync.Mutex   // serialises Post calls
	bucket  *tokenBucket // guarded by applyMu

	targets     atomic.Pointer[[]Target]
	onReconnect atomic.Pointer[func([]byte)]
	onAtomic    atomic.Pointer[func(Completion)]
	onRead      atomic.Pointer[func(ReadCompletion)]

	mu    sync.Mutex // guards everything below
	cond  sync.Cond  // on mu: window room, state changes
	tx    *sock.Sender
	state connState
	epoch uint64 // connections lost so far
	now   int64
	icrc  roce.ICRCCache // the connection's ICRC prefixes, both directions

	// send queue
	qpn, remoteQPN uint32
	sendPSN        uint32
	maxAtomic      int
	atomicsOut     int
	sinceAckReq    int
	win            window
	lastProgress   int64
	retries        int
	goBackPSN      uint32
	goBackAt       int64
	rnrAt          int64
	rnrPSN         uint32

	// CM, active side
	tid          uint64
	localCommID  uint32
	remoteCommID uint32
	cmEvents     chan cmEvent
	drep         chan struct{}
	pkt          roce.Packet
	cm           roce.CM
	cmOut        roce.CM
	mad          []byte

	// receive queue: the advertisement SEND
	rqPSN     uint32
	rqMSN     uint32
	rqNAKSent bool
	rqInMsg   bool
	advBuf    []byte
	advErr    error
	advDone   bool
	advCh     chan struct{}
	adv       []byte // the advertisement of the current connection

	reconnect chan struct{}
	life      context.Context // cancelled by Close
	stop      context.CancelFunc
	done      chan struct{}
	timer     *sock.Ticker // ACK timeouts; armed (under mu) by every packet posted
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Log keys of the requester's rate-limited warnings.
const (
	logNAK = iota
	logRecv
	logReqKeys
)

// maxHeaders is the most header and trailer bytes of a request packet:
// BTH, RETH, ImmDt, pad and ICRC.
const maxHeaders = roce.BTHLen + roce.RETHLen + roce.ImmDtLen + 3 + roce.ICRCLen

// throttle lets one log line per key through every 10 s and counts the
// lines it suppressed in between. It never allocates when it suppresses.
type throttle struct {
	last       [logReqKeys]atomic.Int64
	suppressed [logReqKeys]atomic.Uint64
}

// allow reports whether a line for key may be logged at now (ns), and if
// so how many were suppressed since the last.
func (t *throttle) allow(key int, now int64) (bool, uint64) {
	last := t.last[key].Load()
	if last != 0 && now-last < int64(10*time.Second) || !t.last[key].CompareAndSwap(last, now) {
		t.suppressed[key].Add(1)
		return false, 0
	}
	return true, t.suppressed[key].Swap(0)
}

// randomU32 returns a random non-zero 32-bit value.
func randomU32() uint32 {
	for {
		var b [4]byte
		_, _ = rand.Read(b[:])
		if v := binary.LittleEndian.Uint32(b[:]); v != 0 {
			return v
		}
	}
}

// randomU64 returns a random 64-bit value.
func randomU64() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// Dial connects to the responder at cfg.Collector: CM handshake (REQ, REP,
// RTU), then it waits for the advertisement SEND. It returns once the
// connection can carry ops, or the first error (a *RejectError if the
// responder refused, ErrTimeout if it never answered). logger may be nil.
// The returned Requester reconnects on its own when the connection is
// lost; Close it when done.
func Dial(ctx context.Context, cfg Config, logger *slog.Logger) (*Requester, error) {
	if cfg.Collector.Port() == 0 {
		cfg.Collector = netip.AddrPortFrom(cfg.Collector.Addr(), roce.Port)
	}
	cfg.Collector = netip.AddrPortFrom(cfg.Collector.Addr().Unmap(), cfg.Collector.Port())
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	local, err := localAddr(cfg.Local, cfg.Collector)
	if err != nil {
		return nil, err
	}
	s, err := sock.Listen(local, cfg.RecvBuffer, cfg.SendBuffer)
	if err != nil {
		return nil, err
	}
	if cfg.Collector.Addr().Unmap().IsLoopback() {
		// A collector on this host: runs of packets go as UDP GSO
		// super-datagrams, which the responder receives whole (UDP GRO),
		// and its runs of ACKs arrive whole here. Not on a wire: segments
		// would carry IPv4 IDs the ICRCs do not cover (sock.Conn.EnableGSO).
		s.EnableGSO()
		s.EnableGRO()
	}
	capt, err := sock.NewCapture(cfg.Capture, sock.MACRequester, sock.MACResponder)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("rdma: capture: %w", err)
	}
	pmtu := cfg.MTU
	maxPacket := max(pmtu, roce.MADLen) + maxHeaders + roce.DETHLen
	r := &Requester{
		cfg:       cfg,
		logger:    logger.With("peer", cfg.Collector.String()),
		s:         s,
		rx:        sock.NewReceiver(s, cfg.BatchSize, maxPacket+1),
		maxPacket: maxPacket,
		capture:   capt,
		collector: cfg.Collector,
		out:       roce.Envelope{Src: s.LocalAddr().Addr(), Dst: cfg.Collector.Addr(), SrcPort: s.LocalAddr().Port(), DstPort: cfg.Collector.Port()},
		in:        roce.Envelope{Src: cfg.Collector.Addr(), Dst: s.LocalAddr().Addr(), SrcPort: cfg.Collector.Port(), DstPort: s.LocalAddr().Port()},
		pmtu:      pmtu,
		guid:      randomU64(),
		bucket:    newTokenBucket(cfg.RateLimit, cfg.RateBurst, time.Now().UnixNano()),
		tx:        sock.NewSender(s, cfg.BatchSize, 320),
		win:       newWindow(cfg.Window, pmtu+maxHeaders),
		cmEvents:  make(chan cmEvent, 16),
		drep:      make(chan struct{}, 1),
		mad:       make([]byte, 0, roce.MADLen),
		advCh:     make(chan struct{}, 1),
		reconnect: make(chan struct{}, 1),
		done:      make(chan struct{}),
		timer:     sock.NewTicker(cfg.Timeout / 4),
	}
	r.cond.L = &r.mu
	r.life, r.stop = context.WithCancel(context.Background())
	r.wg.Go(r.readLoop)
	r.wg.Go(r.timerLoop)
	adv, err := r.connect(ctx)
	if err != nil {
		r.mu.Lock()
		r.state = stateClosed
		r.mu.Unlock()
		r.stop()
		close(r.done)
		s.Close()
		r.wg.Wait()
		return nil, fmt.Errorf("rdma: dial %s: %w", cfg.Collector, err)
	}
	r.mu.Lock()
	r.state = stateConnected
	r.mu.Unlock()
	r.stats.Connects.Add(1)
	r.logger.Info("rdma requester connected", "local", s.LocalAddr().String(), "qpn", r.qpn, "remote_qpn", r.remoteQPN,
		"pmtu", pmtu, "max_atomic", r.maxAtomic, "advertisement_bytes", len(adv))
	r.wg.Go(r.reconnectLoop)
	if cfg.KeepAlive > 0 {
		r.wg.Go(r.keepAliveLoop)
	}
	return r, nil
}

// keepAliveOp is the keep-alive: a zero-length WRITE, which names no memory.
var keepAliveOp = Op{Kind: Write}

// keepAliveLoop sends a keep-alive when the connection has been idle for
// Config.KeepAlive: nothing unacknowledged, and no progress for that long.
// Its ACK, or the timeouts without one, tell whether the responder is
// still there; the ACK timeout's rules then apply as to any packet.
func (r *Requester) keepAliveLoop() {
	tk := time.NewTicker(r.cfg.KeepAlive / 2)
	defer tk.Stop()
	for {
		select {
		case <-r.done:
			return
		case <-tk.C:
		}
		r.mu.Lock()
		now := time.Now().UnixNano()
		if r.state == stateConnected && r.win.n == 0 && time.Duration(now-r.lastProgress) >= r.cfg.KeepAlive {
			r.now = now
			r.postPacket(&keepAliveOp, &Target{}, 0, 1, true)
			r.stats.KeepAlives.Add(1)
			r.flushTx()
		}
		r.mu.Unlock()
	}
}

// localAddr returns the address to bind: local's, or, if it has no
// specific IP, the source address the kernel's route to the collector
// picks (a connected UDP socket sends nothing).
func localAddr(local string, collector netip.AddrPort) (string, error) {
	host, port := "", "0"
	if local != "" {
		var err error
		if host, port, err = net.SplitHostPort(local); err != nil {
			return "", fmt.Errorf("requester: Config.Local: %w", err)
		}
	}
	if a, err := netip.ParseAddr(host); err == nil && !a.IsUnspecified() {
		return local, nil
	}
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(collector))
	if err != nil {
		return "", fmt.Errorf("rdma: no route to %s: %w", collector, err)
	}
	defer c.Close()
	a := c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
	return net.JoinHostPort(a.String(), port), nil
}

// LocalAddr returns the address the requester sends from.
func (r *Requester) LocalAddr() netip.AddrPort { return r.s.LocalAddr() }

// Stats returns the requester's live counters.
func (r *Requester) Stats() *Stats { return &r.stats }

// Advertisement returns the bytes the responder posted on the current
// connection. The caller must not modify them.
func (r *Requester) Advertisement() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.adv
}

// SetTargets sets where ops go: Op.Target indexes t. The slice is copied.
func (r *Requester) SetTargets(t []Target) {
	c := append([]Target(nil), t...)
	r.targets.Store(&c)
}

// OnReconnect sets the function called after an automatic reconnect, with
// the new connection's advertisement, before Post accepts ops again: it
// is the place to call SetTargets with the new addresses and keys.
func (r *Requester) OnReconnect(fn func(adv []byte)) {
	if fn == nil {
		r.onReconnect.Store(nil)
		return
	}
	r.onReconnect.Store(&fn)
}

// OnAtomic sets the function that receives the Completion of every
// FetchAdd and CompareSwap, in PSN order, from the requester's receive
// goroutine (or from Close, or the goroutine that finds the connection
// lost). It runs with the requester's lock held: it must return quickly
// and must not call the Requester. nil stops the calls.
func (r *Requester) OnAtomic(fn func(Completion)) {
	if fn == nil {
		r.onAtomic.Store(nil)
		return
	}
	r.onAtomic.Store(&fn)
}

// Flush sends what PostDeferred queued and waits until every packet sent is
// acknowledged. It returns ErrNotConnected if the connection is lost first
// (the packets still outstanding are lost, counted in Stats.OpsLost), or
// ctx's error.
func (r *Requester) Flush(ctx context.Context) error {
	r.mu.Lock()
	epoch := r.epoch
	r.flushTx() // what PostDeferred left queued
	r.mu.Unlock()
	for {
		r.mu.Lock()
		n, st, e := r.win.n, r.state, r.epoch
		r.mu.Unlock()
		switch {
		case st == stateClosed:
			return ErrClosed
		case st != stateConnected || e != epoch:
			return ErrNotConnected
		case n == 0:
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Microsecond):
		}
	}
}

// Connected reports whether the requester has an established connection.
func (r *Requester) Connected() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state == stateConnected
}

// Close disconnects (DREQ, waiting up to Timeout for the DREP) and closes
// the socket. Packets not yet acknowledged are abandoned: call Flush first
// to wait for them. It is idempotent.
func (r *Requester) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		was := r.state == stateConnected
		r.state = stateClosed
		r.cond.Broadcast()
		if was {
			r.sendDREQ()
			r.flushTx()
		}
		r.mu.Unlock()
		if was {
			select {
			case <-r.drep:
			case <-time.After(r.cfg.Timeout):
			}
		}
		r.stop()
		close(r.done)
		r.closeErr = r.s.Close()
		r.wg.Wait()
		r.mu.Lock()
		r.failPending(ErrNotConnected)
		r.mu.Unlock()
		r.logger.Info("rdma requester closed")
	})
	return r.closeErr
}

func (r *Requester) closing() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

func (r *Requester) readLoop() {
	for {
		n, err := r.rx.Read()
		if err != nil {
			if r.closing() {
				return
			}
			r.stats.ReadErrors.Add(1)
			if ok, sup := r.limiter.allow(logRecv, time.Now().UnixNano()); ok {
				r.logger.Warn("rdma requester: read failed", "err", err, "suppressed", sup)
			}
			if !sock.TransientError(err) {
				return
			}
			continue
		}
		r.mu.Lock()
		r.now = time.Now().UnixNano()
		for i := range n {
			b, from, _, trunc := r.rx.Datagram(i)
			if trunc {
				r.stats.Stray.Add(1)
				continue
			}
			// A datagram may hold several packets the kernel coalesced
			// (UDP GRO of the responder's run of ACKs): each one as sent.
			seg := r.rx.SegmentSize(i)
			if seg <= 0 || len(b) == 0 {
				seg = len(b)
			}
			for {
				k := min(seg, len(b))
				if k > r.maxPacket {
					r.stats.Stray.Add(1)
				} else {
					r.handle(b[:k:k], from)
				}
				if b = b[k:]; len(b) == 0 {
					break
				}
			}
		}
		r.flushTx()
		r.mu.Unlock()
	}
}

// handle processes one datagram from the socket. Called with mu held.
func (r *Requester) handle(b []byte, from netip.AddrPort) {
	if from != r.collector || len(b) < roce.BTHLen+roce.ICRCLen {
		r.stats.Stray.Add(1)
		return
	}
	// A responder that is an RDMA NIC numbers its IPv4 packets; the
	// socket shows neither the ID nor DF, so the trailer gives them.
	in := &r.in
	if id, df, err := r.icrc.VerifyAnyID(in, b); err != nil {
		r.stats.BadICRC.Add(1)
		return
	} else if id != in.ID || df == in.NoDF {
		r.stats.ForeignIPID.Add(1)
		if r.capture != nil { // the capture shows the packet with its own ID
			c := r.in
			c.ID, c.NoDF = id, !df
			in = &c
		}
	}
	p := &r.pkt
	if p.Decode(b) != nil {
		r.stats.Stray.Add(1)
		return
	}
	r.capture.Record(in, b, false)
	switch {
	case p.BTH.DestQP == roce.GSIQP:
		r.handleCM(p)
	case p.BTH.DestQP != r.qpn || r.state == stateClosed:
		r.stats.Stray.Add(1)
	default:
		switch p.BTH.Opcode {
		case roce.OpACK, roce.OpAtomicACK:
			r.onResponse(p)
		case roce.OpReadResponseFirst, roce.OpReadResponseMiddle, roce.OpReadResponseLast, roce.OpReadResponseOnly:
			r.onReadResponse(p)
		case roce.OpSendFirst, roce.OpSendMiddle, roce.OpSendLast, roce.OpSendOnly:
			r.onSend(p)
		default:
			r.stats.Stray.Add(1)
		}
	}
}

// timerLoop checks for ACK timeouts and sends what is queued, every quarter
// of the timeout while packets are outstanding; post wakes it.
func (r *Requester) timerLoop() {
	r.timer.Run(&r.mu, r.done, func() bool {
		r.now = time.Now().UnixNano()
		r.checkTimeouts()
		r.flushTx()
		return r.state == stateConnected && r.win.n > 0
	})
}

// flushTx sends the queued packets. Called with mu held.
func (r *Requester) flushTx() {
	before := r.tx.Errors()
	_ = r.tx.Flush()
	if d := r.tx.Errors() - before; d > 0 {
		r.stats.SendErrors.Add(d)
	}
}

// send queues b (which must stay unchanged until the flush) for the
// collector. Called with mu held.
func (r *Requester) send(b []byte) {
	r.capture.Record(&r.out, b, true)
	r.tx.Add(b, r.collector, r.out.Src)
	if r.tx.Full() {
		r.flushTx()
	}
}

// fail declares the connection lost: outstanding packets are dropped,
// Post fails until the reconnect loop has a new connection. Called with
// mu held.
func (r *Requester) fail(why string) { r.failWith(why, ErrNotConnected) }

// failWith is fail completing the outstanding atomics and READs with err.
func (r *Requester) failWith(why string, err error) {
	if r.state != stateConnected {
		return
	}
	r.state = stateDown
	r.epoch++
	lost := 0 // the caller's packets: a keep-alive is none of them
	for i := range r.win.n {
		if !r.win.at(i).keepalive {
			lost++
		}
	}
	r.stats.OpsLost.Add(uint64(lost))
	r.failPending(err)
	r.resetWindow()
	r.stats.Reconnect.Add(1)
	r.cond.Broadcast()
	r.logger.Warn("rdma requester: connection lost; reconnecting", "reason", why, "packets_lost", lost)
	select {
	case r.reconnect <- struct{}{}:
	default:
	}
}

func (r *Requester) reconnectLoop() {
	for {
		select {
		case <-r.done:
			return
		case <-r.reconnect:
		}
		backoff := r.cfg.ReconnectMin
		for {
			adv, err := r.connect(r.life)
			if err == nil {
				if fn := r.onReconnect.Load(); fn != nil {
					(*fn)(adv)
				}
				r.mu.Lock()
				ok := r.state == stateConnecting
				if ok {
					r.state = stateConnected
					r.cond.Broadcast()
				}
				qpn, rqpn := r.qpn, r.remoteQPN
				r.mu.Unlock()
				if ok {
					r.stats.Connects.Add(1)
					r.logger.Info("rdma requester reconnected", "qpn", qpn, "remote_qpn", rqpn, "advertisement_bytes", len(adv))
				}
				break
			}
			if r.closing() || errors.Is(err, ErrClosed) {
				return
			}
			r.logger.Warn("rdma requester: reconnect failed", "err", err, "retry_in", backoff)
			select {
			case <-r.done:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, r.cfg.ReconnectMax)
		}
	}
}

// timeoutCode returns the IBA timeout exponent n with 4.096µs·2^n >= d.
func timeoutCode(d time.Duration) uint8 {
	for n := uint8(0); n < 31; n++ {
		if time.Duration(4096<<n)*time.Nanosecond >= d {
			return n
		}
	}
	return 31
}
