//go:build linux

package sock

import (
	"encoding/binary"
	"net/netip"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// ctlLen is the control buffer per datagram: room for an IPV6_PKTINFO and
// an IP_PKTINFO message.
const ctlLen = 128

// sockaddrLen is the room for a sockaddr_in or sockaddr_in6.
const sockaddrLen = syscall.SizeofSockaddrInet6

// UDP socket options (linux/udp.h).
const (
	solUDP     = 17  // SOL_UDP
	udpSegment = 103 // UDP_SEGMENT: GSO segment size, socket option or cmsg
	udpGRO     = 104 // UDP_GRO: deliver coalesced datagrams, segment size in a cmsg
)

// groBufLen is the receive buffer of one datagram when the kernel may
// coalesce: the largest UDP payload, so that a coalesced datagram is never
// truncated.
const groBufLen = 65535

// mmsghdr is struct mmsghdr: Go pads it to the alignment of Msghdr, as C
// does, on 32- and 64-bit platforms alike.
type mmsghdr struct {
	hdr syscall.Msghdr
	n   uint32
}

// controlReusePort sets SO_REUSEPORT on a socket before its bind.
func controlReusePort(_, _ string, c syscall.RawConn) error {
	var opErr error
	if err := c.Control(func(fd uintptr) { opErr = setReusePort(int(fd)) }); err != nil {
		return err
	}
	return opErr
}

// setReusePort sets SO_REUSEPORT (on a bound socket too: sockets bound to
// its address later with SO_REUSEPORT join it in a group).
func setReusePort(fd int) error {
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, soReusePort, 1); err != nil {
		return os.NewSyscallError("setsockopt SO_REUSEPORT", err)
	}
	return nil
}

// soAttachReuseportCBPF is SO_ATTACH_REUSEPORT_CBPF (asm-generic/socket.h;
// the same on every architecture).
const soAttachReuseportCBPF = 51

// Classic BPF opcodes (linux/filter.h) and the base of loads relative to
// the network header (SKF_NET_OFF).
const (
	bpfLdB   = 0x30 // BPF_LD | BPF_B | BPF_ABS
	bpfLdH   = 0x28 // BPF_LD | BPF_H | BPF_ABS
	bpfLdW   = 0x20 // BPF_LD | BPF_W | BPF_ABS
	bpfRshK  = 0x74 // BPF_ALU | BPF_RSH | BPF_K
	bpfMulK  = 0x24 // BPF_ALU | BPF_MUL | BPF_K
	bpfModK  = 0x94 // BPF_ALU | BPF_MOD | BPF_K
	bpfXorX  = 0xac // BPF_ALU | BPF_XOR | BPF_X
	bpfJeqK  = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	bpfJa    = 0x05 // BPF_JMP | BPF_JA
	bpfTax   = 0x07 // BPF_MISC | BPF_TAX
	bpfRetA  = 0x16 // BPF_RET | BPF_A
	skfNetOf = 0xFFF00000
)

// spreadMul mixes the source address and port before the modulo.
const spreadMul = 0x9E3779B1

// spreadProgram returns the reuseport program of ListenGroup: socket
// index ((last 32 bits of the source address XOR source port) *
// spreadMul >> 16) mod n, for IPv4 (without options) and IPv6 (without
// extension headers). A load the packet is too short for ends the program
// with 0: the first socket.
func spreadProgram(n int) []syscall.SockFilter {
	return []syscall.SockFilter{
		{Code: bpfLdB, K: skfNetOf},      // 0: A = first byte of the IP header
		{Code: bpfRshK, K: 4},            // 1: A = IP version
		{Code: bpfJeqK, Jt: 4, K: 6},     // 2: IPv6: to 7
		{Code: bpfLdW, K: skfNetOf + 12}, // 3: A = IPv4 source address
		{Code: bpfTax},                   // 4: X = A
		{Code: bpfLdH, K: skfNetOf + 20}, // 5: A = UDP source port (IHL 5)
		{Code: bpfJa, K: 3},              // 6: to 10
		{Code: bpfLdW, K: skfNetOf + 20}, // 7: A = last 32 bits of the IPv6 source address
		{Code: bpfTax},                   // 8: X = A
		{Code: bpfLdH, K: skfNetOf + 40}, // 9: A = UDP source port
		{Code: bpfXorX},                  // 10: A ^= X
		{Code: bpfMulK, K: spreadMul},    // 11
		{Code: bpfRshK, K: 16},           // 12
		{Code: bpfModK, K: uint32(n)},    // 13
		{Code: bpfRetA},                  // 14: the socket's index in the group
	}
}

// spreadIndex is what spreadProgram returns for a datagram from src.
func spreadIndex(src netip.AddrPort, n int) int {
	a := src.Addr().Unmap()
	var w uint32
	if a.Is4() {
		b := a.As4()
		w = binary.BigEndian.Uint32(b[:])
	} else {
		b := a.As16()
		w = binary.BigEndian.Uint32(b[12:])
	}
	return int(((w ^ uint32(src.Port())) * spreadMul >> 16) % uint32(n))
}

// attachSpread attaches spreadProgram(n) to the reuseport group of fd.
func attachSpread(fd, n int) error {
	f := spreadProgram(n)
	prog := syscall.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	// setsockopt(2) with a struct sock_fprog: package syscall has no
	// wrapper for this option, SetsockoptString passes any bytes.
	b := unsafe.String((*byte)(unsafe.Pointer(&prog)), unsafe.Sizeof(prog))
	err := syscall.SetsockoptString(fd, syscall.SOL_SOCKET, soAttachReuseportCBPF, b)
	runtime.KeepAlive(&prog)
	runtime.KeepAlive(f)
	if err != nil {
		return os.NewSyscallError("setsockopt SO_ATTACH_REUSEPORT_CBPF", err)
	}
	return nil
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

// EnableGSO lets the Senders of s send runs of consecutive datagrams of
// one size to one destination as one UDP GSO super-datagram (see
// [Sender]), and reports whether the kernel knows UDP_SEGMENT. The kernel
// refuses GSO on a socket that sends UDP checksum 0, so EnableGSO turns
// UDP checksums back on for IPv4: the receiver ignores them (the ICRC
// protects the packet). Call it before the first Flush.
//
// Only enable it where the datagrams never reach a wire, such as towards
// a loopback address: segmenting a super-datagram numbers the IPv4 IDs of
// its segments 0, 1, 2 and so on, while each packet's ICRC covers ID 0.
func (s *Conn) EnableGSO() bool {
	ok := false
	_ = s.rc.Control(func(fd uintptr) {
		f := int(fd)
		if _, err := syscall.GetsockoptInt(f, solUDP, udpSegment); err != nil {
			return
		}
		if syscall.SetsockoptInt(f, syscall.SOL_SOCKET, syscall.SO_NO_CHECK, 0) != nil {
			return
		}
		ok = true
	})
	s.gso.Store(ok)
	return ok
}

// EnableGRO asks the kernel to deliver runs of datagrams of one flow as
// one coalesced datagram when it can (UDP_GRO: a GSO super-datagram sent
// over loopback arrives whole instead of being segmented), and reports
// whether it accepted. A [Receiver] made afterwards has buffers large
// enough for a coalesced datagram and splits it back into the datagrams
// sent ([Receiver.SegmentSize]). Call it before NewReceiver.
func (s *Conn) EnableGRO() bool {
	ok := false
	_ = s.rc.Control(func(fd uintptr) {
		ok = syscall.SetsockoptInt(int(fd), solUDP, udpGRO, 1) == nil
	})
	s.gro = ok
	return ok
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
	segs  []int // per datagram: its GRO segment size, 0 if not coalesced
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool
	// WaitInKernel: the bound of one wait (zero: wait in the netpoller),
	// the wait as a method value, and whether it read a batch.
	wait   syscall.Timespec
	waitFn func(fd uintptr)
	got    bool
	spin   time.Duration // PollBeforeWait
	keepP  bool          // KeepProcessor
	nowFn  func(fd uintptr)
	pause  syscall.Timespec // ReadAfter's sleep
	// KeepProcessor: no datagram since a kept wait ran 10 ms or its bound
	// (atomic so that tests may watch it; only the reading thread writes it)
	idle atomic.Bool
}

// NewReceiver returns n receive buffers of size bytes each on s. A
// datagram longer than size - 1 bytes is reported truncated. On a socket
// with GRO enabled the buffers hold the largest UDP payload instead.
func NewReceiver(s *Conn, n, size int) *Receiver {
	if s.gro {
		size = max(size, groBufLen+1)
	}
	q := &Receiver{
		s:     s,
		bufs:  make([][]byte, n),
		hs:    make([]mmsghdr, n),
		iovs:  make([]syscall.Iovec, n),
		names: make([][sockaddrLen]byte, n),
		ctls:  make([][ctlLen]byte, n),
		segs:  make([]int, n),
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
	q.nowFn = q.readNow
	return q
}

// Read waits for at least one datagram and returns how many were read;
// Datagram returns them. It does not allocate.
func (q *Receiver) Read() (int, error) {
	q.reset()
	if q.waitFn != nil {
		for q.got = false; !q.got; {
			if err := q.s.rc.Control(q.waitFn); err != nil {
				return 0, err
			}
		}
	} else if err := q.s.rc.Read(q.fn); err != nil {
		return 0, err
	}
	if q.errno != 0 {
		return 0, os.NewSyscallError("recvmmsg", q.errno)
	}
	return q.n, nil
}

// reset readies the headers and the results for a recvmmsg call.
func (q *Receiver) reset() {
	for i := range q.hs {
		h := &q.hs[i]
		h.hdr.Namelen = sockaddrLen
		h.hdr.SetControllen(ctlLen)
		h.hdr.Flags = 0
		h.n = 0
	}
	q.n, q.errno = 0, 0
}

// ReadAfter sleeps for d, a timer's wait that no datagram ends, then reads
// the datagrams that have arrived, without waiting for more: 0 if none
// have. Datagram returns them, as after Read. A reader that expects a
// stream of datagrams so reads them every d at the cost of one timer
// wake-up, rather than being woken by each one that arrives while it
// waits (with the sender on the same host, the sender's CPU then wakes
// no one either). With KeepProcessor the sleep keeps the Go processor,
// as a wait in the kernel does. It does not allocate.
func (q *Receiver) ReadAfter(d time.Duration) (int, error) {
	q.reset()
	if d > 0 {
		q.pause = syscall.NsecToTimespec(int64(d))
		if q.keepP && takeProcessor() {
			// A signal (the runtime's preemption) ends it early: harmless.
			syscall.RawSyscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&q.pause)), 0, 0)
			releaseProcessor()
		} else {
			syscall.Syscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&q.pause)), 0, 0)
		}
	}
	if err := q.s.rc.Control(q.nowFn); err != nil {
		return 0, err
	}
	if q.errno != 0 {
		return 0, os.NewSyscallError("recvmmsg", q.errno)
	}
	return q.n, nil
}

// readNow is ReadAfter's read (as the method value nowFn).
func (q *Receiver) readNow(fd uintptr) { q.recvmmsg(fd) }

// wakeWaiters ends the waits of Receivers in WaitInKernel mode on s at
// once: shutdown(SHUT_RD) marks the socket shut for reading and wakes the
// threads polling it (Linux does so on unconnected UDP sockets too, though
// the call reports ENOTCONN). Close calls it, so that it need not wait for
// their waits to run out.
func (s *Conn) wakeWaiters() {
	_ = s.rc.Control(func(fd uintptr) {
		_ = syscall.Shutdown(int(fd), syscall.SHUT_RD)
	})
}

// WaitInKernel makes Read wait for datagrams in a blocking system call on
// the calling thread (ppoll), for at most d at a time, instead of parking
// its goroutine in the Go runtime's network poller. Meant for a goroutine
// locked to an OS thread of its own (runtime.LockOSThread): its thread then
// sleeps in the kernel and the datagram's arrival wakes that thread alone,
// where a wake-up through the poller runs on one thread and hands the
// goroutine to another. Closing the socket (Conn.Close) ends a wait at
// once; d bounds a wait that nothing ends.
func (q *Receiver) WaitInKernel(d time.Duration) {
	q.wait = syscall.NsecToTimespec(int64(max(d, time.Millisecond)))
	q.waitFn = q.waitRead
}

// PollBeforeWait makes a Receiver in WaitInKernel mode try to read again
// and again, for up to d, before it waits in the kernel: a batch that comes
// within d then costs no sleep and wake-up, at the price of the CPU spent
// polling (the kernel's busy polling, which needs a device with NAPI, does
// the same for sockets of real interfaces).
func (q *Receiver) PollBeforeWait(d time.Duration) { q.spin = max(d, 0) }

// KeepProcessor makes a Receiver in WaitInKernel mode wait without telling
// the Go runtime that its thread blocks in a system call (a raw ppoll): the
// goroutine keeps its processor (one of GOMAXPROCS) while it waits, and the
// runtime does none of the work of releasing and taking back a processor at
// each wait, which on the VM of docs/BENCHMARKS.md cuts the CPU a responder at
// capacity spends by about a tenth. A processor so kept is not free for other
// goroutines, so the receivers of a process keep at most GOMAXPROCS - 1 at a
// time: a wait that would take the last one hands its processor back as
// usual. The runtime's preemption (a goroutine running for 10 ms, a garbage
// collection stopping the world) still gets a kept processor back: its
// signal ends the wait, which then starts again. A kept wait that no
// datagram ends within those 10 ms (or within its bound) means an idle
// socket: the waits that follow hand the processor back, as an idle
// process's should (the runtime would otherwise interrupt them every 10 ms),
// until a datagram comes.
func (q *Receiver) KeepProcessor(keep bool) { q.keepP = keep; q.idle.Store(false) }

// keepers counts the waits keeping their processor (KeepProcessor) now.
var keepers atomic.Int32

// takeProcessor reports whether a wait may keep its processor, counting it
// in keepers if so (releaseProcessor undoes that): while fewer than
// GOMAXPROCS - 1 others do.
func takeProcessor() bool {
	if keepers.Add(1) < int32(runtime.GOMAXPROCS(0)) {
		return true
	}
	keepers.Add(-1)
	return false
}

// releaseProcessor ends a wait that takeProcessor let keep its processor.
func releaseProcessor() { keepers.Add(-1) }

// waitRead reads a batch or, if none is there, waits for one and reads it;
// q.got says whether it did (false after a wait that ran out).
func (q *Receiver) waitRead(fd uintptr) {
	if q.got = q.recvmmsg(fd); q.got {
		return
	}
	if q.spin > 0 {
		for end := time.Now().Add(q.spin); time.Now().Before(end); {
			if q.got = q.recvmmsg(fd); q.got {
				return
			}
		}
	}
	pfd := pollFd{fd: int32(fd), events: pollIn}
	ts := q.wait
	keep := q.keepP && !q.idle.Load() && takeProcessor()
	var errno syscall.Errno
	if keep {
		// A signal (the runtime's preemption) ends the wait with EINTR.
		_, _, errno = syscall.RawSyscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1,
			uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	} else {
		_, _, errno = syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1,
			uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	}
	ready := errno == 0 && pfd.revents != 0
	if keep {
		releaseProcessor()
		// Interrupted (by the runtime's preemption: it has waited 10 ms)
		// or at its bound without a datagram: the socket is idle.
		q.idle.Store(!ready && (errno == syscall.EINTR || errno == 0))
	} else if ready && q.keepP {
		q.idle.Store(false)
	}
	if ready {
		q.got = q.recvmmsg(fd)
	}
}

// pollFd is struct pollfd.
type pollFd struct {
	fd      int32
	events  int16
	revents int16
}

// pollIn is POLLIN.
const pollIn = 0x1

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
// the kernel did not say) and whether it was truncated. On a socket with
// GRO enabled it may hold several datagrams sent: see SegmentSize.
func (q *Receiver) Datagram(i int) (b []byte, from netip.AddrPort, dst netip.Addr, truncated bool) {
	h := &q.hs[i]
	n := int(h.n)
	truncated = h.hdr.Flags&syscall.MSG_TRUNC != 0 || n >= len(q.bufs[i])
	b = q.bufs[i][:min(n, len(q.bufs[i]))]
	from = decodeSockaddr(&q.names[i])
	dst, q.segs[i] = parseControl(q.ctls[i][:min(int(h.hdr.Controllen), ctlLen)])
	if !dst.IsValid() {
		dst = q.s.local.Addr()
	}
	return b, from, dst, truncated
}

// SegmentSize returns, after Datagram(i), the size of the datagrams the
// kernel coalesced into datagram i (UDP GRO): its bytes are consecutive
// datagrams of that size, the last one possibly shorter. It returns 0 for
// a datagram received as sent.
func (q *Receiver) SegmentSize(i int) int { return q.segs[i] }

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

// parseControl returns the destination address in an IP_PKTINFO or
// IPV6_PKTINFO control message, or the zero Addr, and the segment size in
// a UDP_GRO control message, or 0.
func parseControl(ctl []byte) (dst netip.Addr, seg int) {
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
			dst = netip.AddrFrom4([4]byte(data[8:12])) // ipi_addr: the header's destination
		case h.Level == syscall.IPPROTO_IPV6 && h.Type == syscall.IPV6_PKTINFO && len(data) >= 16:
			dst = netip.AddrFrom16([16]byte(data[0:16])).Unmap()
		case h.Level == solUDP && h.Type == udpGRO && len(data) >= 4:
			seg = int(binary.NativeEndian.Uint32(data))
		}
		next := syscall.CmsgSpace(l - hl)
		if next > len(ctl) {
			break
		}
		ctl = ctl[next:]
	}
	return dst, seg
}

// Sender is a batch of datagrams sent by sendmmsg calls. Its owner
// serialises Add and Flush. The bytes added must stay unchanged until the
// flush.
//
// On a socket with GSO enabled ([Conn.EnableGSO]) Flush sends each run of
// consecutive datagrams of one size (the run's last may be shorter) to one
// destination from one source as one super-datagram with a UDP_SEGMENT
// control message: the kernel pays for it once, and the receiver gets the
// same datagrams, byte for byte. If the kernel refuses a super-datagram,
// the Sender stops grouping for good and sends that run and everything
// after it one datagram per message.
type Sender struct {
	s       *Conn
	hs      []mmsghdr // one per message (a datagram or a run of segments)
	iovs    []syscall.Iovec
	names   [][sockaddrLen]byte
	nameLen []uint32
	srcs    []netip.Addr
	ctls    [][ctlLen]byte // per message
	scratch [][]byte
	n       int   // datagrams queued
	nh      int   // messages built by the last build
	first   []int // per message: its first datagram
	count   []int // per message: its datagrams
	off     int
	res     int
	errno   syscall.Errno
	fn      func(fd uintptr) bool
	gso     bool
	errs    uint64 // datagrams the kernel refused
	gsoMsgs uint64 // super-datagrams sent
}

// Bounds of one GSO super-datagram: the kernel's UDP_MAX_SEGMENTS (64 on
// every kernel with UDP_SEGMENT) and a total below the 65507 bytes an IPv4
// UDP payload may carry.
const (
	maxGSOSegments = 64
	maxGSOBytes    = 65000
)

// NewSender returns a batch of up to n datagrams on s, each with scratch
// bytes of its own for small packets built in place (Buf).
func NewSender(s *Conn, n, scratch int) *Sender {
	q := &Sender{
		s:       s,
		hs:      make([]mmsghdr, n),
		iovs:    make([]syscall.Iovec, n),
		names:   make([][sockaddrLen]byte, n),
		nameLen: make([]uint32, n),
		srcs:    make([]netip.Addr, n),
		ctls:    make([][ctlLen]byte, n),
		scratch: make([][]byte, n),
		first:   make([]int, n),
		count:   make([]int, n),
	}
	backing := make([]byte, n*scratch)
	for i := range n {
		q.scratch[i] = backing[i*scratch : i*scratch : (i+1)*scratch]
	}
	q.fn = q.sendmmsg
	return q
}

// Full reports whether the batch is full: Flush before the next Add.
func (q *Sender) Full() bool { return q.n == len(q.iovs) }

// Buf returns the scratch bytes of the next datagram (empty, with
// capacity), to build a packet in and Add.
func (q *Sender) Buf() []byte { return q.scratch[q.n][:0] }

// Discard empties the queue without sending (benchmarks of what builds
// the packets).
func (q *Sender) Discard() { q.n = 0 }

// Errors returns how many datagrams the kernel refused so far.
func (q *Sender) Errors() uint64 { return q.errs }

// Coalesced returns how many GSO super-datagrams (runs of at least two
// datagrams sent by one message) the Sender has sent so far.
func (q *Sender) Coalesced() uint64 { return q.gsoMsgs }

// Add queues b for to, sent from src when the socket is bound to a
// wildcard address. The caller flushes a full queue first.
func (q *Sender) Add(b []byte, to netip.AddrPort, src netip.Addr) {
	i := q.n
	q.n++
	q.iovs[i].Base = unsafe.SliceData(b)
	q.iovs[i].SetLen(len(b))
	name := &q.names[i]
	a := to.Addr()
	if q.s.v6 {
		binary.NativeEndian.PutUint16(name[0:2], syscall.AF_INET6)
		binary.BigEndian.PutUint16(name[2:4], to.Port())
		clear(name[4:8])
		a16 := a.As16()
		copy(name[8:24], a16[:])
		clear(name[24:28])
		q.nameLen[i] = syscall.SizeofSockaddrInet6
	} else {
		binary.NativeEndian.PutUint16(name[0:2], syscall.AF_INET)
		binary.BigEndian.PutUint16(name[2:4], to.Port())
		a4 := a.Unmap().As4()
		copy(name[4:8], a4[:])
		clear(name[8:16])
		q.nameLen[i] = syscall.SizeofSockaddrInet4
	}
	q.srcs[i] = netip.Addr{}
	if q.s.wildcard && src.IsValid() && !src.IsUnspecified() {
		q.srcs[i] = src
	}
}

// Flush sends the queued datagrams and empties the queue. Datagrams the
// kernel refuses are counted (Errors) and skipped; the error returned is
// that of a closed socket.
func (q *Sender) Flush() error {
	defer func() { q.n = 0 }()
	q.gso = q.s.gso.Load()
	q.build(0)
	for q.off = 0; q.off < q.nh; {
		q.res, q.errno = 0, 0
		if err := q.s.rc.Write(q.fn); err != nil {
			return err
		}
		if q.errno == 0 {
			for m := q.off; m < q.off+q.res; m++ {
				if q.count[m] > 1 {
					q.gsoMsgs++
				}
			}
			q.off += q.res
			continue
		}
		if q.count[q.off] > 1 && gsoRefused(q.errno) {
			// The kernel refused a super-datagram (no UDP GSO on the route,
			// a path MTU below a segment): send one datagram per message
			// from here on.
			q.s.gso.Store(false)
			q.gso = false
			q.build(q.first[q.off])
			q.off = 0
			continue
		}
		q.errs += uint64(q.count[q.off])
		q.off++
	}
	return nil
}

// build fills the messages for datagrams from on, grouping runs into
// super-datagrams when GSO is on, and sets nh.
func (q *Sender) build(from int) {
	q.nh = 0
	for i := from; i < q.n; {
		k := 1
		seg := int(q.iovs[i].Len)
		if q.gso {
			total := seg
			for j := i + 1; j < q.n && k < maxGSOSegments; j++ {
				l := int(q.iovs[j].Len)
				if l > seg || total+l > maxGSOBytes || q.srcs[j] != q.srcs[i] ||
					q.nameLen[j] != q.nameLen[i] || q.names[j] != q.names[i] {
					break
				}
				k++
				total += l
				if l < seg {
					break // a shorter datagram ends the run
				}
			}
		}
		q.message(q.nh, i, k, seg)
		q.first[q.nh], q.count[q.nh] = i, k
		q.nh++
		i += k
	}
}

// message sets message m to datagrams i..i+k-1 (segments of seg bytes
// when k > 1), with the source address of datagram i if it has one.
func (q *Sender) message(m, i, k, seg int) {
	h := &q.hs[m].hdr
	q.hs[m].n = 0
	h.Name = &q.names[i][0]
	h.Namelen = q.nameLen[i]
	h.Iov = &q.iovs[i]
	*(*uintptr)(unsafe.Pointer(&h.Iovlen)) = uintptr(k) // size_t on every Linux
	h.Flags = 0
	h.Control = nil
	h.SetControllen(0)
	src := q.srcs[i]
	if !src.IsValid() && k == 1 {
		return
	}
	ctl := q.ctls[m][:]
	clear(ctl)
	used := 0
	hl := syscall.CmsgLen(0)
	if src.IsValid() {
		c := (*syscall.Cmsghdr)(unsafe.Pointer(&ctl[0]))
		if q.s.v6 {
			c.Level, c.Type = syscall.IPPROTO_IPV6, syscall.IPV6_PKTINFO
			c.SetLen(syscall.CmsgLen(syscall.SizeofInet6Pktinfo))
			a16 := src.As16()
			copy(ctl[hl:], a16[:])
			used = syscall.CmsgSpace(syscall.SizeofInet6Pktinfo)
		} else {
			c.Level, c.Type = syscall.IPPROTO_IP, syscall.IP_PKTINFO
			c.SetLen(syscall.CmsgLen(syscall.SizeofInet4Pktinfo))
			a4 := src.Unmap().As4()
			copy(ctl[hl+4:], a4[:]) // ipi_spec_dst: the source address
			used = syscall.CmsgSpace(syscall.SizeofInet4Pktinfo)
		}
	}
	if k > 1 {
		c := (*syscall.Cmsghdr)(unsafe.Pointer(&ctl[used]))
		c.Level, c.Type = solUDP, udpSegment
		c.SetLen(syscall.CmsgLen(2))
		binary.NativeEndian.PutUint16(ctl[used+hl:], uint16(seg))
		used += syscall.CmsgSpace(2)
	}
	h.Control = &ctl[0]
	h.SetControllen(used)
}

func (q *Sender) sendmmsg(fd uintptr) bool {
	for {
		n, _, errno := syscall.Syscall6(sysSendmmsg, fd, uintptr(unsafe.Pointer(&q.hs[q.off])),
			uintptr(q.nh-q.off), syscall.MSG_DONTWAIT, 0, 0)
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

// gsoRefused reports whether errno is how the kernel refuses a UDP GSO
// send it cannot do, rather than a failure of the datagrams themselves.
func gsoRefused(errno syscall.Errno) bool {
	switch errno {
	case syscall.EIO, syscall.EINVAL, syscall.ENOPROTOOPT, syscall.EOPNOTSUPP, syscall.EMSGSIZE:
		return true
	}
	return false
}
