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
type Responder struct {
	cfg     ResponderConfig
	logger  *slog.Logger
	s       *sock.Conn
	rx      *sock.Receiver
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

	mu     sync.Mutex // guards everything below; held per receive batch
	tx     *sock.Sender
	qps    map[uint32]*qp
	byPeer map[netip.AddrPort]*qp
	dirty  []*qp // QPs with an ACK to send at the end of the batch
	hot    hotStats
	pf     prefetcher
	pkt    roce.Packet
	cm     roce.CM
	cmOut  roce.CM
	mad    []byte
	now    int64
	shut   bool // Close has begun: packets are ignored

	// startPSN, if set, picks the responder's starting PSNs (tests of the
	// 24-bit wrap).
	startPSN func() uint32

	running   atomic.Bool
	done      chan struct{}
	timer     *sock.Ticker // handshake and advertisement deadlines; armed under mu
	closeOnce sync.Once
	closeErr  error
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

// NewResponder binds the responder's socket. logger may be nil.
func NewResponder(cfg ResponderConfig, logger *slog.Logger) (*Responder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s, err := sock.Listen(cfg.Addr, cfg.RecvBuffer, 0)
	if err != nil {
		return nil, err
	}
	// Runs of packets a requester on this host sends as one GSO
	// super-datagram arrive whole; readLoop splits them.
	s.EnableGRO()
	if s.LocalAddr().Addr().Unmap().IsLoopback() {
		// Bound to loopback, every peer is on this host: runs of ACKs go
		// as GSO super-datagrams. Never where a packet reaches a wire
		// (sock.Conn.EnableGSO).
		s.EnableGSO()
	}
	capt, err := sock.NewCapture(cfg.Capture, sock.MACResponder, sock.MACRequester)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("rdma: capture: %w", err)
	}
	r := &Responder{
		cfg:       cfg,
		logger:    logger,
		s:         s,
		rx:        sock.NewReceiver(s, cfg.BatchSize, cfg.MTU+maxHeaders+1),
		maxPacket: cfg.MTU + maxHeaders,
		capture:   capt,
		guid:      randomU64(),
		limiter:   ratelog.New(logger, logKeys, 10*time.Second),
		tx:        sock.NewSender(s, cfg.BatchSize, max(320, cfg.MTU+maxHeaders)), // READ responses carry up to MTU bytes
		qps:       make(map[uint32]*qp),
		byPeer:    make(map[netip.AddrPort]*qp),
		mad:       make([]byte, 0, roce.MADLen),
		done:      make(chan struct{}),
		timer:     sock.NewTicker(cfg.Timeout / 4),
	}
	r.mrs.Store(&mrTable{byKey: map[uint32]*mr{}, byName: map[string]*mr{}, nextVA: newVABase()})
	if !cfg.AllowTranslators.Any() {
		r.allow.Store(cfg.AllowTranslators)
	}
	empty := []byte{}
	r.adv.Store(&empty)
	logger.Info("rdma responder listening", "addr", s.LocalAddr().String(), "max_mtu", cfg.MTU, "max_qps", cfg.MaxQPs)
	return r, nil
}

// LocalAddr returns the address the responder is bound to, with the port
// the kernel chose when the configured one was 0.
func (r *Responder) LocalAddr() netip.AddrPort { return r.s.LocalAddr() }

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
// puts each Append list's current head there). fn runs on the receive
// goroutine: it must be quick and must not call the Responder's methods.
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
// every WRITE with immediate after its bytes landed. It must not block and
// must not call the Responder's methods. nil removes it.
func (r *Responder) OnImmediate(fn func(Immediate)) {
	if fn == nil {
		r.onImm.Store(nil)
		return
	}
	r.onImm.Store(&fn)
}

// QPs returns a snapshot of the QP table.
func (r *Responder) QPs() []QPInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
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
// that stopped the socket. It may be called once.
func (r *Responder) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("rdma: Responder.Run called twice")
	}
	stop := context.AfterFunc(ctx, func() { r.Close() })
	defer stop()
	var wg sync.WaitGroup
	wg.Go(r.timerLoop)
	if r.cfg.OnReadLoop != nil {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		r.cfg.OnReadLoop()
	}
	err := r.readLoop()
	r.Close()
	wg.Wait()
	return err
}

// Close sends a DREQ to every established connection (best effort), so
// that requesters reconnect at once, and closes the socket, which stops
// Run. It is idempotent.
func (r *Responder) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		r.shut = true // no new connections between the DREQs and the close
		for _, q := range r.qps {
			if q.state == qpEstablished {
				r.sendDREQ(q)
			}
		}
		r.flush()
		r.mu.Unlock()
		close(r.done)
		r.closeErr = r.s.Close()
	})
	return r.closeErr
}

// crash closes the socket without a word to the peers, as a killed
// process would (tests).
func (r *Responder) crash() {
	r.closeOnce.Do(func() {
		close(r.done)
		r.closeErr = r.s.Close()
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

func (r *Responder) readLoop() error {
	for {
		n, err := r.rx.Read()
		if err != nil {
			if r.closing() {
				return nil
			}
			r.stats.ReadErrors.Add(1)
			if sock.TransientError(err) {
				if ok, sup := r.limiter.Allow(logRead, time.Now().UnixNano()); ok {
					r.logger.Warn("rdma responder: read failed", "err", err, "suppressed", sup)
				}
				continue
			}
			return fmt.Errorf("rdma responder: %w", err)
		}
		r.stats.Batches.Add(1)
		r.prefetch(n)
		r.mu.Lock()
		r.now = time.Now().UnixNano()
		for i := range n {
			b, from, dst, trunc := r.rx.Datagram(i)
			if trunc {
				r.stats.Packets.Add(1)
				r.stats.Truncated.Add(1)
				continue
			}
			if r.shut {
				continue
			}
			seg := r.rx.SegmentSize(i)
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
					r.stats.Packets.Add(1)
					r.stats.Truncated.Add(1)
				} else {
					r.handle(b[:k:k], from, dst)
				}
				if b = b[k:]; len(b) == 0 {
					break
				}
			}
		}
		r.flushACKs()
		r.flush()
		r.mu.Unlock()
	}
}

// prefetch asks for the cache lines the n datagrams just read will write
// (prefetcher). It runs on the read loop, which owns rx and pf.
func (r *Responder) prefetch(n int) {
	t := r.mrs.Load()
	f := &r.pf
	for i := range n {
		b, _, _, trunc := r.rx.Datagram(i)
		if trunc {
			continue
		}
		seg := r.rx.SegmentSize(i)
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
// advertisement sent wake it.
func (r *Responder) timerLoop() {
	r.timer.Run(&r.mu, r.done, func() bool {
		r.now = time.Now().UnixNano()
		r.expire()
		r.flush()
		return r.timing()
	})
}

// timing reports whether a QP waits for something with a deadline: its RTU,
// or the acknowledgement of advertisement packets. Called with mu held.
func (r *Responder) timing() bool {
	for _, q := range r.qps {
		if q.state == qpHalfOpen || q.state == qpEstablished && q.advUna < len(q.adv) {
			return true
		}
	}
	return false
}

// hotStats are the counters every request updates, kept as plain integers
// under mu and added to the atomic Stats at each flush, before any response
// leaves: a locked add per packet would wait for the cache miss of the
// write just placed, where plain stores overlap theirs.
type hotStats struct {
	packets, bytes, writes, writeBytes, atomics uint64
}

// publish adds the hot counters to the stats. Called with mu held.
func (r *Responder) publish() {
	h, st := &r.hot, &r.stats
	if h.packets != 0 {
		st.Packets.Add(h.packets)
		st.Bytes.Add(h.bytes)
	}
	if h.writes != 0 || h.writeBytes != 0 {
		st.Writes.Add(h.writes)
		st.WriteBytes.Add(h.writeBytes)
	}
	if h.atomics != 0 {
		st.Atomics.Add(h.atomics)
	}
	*h = hotStats{}
}

// flush publishes the hot counters and sends the queued responses. Called
// with mu held.
func (r *Responder) flush() {
	r.publish()
	before := r.tx.Errors()
	_ = r.tx.Flush()
	if d := r.tx.Errors() - before; d > 0 {
		r.stats.SendErrors.Add(d)
	}
}

// queue adds a packet built in b (a tx scratch buffer or bytes that live
// until the flush) to the send batch, from local to peer.
func (r *Responder) queue(env *roce.Envelope, b []byte, to netip.AddrPort) {
	r.capture.Record(env, b, true)
	r.tx.Add(b, to, env.Src)
	if r.tx.Full() {
		r.flush()
	}
}

// handle processes one datagram. Called with mu held.
func (r *Responder) handle(b []byte, from netip.AddrPort, dst netip.Addr) {
	st := &r.stats
	r.hot.packets++
	r.hot.bytes += uint64(len(b))
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
			if ok, sup := r.limiter.Allow(logNotAllowed, r.now); ok {
				r.logger.Warn("rdma responder: packet from a source outside allow_translators dropped", "peer", from.String(), "suppressed", sup)
			}
			return
		}
	}
	env := roce.Envelope{Src: from.Addr(), Dst: dst, SrcPort: from.Port(), DstPort: r.s.LocalAddr().Port()}
	if err := env.VerifyICRC(b); err != nil {
		if err == roce.ErrICRC {
			st.BadICRC.Add(1)
		} else {
			st.Malformed.Add(1)
		}
		return
	}
	p := &r.pkt
	if err := p.Decode(b); err != nil {
		st.Malformed.Add(1)
		return
	}
	r.capture.Record(&env, b, false)
	if p.BTH.DestQP == roce.GSIQP {
		if !allowed {
			r.refuseCM(p, from, dst)
			return
		}
		r.handleCM(p, from, dst)
		return
	}
	q := r.qps[p.BTH.DestQP]
	if q == nil || q.peer != from {
		st.UnknownQP.Add(1)
		return
	}
	q.lastActive = r.now
	r.handleRC(q, p)
}
