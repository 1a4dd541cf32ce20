//go:build !linux

package sock

import (
	"errors"
	"net/netip"
	"os"
	"syscall"
	"time"
)

// errNoGroup: sockets sharing a port are used on Linux only.
var errNoGroup = errors.New("SO_REUSEPORT socket groups are supported on Linux only")

func controlReusePort(_, _ string, _ syscall.RawConn) error { return errNoGroup }

func setReusePort(int) error { return errNoGroup }

func attachSpread(int, int) error { return errNoGroup }

// setOptions sets the buffer sizes only. Without IP_PMTUDISC_DO the IPv4
// ID and DF bit of what the kernel sends are unknown, so ICRCs of IPv4
// packets may not match on the wire; and without IP_PKTINFO a responder
// must be bound to a specific address.
func (s *Conn) setOptions(rcvbuf, sndbuf int) error {
	if rcvbuf > 0 {
		if err := s.c.SetReadBuffer(rcvbuf); err != nil {
			return err
		}
	}
	if sndbuf > 0 {
		return s.c.SetWriteBuffer(sndbuf)
	}
	return nil
}

// Receiver reads one datagram per call.
type Receiver struct {
	s    *Conn
	bufs [][]byte
	n    int
	from netip.AddrPort
}

// NewReceiver returns a receive buffer of size bytes on s (one: this
// platform reads a datagram per system call).
func NewReceiver(s *Conn, _ int, size int) *Receiver {
	return &Receiver{s: s, bufs: [][]byte{make([]byte, size)}}
}

// wakeWaiters does nothing: no Receiver waits in the kernel here.
func (s *Conn) wakeWaiters() {}

// WaitInKernel does nothing on this platform: Read waits in the Go
// runtime's network poller.
func (q *Receiver) WaitInKernel(time.Duration) {}

// PollBeforeWait does nothing on this platform.
func (q *Receiver) PollBeforeWait(time.Duration) {}

// KeepProcessor does nothing on this platform.
func (q *Receiver) KeepProcessor(bool) {}

// Read waits for a datagram and returns 1.
func (q *Receiver) Read() (int, error) {
	n, _, _, from, err := q.s.c.ReadMsgUDPAddrPort(q.bufs[0], nil)
	if err != nil {
		return 0, err
	}
	q.n, q.from = n, netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	return 1, nil
}

// ReadAfter sleeps for d, then reads a datagram if one has arrived: 1 if
// one has, 0 if none.
func (q *Receiver) ReadAfter(d time.Duration) (int, error) {
	time.Sleep(d)
	if err := q.s.c.SetReadDeadline(time.Now()); err != nil {
		return 0, err
	}
	defer q.s.c.SetReadDeadline(time.Time{})
	n, _, _, from, err := q.s.c.ReadMsgUDPAddrPort(q.bufs[0], nil)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return 0, nil
		}
		return 0, err
	}
	q.n, q.from = n, netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	return 1, nil
}

// Datagram returns the datagram of the last Read (the bound address as its
// destination).
func (q *Receiver) Datagram(int) (b []byte, from netip.AddrPort, dst netip.Addr, truncated bool) {
	return q.bufs[0][:min(q.n, len(q.bufs[0]))], q.from, q.s.local.Addr(), q.n >= len(q.bufs[0])
}

type txEntry struct {
	b  []byte
	to netip.AddrPort
}

// Sender sends one datagram per system call.
type Sender struct {
	s       *Conn
	e       []txEntry
	scratch [][]byte
	n       int
	errs    uint64
}

// NewSender returns a queue of up to n datagrams on s, each with scratch
// bytes of its own.
func NewSender(s *Conn, n, scratch int) *Sender {
	q := &Sender{s: s, e: make([]txEntry, n), scratch: make([][]byte, n)}
	for i := range q.scratch {
		q.scratch[i] = make([]byte, 0, scratch)
	}
	return q
}

// Full reports whether the queue is full.
func (q *Sender) Full() bool { return q.n == len(q.e) }

// Buf returns the scratch bytes of the next datagram.
func (q *Sender) Buf() []byte { return q.scratch[q.n][:0] }

// Discard empties the queue without sending (benchmarks of what builds
// the packets).
func (q *Sender) Discard() { q.n = 0 }

// Errors returns how many datagrams the kernel refused so far.
func (q *Sender) Errors() uint64 { return q.errs }

// Add queues b for to; the source address is the bound one.
func (q *Sender) Add(b []byte, to netip.AddrPort, _ netip.Addr) {
	q.e[q.n] = txEntry{b, to}
	q.n++
}

// Flush sends the queued datagrams and empties the queue.
func (q *Sender) Flush() error {
	defer func() { q.n = 0 }()
	for i := range q.n {
		e := &q.e[i]
		to := e.to
		if q.s.local.Addr().Is6() && to.Addr().Is4() {
			to = netip.AddrPortFrom(netip.AddrFrom16(to.Addr().As16()), to.Port())
		}
		if _, err := q.s.c.WriteToUDPAddrPort(e.b, to); err != nil {
			q.errs++
		}
	}
	return nil
}

// EnableGSO reports false: this platform sends one datagram per system
// call.
func (s *Conn) EnableGSO() bool { return false }

// EnableGRO reports false: this platform receives datagrams as sent.
func (s *Conn) EnableGRO() bool { return false }

// SegmentSize returns 0: datagrams are never coalesced here.
func (q *Receiver) SegmentSize(int) int { return 0 }

// Coalesced returns 0: datagrams are never grouped here.
func (q *Sender) Coalesced() uint64 { return 0 }
