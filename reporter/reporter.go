package reporter

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dta-go/dta/wire/dta"
)

// ErrClosed is returned by Send and Flush after Close.
var ErrClosed = errors.New("reporter: closed")

// Stats counts what a Reporter did. The counters are live: read them with
// Load at any time.
type Stats struct {
	Reports       atomic.Uint64 // reports sent (first transmissions)
	Datagrams     atomic.Uint64 // datagrams sent (first transmissions)
	Bytes         atomic.Uint64 // UDP payload bytes of those datagrams
	Acks          atomic.Uint64 // ACKs received
	Nacks         atomic.Uint64 // NACKs received
	Retransmits   atomic.Uint64 // datagrams resent after a NACK or a timeout
	Evicted       atomic.Uint64 // datagrams forgotten unacknowledged because the window was full
	Unrecoverable atomic.Uint64 // gaps at the translator made of datagrams the window had forgotten (lost)
	WriteErrors   atomic.Uint64 // datagrams the socket refused
}

// Reporter sends DTA reports to one translator over its own UDP socket. Its
// methods are safe for concurrent use.
type Reporter struct {
	cfg   Config // with defaults applied
	log   *slog.Logger
	conn  *net.UDPConn
	to    netip.AddrPort
	lim   *limiter // nil: unlimited
	stats Stats

	kick chan struct{} // a batch was started (flusher)
	done chan struct{} // closed by Close
	wg   sync.WaitGroup

	closeOnce sync.Once
	closeErr  error // set once, by Close

	mu       sync.Mutex
	closed   bool
	seq      uint8 // next sequence number (when not retransmitting)
	single   []byte
	bw       dta.BatchWriter
	batchBuf []byte
	batchAt  time.Time // when the pending batch got its first report
	warnAt   time.Time // last throttled warning

	// Retransmission state, used only when cfg.Retransmit.
	win          *window
	room         sync.Cond // on mu: signalled when the window frees slots, on ticks and on Close
	heardAt      time.Time // last ACK/NACK received
	silent       bool      // a wait for room ended with nothing heard (see awaitRoomLocked)
	synced       bool      // an ACK/NACK inside the window was seen
	confirmed    uint8     // when synced: the last seq the translator said it accepted
	progressAt   time.Time // last ACK progress, timeout resend or start of a window
	timeouts     int       // timeout resends since the last progress
	lastNack     uint8
	lastNackAt   time.Time
	lastNackUsed bool
	forgotten    uint64 // datagrams the full window forgot that no ACK has covered since (Unacknowledged)
	lost         uint64 // forgotten datagrams the translator said it missed (Unacknowledged)
}

// New opens the socket described by cfg and returns a Reporter sending
// through it. A nil logger discards log records.
func New(cfg Config, logger *slog.Logger) (*Reporter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ua, err := net.ResolveUDPAddr("udp", cfg.To)
	if err != nil {
		return nil, fmt.Errorf("reporter: resolve %q: %w", cfg.To, err)
	}
	to := ua.AddrPort()
	to = netip.AddrPortFrom(to.Addr().Unmap(), to.Port())
	network := "udp6"
	if to.Addr().Is4() {
		network = "udp4"
	}
	la, err := net.ResolveUDPAddr(network, cfg.Local)
	if err != nil {
		return nil, fmt.Errorf("reporter: resolve local %q: %w", cfg.Local, err)
	}
	conn, err := net.ListenUDP(network, la)
	if err != nil {
		return nil, fmt.Errorf("reporter: bind %s: %w", cfg.Local, err)
	}
	r := &Reporter{
		cfg:      cfg,
		log:      logger,
		conn:     conn,
		to:       to,
		kick:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		seq:      1,
		single:   make([]byte, 0, MTU),
		batchBuf: make([]byte, 0, MTU),
	}
	if cfg.Rate > 0 {
		r.lim = newLimiter(cfg.Rate, max(cfg.Batch, int(min(cfg.Rate*burstWindow.Seconds(), 1e9))))
	}
	if cfg.Batch > 1 {
		r.wg.Add(1)
		go r.flusher()
	}
	if cfg.Retransmit {
		// A random first sequence number: a translator that still tracks
		// this address and port from an earlier reporter (the default
		// Local port is fixed) then answers our first datagrams with an
		// ACK/NACK outside the window, and handleAck renumbers them. It
		// takes them for duplicates only if its last seq falls among
		// them: with k datagrams sent before its first answer, a chance
		// of k/256 instead of near certainty with a fixed start.
		r.win = &window{head: uint8(rand.Uint32())}
		r.room.L = &r.mu
		_ = conn.SetReadBuffer(ackReadBuffer) // ACKs come one per datagram
		r.wg.Add(1)
		go r.readAcks()
	}
	return r, nil
}

// LocalAddr returns the address of the Reporter's socket.
func (r *Reporter) LocalAddr() netip.AddrPort { return r.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// RemoteAddr returns the translator's address, resolved.
func (r *Reporter) RemoteAddr() netip.AddrPort { return r.to }

// Stats returns the Reporter's live counters.
func (r *Reporter) Stats() *Stats { return &r.stats }

// Unacknowledged returns how many of the datagrams sent the translator has
// not acknowledged: those the window still holds (after Close, those Close
// gave up waiting for), those the full window forgot that no later ACK or
// NACK has covered (the translator's answers are cumulative), and forgotten
// ones the translator said it missed (lost). A program that must know its
// reports arrived checks it after Close. It is 0 without Retransmit, where
// nothing is acknowledged.
func (r *Reporter) Unacknowledged() uint64 {
	if r.win == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return uint64(r.win.count) + r.forgotten + r.lost
}

// Send queues rep for sending, copying it: the caller may reuse rep and the
// memory it points to as soon as Send returns. With Batch ≤ 1 the report is
// sent at once in its own datagram; otherwise it joins the pending batch,
// which is sent when it holds Batch reports, when the next report would not
// fit in MTU bytes, after FlushInterval, or on Flush or Close. An immediate
// report sets the immediate flag: the pending batch is sent first, then the
// report alone in its own datagram, so that only it carries the flag.
//
// With Rate set, Send first waits for a token. With Retransmit, when
// WindowSize datagrams are unacknowledged (or, before the translator's first
// answer, one), Send waits up to RetransmitTimeout for an ACK to free room,
// so that a translator that acknowledges paces the reporter; then it
// forgets the oldest datagram (Stats.Evicted). Once such a wait has passed
// with no answer at all (the prototype translator sends no positive ACKs),
// Send stops waiting until the translator answers again. Send returns an error wrapping
// dta.ErrEncode for a report that would not decode, ErrClosed after Close,
// or the socket's error for the datagram it sent.
func (r *Reporter) Send(rep *dta.Report, immediate bool) error {
	if r.lim != nil {
		r.lim.wait(r.done)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if r.win != nil && r.windowFullLocked() {
		r.awaitRoomLocked()
		if r.closed {
			return ErrClosed
		}
	}
	if r.cfg.Batch <= 1 || immediate {
		if err := r.flushLocked(); err != nil {
			return err
		}
		return r.sendSingleLocked(rep, immediate)
	}
	size, err := dta.RecordSize(rep)
	if err != nil {
		return err
	}
	if n := r.bw.Len(); n > 0 && r.bw.Size()+size > MTU {
		if err := r.flushLocked(); err != nil {
			return err
		}
	}
	if r.bw.Len() == 0 {
		r.bw.Reset(r.batchBuf, r.header(0))
		r.batchAt = time.Now()
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
	if err := r.bw.Add(rep); err != nil {
		return err
	}
	if r.bw.Len() >= r.cfg.Batch {
		return r.flushLocked()
	}
	return nil
}

// Flush sends the pending batch, if any.
func (r *Reporter) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	return r.flushLocked()
}

// Close sends the pending batch, waits (with Retransmit) until the
// translator has acknowledged every datagram, the timeout resends give up or
// MaxLinger passes, then closes the socket and stops the Reporter's
// goroutines. Later calls wait for the first and return its result.
func (r *Reporter) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		err := r.flushLocked()
		r.closed = true
		r.room.Broadcast()
		r.mu.Unlock()
		if r.win != nil {
			r.drain()
		}
		close(r.done)
		if cerr := r.conn.Close(); err == nil {
			err = cerr
		}
		r.wg.Wait()
		r.closeErr = err
	})
	return r.closeErr
}

// header returns the base header of the next datagram with opcode op; the
// sequence number is set when the datagram is sent.
func (r *Reporter) header(op dta.Opcode) dta.Header {
	h := dta.Header{Opcode: op}
	if r.cfg.Retransmit {
		h.Flags |= dta.FlagRetransmit
	}
	return h
}

// sendSingleLocked sends rep in its own single-report datagram.
func (r *Reporter) sendSingleLocked(rep *dta.Report, immediate bool) error {
	h := r.header(rep.Opcode)
	if immediate {
		h.Flags |= dta.FlagImmediate
	}
	var b []byte
	var err error
	if r.cfg.Legacy {
		b, err = rep.AppendTo(h.AppendLegacyTo(r.single[:0]))
	} else {
		b, err = dta.AppendDatagram(r.single[:0], h, rep)
	}
	if err != nil {
		return err
	}
	return r.sendLocked(b, 1)
}

// flushLocked sends the pending batch. A batch of one report goes out in the
// single-report format, 4 bytes shorter.
func (r *Reporter) flushLocked() error {
	n := r.bw.Len()
	if n == 0 {
		return nil
	}
	b := r.bw.Bytes()
	if n == 1 {
		// [OpBatch seq flags count=1 op len16 body…] → [op seq flags body…]
		const rec = dta.HeaderLen + 1 + 3
		b[0] = b[dta.HeaderLen+1]
		b = b[:dta.HeaderLen+copy(b[dta.HeaderLen:], b[rec:])]
	}
	err := r.sendLocked(b, n)
	r.bw.Reset(r.batchBuf, r.header(0)) // empty again; b is no longer needed
	return err
}

// sendLocked numbers datagram b (3-byte header), keeps a copy for
// retransmission when asked to, and sends it.
func (r *Reporter) sendLocked(b []byte, reports int) error {
	if r.win != nil {
		b[1] = r.win.next()
		if r.win.count == 0 {
			r.progressAt = time.Now()
		}
		var evicted bool
		if b, evicted = r.win.push(b); evicted {
			r.stats.Evicted.Add(1)
			r.forgotten++
		}
	} else if !r.cfg.Legacy {
		b[1] = r.seq
		r.seq++
	}
	if _, err := r.conn.WriteToUDPAddrPort(b, r.to); err != nil {
		r.stats.WriteErrors.Add(1)
		return fmt.Errorf("reporter: send to %v: %w", r.to, err)
	}
	r.stats.Reports.Add(uint64(reports))
	r.stats.Datagrams.Add(1)
	r.stats.Bytes.Add(uint64(len(b)))
	return nil
}

// flusher sends partial batches that have waited FlushInterval.
func (r *Reporter) flusher() {
	defer r.wg.Done()
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		select {
		case <-r.done:
			return
		case <-r.kick:
		}
		for {
			r.mu.Lock()
			if r.closed || r.bw.Len() == 0 {
				r.mu.Unlock()
				break
			}
			wait := r.cfg.FlushInterval - time.Since(r.batchAt)
			if wait <= 0 {
				if err := r.flushLocked(); err != nil {
					r.warnLocked("flushing a batch failed", "err", err)
				}
				r.mu.Unlock()
				break
			}
			r.mu.Unlock()
			t.Reset(wait)
			select {
			case <-r.done:
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// warnLocked logs at most one warning per second.
func (r *Reporter) warnLocked(msg string, args ...any) {
	if now := time.Now(); now.Sub(r.warnAt) >= time.Second {
		r.warnAt = now
		r.log.Warn(msg, args...)
	}
}
