//go:build linux

package rdma

import (
	"encoding/binary"
	"net/netip"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ctlLen is the control buffer per datagram: room for an IPV6_PKTINFO and
// an IP_PKTINFO message.
const ctlLen = 128

// setOptions: DF on every IPv4 packet (hence IPv4 ID 0 from an
// unconnected socket), the destination address of received datagrams, and
// buffer sizes.
func (s *sock) setOptions(rcvbuf, sndbuf int) error {
	var opErr error
	err := s.rc.Control(func(fd uintptr) {
		f := int(fd)
		sa, err := unix.Getsockname(f)
		if err != nil {
			opErr = os.NewSyscallError("getsockname", err)
			return
		}
		_, s.v6 = sa.(*unix.SockaddrInet6)
		set := func(level, opt, v int, name string) {
			if opErr == nil {
				if err := unix.SetsockoptInt(f, level, opt, v); err != nil {
					opErr = os.NewSyscallError("setsockopt "+name, err)
				}
			}
		}
		if s.v6 {
			set(unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, unix.IPV6_PMTUDISC_DO, "IPV6_MTU_DISCOVER")
			set(unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO, 1, "IPV6_RECVPKTINFO")
			// IPv4 traffic of a dual-stack socket follows the IPv4 options;
			// a v6-only socket may refuse them.
			_ = unix.SetsockoptInt(f, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO)
		} else {
			set(unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO, "IP_MTU_DISCOVER")
			set(unix.IPPROTO_IP, unix.IP_PKTINFO, 1, "IP_PKTINFO")
		}
		// RoCEv2 over IPv4 carries UDP checksum 0 (the ICRC protects the
		// packet; rxe does the same). It also keeps captures on interfaces
		// with checksum offload (veth) free of partial checksums. IPv6 keeps
		// its mandatory checksum.
		_ = unix.SetsockoptInt(f, unix.SOL_SOCKET, unix.SO_NO_CHECK, 1)
		if rcvbuf > 0 && unix.SetsockoptInt(f, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvbuf) != nil {
			set(unix.SOL_SOCKET, unix.SO_RCVBUF, rcvbuf, "SO_RCVBUF")
		}
		if sndbuf > 0 && unix.SetsockoptInt(f, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, sndbuf) != nil {
			set(unix.SOL_SOCKET, unix.SO_SNDBUF, sndbuf, "SO_SNDBUF")
		}
	})
	if err != nil {
		return err
	}
	return opErr
}

// rxq is a batch of receive buffers read by one recvmmsg call. It belongs
// to one goroutine.
type rxq struct {
	s     *sock
	bufs  [][]byte
	hs    []unix.Mmsghdr
	iovs  []unix.Iovec
	names [][unix.SizeofSockaddrInet6]byte
	ctls  [][ctlLen]byte
	n     int
	errno unix.Errno
	fn    func(fd uintptr) bool
}

// newRxq returns n receive buffers of size bytes each.
func newRxq(s *sock, n, size int) *rxq {
	q := &rxq{
		s:     s,
		bufs:  make([][]byte, n),
		hs:    make([]unix.Mmsghdr, n),
		iovs:  make([]unix.Iovec, n),
		names: make([][unix.SizeofSockaddrInet6]byte, n),
		ctls:  make([][ctlLen]byte, n),
	}
	stride := (size + 63) &^ 63
	backing := make([]byte, n*stride)
	for i := range n {
		q.bufs[i] = backing[i*stride : i*stride+size : i*stride+size]
		q.iovs[i].Base = &q.bufs[i][0]
		q.iovs[i].SetLen(size)
		h := &q.hs[i].Hdr
		h.Iov = &q.iovs[i]
		h.SetIovlen(1)
		h.Name = &q.names[i][0]
		h.Control = &q.ctls[i][0]
	}
	q.fn = q.recvmmsg
	return q
}

// read waits for at least one datagram and returns how many were read.
func (q *rxq) read() (int, error) {
	for i := range q.hs {
		h := &q.hs[i]
		h.Hdr.Namelen = unix.SizeofSockaddrInet6
		h.Hdr.SetControllen(ctlLen)
		h.Hdr.Flags = 0
		h.Len = 0
	}
	q.n, q.errno = 0, 0
	if err := q.s.rc.Read(q.fn); err != nil {
		return 0, err
	}
	if q.errno != 0 {
		return 0, os.NewSyscallError("recvmmsg", q.errno)
	}
	return q.n, nil
}

func (q *rxq) recvmmsg(fd uintptr) bool {
	for {
		n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&q.hs[0])),
			uintptr(len(q.hs)), unix.MSG_DONTWAIT, 0, 0)
		switch errno {
		case 0:
			q.n = int(n)
			return true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		default:
			q.errno = errno
			return true
		}
	}
}

// get returns datagram i of the last read: its bytes, source, destination
// address (the bound address if the kernel did not say) and whether it was
// truncated.
func (q *rxq) get(i int) (b []byte, from netip.AddrPort, dst netip.Addr, trunc bool) {
	h := &q.hs[i]
	n := int(h.Len)
	trunc = h.Hdr.Flags&unix.MSG_TRUNC != 0 || n >= len(q.bufs[i])
	b = q.bufs[i][:min(n, len(q.bufs[i]))]
	from = decodeSockaddr(&q.names[i])
	dst = parsePktinfo(q.ctls[i][:min(int(h.Hdr.Controllen), ctlLen)])
	if !dst.IsValid() {
		dst = q.s.local.Addr()
	}
	return b, from, dst, trunc
}

// decodeSockaddr decodes a sockaddr_in or sockaddr_in6 in place, unmapping
// IPv4-mapped addresses. Scope IDs are dropped: link-local peers are not
// supported.
func decodeSockaddr(b *[unix.SizeofSockaddrInet6]byte) netip.AddrPort {
	port := binary.BigEndian.Uint16(b[2:4])
	switch binary.NativeEndian.Uint16(b[0:2]) {
	case unix.AF_INET:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port)
	case unix.AF_INET6:
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])).Unmap(), port)
	}
	return netip.AddrPort{}
}

// parsePktinfo returns the destination address in an IP_PKTINFO or
// IPV6_PKTINFO control message, or the zero Addr.
func parsePktinfo(ctl []byte) netip.Addr {
	hl := unix.CmsgLen(0)
	for len(ctl) >= hl {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&ctl[0]))
		l := int(h.Len)
		if l < hl || l > len(ctl) {
			break
		}
		data := ctl[hl:l]
		switch {
		case h.Level == unix.IPPROTO_IP && h.Type == unix.IP_PKTINFO && len(data) >= 12:
			return netip.AddrFrom4([4]byte(data[8:12])) // ipi_addr: the header's destination
		case h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_PKTINFO && len(data) >= 16:
			return netip.AddrFrom16([16]byte(data[0:16])).Unmap()
		}
		next := unix.CmsgSpace(l - hl)
		if next > len(ctl) {
			break
		}
		ctl = ctl[next:]
	}
	return netip.Addr{}
}

// txq is a batch of datagrams sent by one sendmmsg call. Its owner
// serialises add and flush. The bytes added must stay unchanged until the
// flush.
type txq struct {
	s       *sock
	hs      []unix.Mmsghdr
	iovs    []unix.Iovec
	names   [][unix.SizeofSockaddrInet6]byte
	ctls    [][ctlLen]byte
	scratch [][]byte
	n       int
	off     int
	res     int
	errno   unix.Errno
	fn      func(fd uintptr) bool
	errs    uint64 // datagrams the kernel refused
}

// newTxq returns a batch of up to n datagrams, each with scratch bytes
// of its own for small packets built in place.
func newTxq(s *sock, n, scratch int) *txq {
	q := &txq{
		s:       s,
		hs:      make([]unix.Mmsghdr, n),
		iovs:    make([]unix.Iovec, n),
		names:   make([][unix.SizeofSockaddrInet6]byte, n),
		ctls:    make([][ctlLen]byte, n),
		scratch: make([][]byte, n),
	}
	backing := make([]byte, n*scratch)
	for i := range n {
		q.scratch[i] = backing[i*scratch : i*scratch : (i+1)*scratch]
		h := &q.hs[i].Hdr
		h.Iov = &q.iovs[i]
		h.SetIovlen(1)
		h.Name = &q.names[i][0]
	}
	q.fn = q.sendmmsg
	return q
}

func (q *txq) full() bool { return q.n == len(q.hs) }

// buf returns the scratch bytes of the next datagram (empty, with capacity).
func (q *txq) buf() []byte { return q.scratch[q.n][:0] }

// add queues b for to, sent from src when the socket is bound to a
// wildcard address. The caller flushes a full queue first.
func (q *txq) add(b []byte, to netip.AddrPort, src netip.Addr) {
	i := q.n
	q.n++
	q.iovs[i].Base = unsafe.SliceData(b)
	q.iovs[i].SetLen(len(b))
	h := &q.hs[i].Hdr
	name := &q.names[i]
	a := to.Addr()
	if q.s.v6 {
		binary.NativeEndian.PutUint16(name[0:2], unix.AF_INET6)
		binary.BigEndian.PutUint16(name[2:4], to.Port())
		clear(name[4:8])
		a16 := a.As16()
		copy(name[8:24], a16[:])
		clear(name[24:28])
		h.Namelen = unix.SizeofSockaddrInet6
	} else {
		binary.NativeEndian.PutUint16(name[0:2], unix.AF_INET)
		binary.BigEndian.PutUint16(name[2:4], to.Port())
		a4 := a.Unmap().As4()
		copy(name[4:8], a4[:])
		clear(name[8:16])
		h.Namelen = unix.SizeofSockaddrInet4
	}
	h.Control = nil
	h.SetControllen(0)
	if q.s.wildcard && src.IsValid() && !src.IsUnspecified() {
		ctl := q.ctls[i][:]
		clear(ctl)
		c := (*unix.Cmsghdr)(unsafe.Pointer(&ctl[0]))
		hl := unix.CmsgLen(0)
		if q.s.v6 {
			c.Level, c.Type = unix.IPPROTO_IPV6, unix.IPV6_PKTINFO
			c.SetLen(unix.CmsgLen(unix.SizeofInet6Pktinfo))
			a16 := src.As16()
			copy(ctl[hl:], a16[:])
			h.SetControllen(unix.CmsgSpace(unix.SizeofInet6Pktinfo))
		} else {
			c.Level, c.Type = unix.IPPROTO_IP, unix.IP_PKTINFO
			c.SetLen(unix.CmsgLen(unix.SizeofInet4Pktinfo))
			a4 := src.Unmap().As4()
			copy(ctl[hl+4:], a4[:]) // ipi_spec_dst: the source address
			h.SetControllen(unix.CmsgSpace(unix.SizeofInet4Pktinfo))
		}
		h.Control = &ctl[0]
	}
}

// flush sends the queued datagrams and empties the queue. Datagrams the
// kernel refuses are counted in q.errs and skipped; the error returned is
// that of a closed socket.
func (s *sock) flush(q *txq) error {
	defer func() { q.n = 0 }()
	for q.off = 0; q.off < q.n; {
		q.res, q.errno = 0, 0
		if err := s.rc.Write(q.fn); err != nil {
			return err
		}
		if q.errno != 0 {
			q.errs++
			q.off++
			continue
		}
		q.off += q.res
	}
	return nil
}

func (q *txq) sendmmsg(fd uintptr) bool {
	for {
		n, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&q.hs[q.off])),
			uintptr(q.n-q.off), unix.MSG_DONTWAIT, 0, 0)
		switch errno {
		case 0:
			q.res = int(n)
			return true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		default:
			q.errno = errno
			return true
		}
	}
}
