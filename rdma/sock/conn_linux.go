//go:build linux

package sock

import (
	"encoding/binary"
	"net/netip"
	"os"
	"syscall"
	"unsafe"
)

// ctlLen is the control buffer per datagram: room for an IPV6_PKTINFO and
// an IP_PKTINFO message.
const ctlLen = 128

// sockaddrLen is the room for a sockaddr_in or sockaddr_in6.
const sockaddrLen = syscall.SizeofSockaddrInet6

// mmsghdr is struct mmsghdr: Go pads it to the alignment of Msghdr, as C
// does, on 32- and 64-bit platforms alike.
type mmsghdr struct {
	hdr syscall.Msghdr
	n   uint32
}

// setOptions: DF on every IPv4 packet (hence IPv4 ID 0 from an
// unconnected socket), the destination address of received datagrams, and
// buffer sizes.
func (s *Conn) setOptions(rcvbuf, sndbuf int) error {
	var opErr error
	err := s.rc.Control(func(fd uintptr) {
		f := int(fd)
		sa, err := syscall.Getsockname(f)
		if err != nil {
			opErr = os.NewSyscallError("getsockname", err)
			return
		}
		_, s.v6 = sa.(*syscall.SockaddrInet6)
		set := func(level, opt, v int, name string) {
			if opErr == nil {
				if err := syscall.SetsockoptInt(f, level, opt, v); err != nil {
					opErr = os.NewSyscallError("setsockopt "+name, err)
				}
			}
		}
		if s.v6 {
			set(syscall.IPPROTO_IPV6, syscall.IPV6_MTU_DISCOVER, syscall.IPV6_PMTUDISC_DO, "IPV6_MTU_DISCOVER")
			set(syscall.IPPROTO_IPV6, syscall.IPV6_RECVPKTINFO, 1, "IPV6_RECVPKTINFO")
			// IPv4 traffic of a dual-stack socket follows the IPv4 options;
			// a v6-only socket may refuse them.
			_ = syscall.SetsockoptInt(f, syscall.IPPROTO_IP, syscall.IP_MTU_DISCOVER, syscall.IP_PMTUDISC_DO)
		} else {
			set(syscall.IPPROTO_IP, syscall.IP_MTU_DISCOVER, syscall.IP_PMTUDISC_DO, "IP_MTU_DISCOVER")
			set(syscall.IPPROTO_IP, syscall.IP_PKTINFO, 1, "IP_PKTINFO")
		}
		// RoCEv2 over IPv4 carries UDP checksum 0 (the ICRC protects the
		// packet; rxe does the same). It also keeps captures on interfaces
		// with checksum offload (veth) free of partial checksums. IPv6 keeps
		// its mandatory checksum.
		_ = syscall.SetsockoptInt(f, syscall.SOL_SOCKET, syscall.SO_NO_CHECK, 1)
		if rcvbuf > 0 && syscall.SetsockoptInt(f, syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, rcvbuf) != nil {
			set(syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf, "SO_RCVBUF")
		}
		if sndbuf > 0 && syscall.SetsockoptInt(f, syscall.SOL_SOCKET, syscall.SO_SNDBUFFORCE, sndbuf) != nil {
			set(syscall.SOL_SOCKET, syscall.SO_SNDBUF, sndbuf, "SO_SNDBUF")
		}
	})
	if err != nil {
		return err
	}
	return opErr
}

// Receiver is a batch of receive buffers filled by one recvmmsg call. It
// belongs to one goroutine.
type Receiver struct {
	s     *Conn
	bufs  [][]byte
	hs    []mmsghdr
	iovs  []syscall.Iovec
	names [][sockaddrLen]byte
	ctls  [][ctlLen]byte
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool
}

// NewReceiver returns n receive buffers of size bytes each on s. A
// datagram longer than size - 1 bytes is reported truncated.
func NewReceiver(s *Conn, n, size int) *Receiver {
	q := &Receiver{
		s:     s,
		bufs:  make([][]byte, n),
		hs:    make([]mmsghdr, n),
		iovs:  make([]syscall.Iovec, n),
		names: make([][sockaddrLen]byte, n),
		ctls:  make([][ctlLen]byte, n),
	}
	stride := (size + 63) &^ 63
	backing := make([]byte, n*stride)
	for i := range n {
		q.bufs[i] = backing[i*stride : i*stride+size : i*stride+size]
		q.iovs[i].Base = &q.bufs[i][0]
		q.iovs[i].SetLen(size)
		h := &q.hs[i].hdr
		h.Iov = &q.iovs[i]
		h.Iovlen = 1
		h.Name = &q.names[i][0]
		h.Control = &q.ctls[i][0]
	}
	q.fn = q.recvmmsg
	return q
}

// Read waits for at least one datagram and returns how many were read;
// Datagram returns them. It does not allocate.
func (q *Receiver) Read() (int, error) {
	for i := range q.hs {
		h := &q.hs[i]
		h.hdr.Namelen = sockaddrLen
		h.hdr.SetControllen(ctlLen)
		h.hdr.Flags = 0
		h.n = 0
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

func (q *Receiver) recvmmsg(fd uintptr) bool {
	for {
		n, _, errno := syscall.Syscall6(sysRecvmmsg, fd, uintptr(unsafe.Pointer(&q.hs[0])),
			uintptr(len(q.hs)), syscall.MSG_DONTWAIT, 0, 0)
		switch errno {
		case 0:
			q.n = int(n)
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		default:
			q.errno = errno
			return true
		}
	}
}

// Datagram returns datagram i of the last Read: its bytes (valid until the
// next Read), its source, its destination address (the bound address if
// the kernel did not say) and whether it was truncated.
func (q *Receiver) Datagram(i int) (b []byte, from netip.AddrPort, dst netip.Addr, truncated bool) {
	h := &q.hs[i]
	n := int(h.n)
	truncated = h.hdr.Flags&syscall.MSG_TRUNC != 0 || n >= len(q.bufs[i])
	b = q.bufs[i][:min(n, len(q.bufs[i]))]
	from = decodeSockaddr(&q.names[i])
	dst = parsePktinfo(q.ctls[i][:min(int(h.hdr.Controllen), ctlLen)])
	if !dst.IsValid() {
		dst = q.s.local.Addr()
	}
	return b, from, dst, truncated
}

// decodeSockaddr decodes a sockaddr_in or sockaddr_in6 in place, unmapping
// IPv4-mapped addresses. Scope IDs are dropped: link-local peers are not
// supported.
func decodeSockaddr(b *[sockaddrLen]byte) netip.AddrPort {
	port := binary.BigEndian.Uint16(b[2:4])
	switch binary.NativeEndian.Uint16(b[0:2]) {
	case syscall.AF_INET:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port)
	case syscall.AF_INET6:
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])).Unmap(), port)
	}
	return netip.AddrPort{}
}

// parsePktinfo returns the destination address in an IP_PKTINFO or
// IPV6_PKTINFO control message, or the zero Addr.
func parsePktinfo(ctl []byte) netip.Addr {
	hl := syscall.CmsgLen(0)
	for len(ctl) >= hl {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&ctl[0]))
		l := int(h.Len)
		if l < hl || l > len(ctl) {
			break
		}
		data := ctl[hl:l]
		switch {
		case h.Level == syscall.IPPROTO_IP && h.Type == syscall.IP_PKTINFO && len(data) >= 12:
			return netip.AddrFrom4([4]byte(data[8:12])) // ipi_addr: the header's destination
		case h.Level == syscall.IPPROTO_IPV6 && h.Type == syscall.IPV6_PKTINFO && len(data) >= 16:
			return netip.AddrFrom16([16]byte(data[0:16])).Unmap()
		}
		next := syscall.CmsgSpace(l - hl)
		if next > len(ctl) {
			break
		}
		ctl = ctl[next:]
	}
	return netip.Addr{}
}

// Sender is a batch of datagrams sent by one sendmmsg call. Its owner
// serialises Add and Flush. The bytes added must stay unchanged until the
// flush.
type Sender struct {
	s       *Conn
	hs      []mmsghdr
	iovs    []syscall.Iovec
	names   [][sockaddrLen]byte
	ctls    [][ctlLen]byte
	scratch [][]byte
	n       int
	off     int
	res     int
	errno   syscall.Errno
	fn      func(fd uintptr) bool
	errs    uint64 // datagrams the kernel refused
}

// NewSender returns a batch of up to n datagrams on s, each with scratch
// bytes of its own for small packets built in place (Buf).
func NewSender(s *Conn, n, scratch int) *Sender {
	q := &Sender{
		s:       s,
		hs:      make([]mmsghdr, n),
		iovs:    make([]syscall.Iovec, n),
		names:   make([][sockaddrLen]byte, n),
		ctls:    make([][ctlLen]byte, n),
		scratch: make([][]byte, n),
	}
	backing := make([]byte, n*scratch)
	for i := range n {
		q.scratch[i] = backing[i*scratch : i*scratch : (i+1)*scratch]
		h := &q.hs[i].hdr
		h.Iov = &q.iovs[i]
		h.Iovlen = 1
		h.Name = &q.names[i][0]
	}
	q.fn = q.sendmmsg
	return q
}

// Full reports whether the batch is full: Flush before the next Add.
func (q *Sender) Full() bool { return q.n == len(q.hs) }

// Buf returns the scratch bytes of the next datagram (empty, with
// capacity), to build a packet in and Add.
func (q *Sender) Buf() []byte { return q.scratch[q.n][:0] }

// Discard empties the queue without sending (benchmarks of what builds
// the packets).
func (q *Sender) Discard() { q.n = 0 }

// Errors returns how many datagrams the kernel refused so far.
func (q *Sender) Errors() uint64 { return q.errs }

// Add queues b for to, sent from src when the socket is bound to a
// wildcard address. The caller flushes a full queue first.
func (q *Sender) Add(b []byte, to netip.AddrPort, src netip.Addr) {
	i := q.n
	q.n++
	q.iovs[i].Base = unsafe.SliceData(b)
	q.iovs[i].SetLen(len(b))
	h := &q.hs[i].hdr
	name := &q.names[i]
	a := to.Addr()
	if q.s.v6 {
		binary.NativeEndian.PutUint16(name[0:2], syscall.AF_INET6)
		binary.BigEndian.PutUint16(name[2:4], to.Port())
		clear(name[4:8])
		a16 := a.As16()
		copy(name[8:24], a16[:])
		clear(name[24:28])
		h.Namelen = syscall.SizeofSockaddrInet6
	} else {
		binary.NativeEndian.PutUint16(name[0:2], syscall.AF_INET)
		binary.BigEndian.PutUint16(name[2:4], to.Port())
		a4 := a.Unmap().As4()
		copy(name[4:8], a4[:])
		clear(name[8:16])
		h.Namelen = syscall.SizeofSockaddrInet4
	}
	h.Control = nil
	h.SetControllen(0)
	if q.s.wildcard && src.IsValid() && !src.IsUnspecified() {
		ctl := q.ctls[i][:]
		clear(ctl)
		c := (*syscall.Cmsghdr)(unsafe.Pointer(&ctl[0]))
		hl := syscall.CmsgLen(0)
		if q.s.v6 {
			c.Level, c.Type = syscall.IPPROTO_IPV6, syscall.IPV6_PKTINFO
			c.SetLen(syscall.CmsgLen(syscall.SizeofInet6Pktinfo))
			a16 := src.As16()
			copy(ctl[hl:], a16[:])
			h.SetControllen(syscall.CmsgSpace(syscall.SizeofInet6Pktinfo))
		} else {
			c.Level, c.Type = syscall.IPPROTO_IP, syscall.IP_PKTINFO
			c.SetLen(syscall.CmsgLen(syscall.SizeofInet4Pktinfo))
			a4 := src.Unmap().As4()
			copy(ctl[hl+4:], a4[:]) // ipi_spec_dst: the source address
			h.SetControllen(syscall.CmsgSpace(syscall.SizeofInet4Pktinfo))
		}
		h.Control = &ctl[0]
	}
}

// Flush sends the queued datagrams and empties the queue. Datagrams the
// kernel refuses are counted (Errors) and skipped; the error returned is
// that of a closed socket.
func (q *Sender) Flush() error {
	defer func() { q.n = 0 }()
	for q.off = 0; q.off < q.n; {
		q.res, q.errno = 0, 0
		if err := q.s.rc.Write(q.fn); err != nil {
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

func (q *Sender) sendmmsg(fd uintptr) bool {
	for {
		n, _, errno := syscall.Syscall6(sysSendmmsg, fd, uintptr(unsafe.Pointer(&q.hs[q.off])),
			uintptr(q.n-q.off), syscall.MSG_DONTWAIT, 0, 0)
		switch errno {
		case 0:
			q.res = int(n)
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		default:
			q.errno = errno
			return true
		}
	}
}
