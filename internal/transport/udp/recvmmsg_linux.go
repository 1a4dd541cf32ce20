//go:build linux

package udp

import (
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// batchSupported reports whether batched listeners use recvmmsg.
const batchSupported = true

// batchReader reads up to len(bufs) datagrams per recvmmsg(2) call into
// buffers it owns, without allocating.
//
// It calls recvmmsg itself rather than through x/net's
// ipv4.PacketConn.ReadBatch: ReadBatch returns each source as a freshly
// allocated *net.UDPAddr (two allocations per datagram), while this reader
// decodes the sockaddr in place into a netip.AddrPort.
type batchReader struct {
	rc     syscall.RawConn
	hs     []unix.Mmsghdr
	iovs   []unix.Iovec
	names  [][unix.SizeofSockaddrInet6]byte
	zones  map[uint32]string // interface index -> name, for link-local sources
	used   int               // headers the previous call filled, to reset
	n      int               // result of the last recvmmsg
	errno  unix.Errno        // error of the last recvmmsg
	readFn func(fd uintptr) bool
}

// newBatchReader returns a reader over c's socket that fills bufs, or nil if
// c does not expose its socket.
func newBatchReader(c *net.UDPConn, bufs [][]byte) *batchReader {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil
	}
	br := &batchReader{
		rc:    rc,
		hs:    make([]unix.Mmsghdr, len(bufs)),
		iovs:  make([]unix.Iovec, len(bufs)),
		names: make([][unix.SizeofSockaddrInet6]byte, len(bufs)),
	}
	for i, b := range bufs {
		br.iovs[i].Base = &b[0]
		br.iovs[i].SetLen(len(b))
		h := &br.hs[i].Hdr
		h.Iov = &br.iovs[i]
		h.SetIovlen(1)
		h.Name = &br.names[i][0]
		h.Namelen = unix.SizeofSockaddrInet6
	}
	br.used = len(bufs)
	br.readFn = br.recvmmsg // bound once: a method value allocates
	return br
}

// read waits for at least one datagram and returns how many were read into
// the buffers. Datagram i is described by size(i) and from(i).
func (br *batchReader) read() (int, error) {
	for i := range br.used {
		br.hs[i].Hdr.Namelen = unix.SizeofSockaddrInet6
		br.hs[i].Hdr.Flags = 0
		br.hs[i].Len = 0
	}
	br.n, br.errno = 0, 0
	if err := br.rc.Read(br.readFn); err != nil {
		return 0, err
	}
	if br.errno != 0 {
		return 0, os.NewSyscallError("recvmmsg", br.errno)
	}
	br.used = br.n
	return br.n, nil
}

// recvmmsg is called by the runtime poller with the socket; returning false
// parks the goroutine until the socket is readable.
func (br *batchReader) recvmmsg(fd uintptr) bool {
	for {
		n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, fd,
			uintptr(unsafe.Pointer(&br.hs[0])), uintptr(len(br.hs)), unix.MSG_DONTWAIT, 0, 0)
		switch errno {
		case 0:
			br.n = int(n)
			return true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		default:
			br.errno = errno
			return true
		}
	}
}

// size returns the length of datagram i of the last read, and whether the
// kernel truncated it to fit its buffer.
func (br *batchReader) size(i int) (n int, truncated bool) {
	h := &br.hs[i]
	return int(h.Len), h.Hdr.Flags&unix.MSG_TRUNC != 0
}

// from returns the source of datagram i of the last read.
func (br *batchReader) from(i int) netip.AddrPort {
	return br.sockaddr(&br.names[i])
}

// sockaddr decodes a struct sockaddr_in or sockaddr_in6 in place.
// IPv4-mapped IPv6 addresses (from dual-stack sockets) are unmapped.
func (br *batchReader) sockaddr(b *[unix.SizeofSockaddrInet6]byte) netip.AddrPort {
	port := binary.BigEndian.Uint16(b[2:4])
	switch binary.NativeEndian.Uint16(b[0:2]) {
	case unix.AF_INET:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port)
	case unix.AF_INET6:
		a := netip.AddrFrom16([16]byte(b[8:24])).Unmap()
		if scope := binary.NativeEndian.Uint32(b[24:28]); scope != 0 && a.Is6() {
			a = a.WithZone(br.zone(scope))
		}
		return netip.AddrPortFrom(a, port)
	}
	return netip.AddrPort{}
}

// zone names an interface index, caching the answer: only link-local sources
// carry one, and their set is small.
func (br *batchReader) zone(index uint32) string {
	if name, ok := br.zones[index]; ok {
		return name
	}
	name := strconv.FormatUint(uint64(index), 10)
	if ifi, err := net.InterfaceByIndex(int(index)); err == nil {
		name = ifi.Name
	}
	if br.zones == nil {
		br.zones = make(map[uint32]string)
	}
	br.zones[index] = name
	return name
}
