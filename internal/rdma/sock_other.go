//go:build !linux

package rdma

import "net/netip"

// setOptions sets the buffer sizes only. Without IP_PMTUDISC_DO the IPv4
// ID and DF bit of what the kernel sends are unknown, so ICRCs of IPv4
// packets may not match on the wire; and without IP_PKTINFO a responder
// must be bound to a specific address.
func (s *sock) setOptions(rcvbuf, sndbuf int) error {
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

// rxq reads one datagram per call.
type rxq struct {
	s    *sock
	bufs [][]byte
	n    int
	from netip.AddrPort
}

func newRxq(s *sock, _ int, size int) *rxq {
	return &rxq{s: s, bufs: [][]byte{make([]byte, size)}}
}

func (q *rxq) read() (int, error) {
	n, _, _, from, err := q.s.c.ReadMsgUDPAddrPort(q.bufs[0], nil)
	if err != nil {
		return 0, err
	}
	q.n, q.from = n, netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	return 1, nil
}

func (q *rxq) get(int) (b []byte, from netip.AddrPort, dst netip.Addr, trunc bool) {
	return q.bufs[0][:min(q.n, len(q.bufs[0]))], q.from, q.s.local.Addr(), q.n >= len(q.bufs[0])
}

type txEntry struct {
	b  []byte
	to netip.AddrPort
}

// txq sends one datagram per system call.
type txq struct {
	s       *sock
	e       []txEntry
	scratch [][]byte
	n       int
	errs    uint64
}

func newTxq(s *sock, n, scratch int) *txq {
	q := &txq{s: s, e: make([]txEntry, n), scratch: make([][]byte, n)}
	for i := range q.scratch {
		q.scratch[i] = make([]byte, 0, scratch)
	}
	return q
}

func (q *txq) full() bool { return q.n == len(q.e) }

func (q *txq) buf() []byte { return q.scratch[q.n][:0] }

func (q *txq) add(b []byte, to netip.AddrPort, _ netip.Addr) {
	q.e[q.n] = txEntry{b, to}
	q.n++
}

func (s *sock) flush(q *txq) error {
	defer func() { q.n = 0 }()
	for i := range q.n {
		e := &q.e[i]
		to := e.to
		if s.local.Addr().Is6() && to.Addr().Is4() {
			to = netip.AddrPortFrom(netip.AddrFrom16(to.Addr().As16()), to.Port())
		}
		if _, err := s.c.WriteToUDPAddrPort(e.b, to); err != nil {
			q.errs++
		}
	}
	return nil
}
