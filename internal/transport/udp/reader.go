package udp

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// errorLogInterval bounds how often one reader logs transient read errors.
const errorLogInterval = 10 * time.Second

// reader owns one socket, its receive buffers and its Handler. It is the
// Replier handed to that handler.
type reader struct {
	id     int
	conn   net.PacketConn
	udp    *net.UDPConn // conn, when it is one: replies and reads without allocating
	h      Handler
	batch  *batchReader // nil: one datagram per read
	bufs   [][]byte     // MaxDatagram+1 bytes each; bufs[0] when unbatched
	max    int          // Config.MaxDatagram
	stats  *Stats
	done   <-chan struct{}
	logger *slog.Logger

	lastLog    time.Time
	suppressed int
}

// newReader allocates a reader's buffers: batch buffers when batched over a
// *net.UDPConn on Linux, otherwise a single one.
func newReader(id int, conn net.PacketConn, h Handler, cfg Config, l *Listener) *reader {
	r := &reader{id: id, conn: conn, h: h, max: cfg.MaxDatagram, stats: &l.stats, done: l.done, logger: l.logger}
	r.udp, _ = conn.(*net.UDPConn)
	batched := cfg.Batched && r.udp != nil && batchSupported
	n := 1
	if batched {
		n = cfg.BatchSize
	}
	// One spare byte per buffer makes a datagram longer than MaxDatagram
	// visible even where the kernel does not report MSG_TRUNC. Buffers are
	// spaced by whole cache lines.
	size := cfg.MaxDatagram + 1
	stride := (size + 63) &^ 63
	backing := make([]byte, n*stride)
	r.bufs = make([][]byte, n)
	for i := range r.bufs {
		r.bufs[i] = backing[i*stride : i*stride+size : i*stride+size]
	}
	if batched {
		r.batch = newBatchReader(r.udp, r.bufs) // nil: falls back to runUDP
	}
	return r
}

// Reply sends b to the given address from this reader's socket.
func (r *reader) Reply(b []byte, to netip.AddrPort) error {
	var err error
	if r.udp != nil {
		_, err = r.udp.WriteToUDPAddrPort(b, to)
	} else {
		_, err = r.conn.WriteTo(b, net.UDPAddrFromAddrPort(to))
	}
	if err != nil {
		r.stats.ReplyErrors.Add(1)
	}
	return err
}

// run reads until the socket is closed or fails. It returns nil when the
// listener is closing.
func (r *reader) run() error {
	switch {
	case r.batch != nil:
		return r.runBatched()
	case r.udp != nil:
		return r.runUDP()
	default:
		return r.runGeneric()
	}
}

func (r *reader) runBatched() error {
	for {
		n, err := r.batch.read()
		if err != nil {
			if err := r.readError(err); err != nil || r.closing() {
				return err
			}
			continue
		}
		// Count first, so that Stats include a datagram by the time its
		// handler runs.
		var datagrams, bytes, truncated uint64
		for i := range n {
			size, trunc := r.batch.size(i)
			if trunc || size > r.max {
				truncated++
				continue
			}
			datagrams++
			bytes += uint64(size)
		}
		r.account(datagrams, bytes, truncated)
		for i := range n {
			size, trunc := r.batch.size(i)
			if trunc || size > r.max {
				continue
			}
			r.h.HandlePacket(r.bufs[i][:size], r.batch.from(i), r)
		}
		if datagrams > 0 {
			r.h.EndBatch()
		}
	}
}

func (r *reader) runUDP() error {
	buf := r.bufs[0]
	for {
		n, _, flags, from, err := r.udp.ReadMsgUDPAddrPort(buf, nil)
		if err != nil {
			if err := r.readError(err); err != nil || r.closing() {
				return err
			}
			continue
		}
		r.deliver(buf, n, flags&msgTrunc != 0, netip.AddrPortFrom(from.Addr().Unmap(), from.Port()))
	}
}

func (r *reader) runGeneric() error {
	buf := r.bufs[0]
	for {
		n, addr, err := r.conn.ReadFrom(buf)
		if err != nil {
			if err := r.readError(err); err != nil || r.closing() {
				return err
			}
			continue
		}
		r.deliver(buf, n, false, addrPort(addr))
	}
}

// deliver hands one datagram read on its own to the handler, as a batch of one.
func (r *reader) deliver(buf []byte, n int, trunc bool, from netip.AddrPort) {
	if trunc || n > r.max {
		r.account(0, 0, 1)
		return
	}
	r.account(1, uint64(n), 0)
	r.h.HandlePacket(buf[:n], from, r)
	r.h.EndBatch()
}

func (r *reader) account(datagrams, bytes, truncated uint64) {
	r.stats.Batches.Add(1)
	if datagrams > 0 {
		r.stats.Datagrams.Add(datagrams)
		r.stats.Bytes.Add(bytes)
	}
	if truncated > 0 {
		r.stats.Truncated.Add(truncated)
	}
}

func (r *reader) closing() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// readError counts a failed read and decides what to do about it: nil means
// carry on (the listener is closing, or the error is transient), otherwise
// the reader stops with the returned error.
func (r *reader) readError(err error) error {
	if r.closing() {
		return nil
	}
	r.stats.ReadErrors.Add(1)
	if !transient(err) {
		return fmt.Errorf("udp: reader %d: %w", r.id, err)
	}
	if now := time.Now(); now.Sub(r.lastLog) >= errorLogInterval {
		r.logger.Warn("udp: read failed", "reader", r.id, "err", err, "suppressed", r.suppressed)
		r.lastLog, r.suppressed = now, 0
	} else {
		r.suppressed++
	}
	return nil
}

// transient reports whether a read error leaves the socket usable: ICMP
// errors queued on the socket and momentary memory shortage.
func transient(err error) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	switch errno {
	case syscall.EINTR, syscall.EAGAIN, syscall.ECONNREFUSED, syscall.EHOSTUNREACH,
		syscall.ENETUNREACH, syscall.ENOBUFS, syscall.ENOMEM:
		return true
	}
	return false
}

// addrPort converts the source returned by net.PacketConn.ReadFrom.
func addrPort(a net.Addr) netip.AddrPort {
	var ap netip.AddrPort
	switch a := a.(type) {
	case *net.UDPAddr:
		ap = a.AddrPort()
	case nil:
		return ap
	default:
		ap, _ = netip.ParseAddrPort(a.String())
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
