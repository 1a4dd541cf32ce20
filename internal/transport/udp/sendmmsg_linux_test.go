package udp

import (
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// batchSender sends the same datagram n times per sendmmsg(2) call over a
// connected socket, as a switch floods a collector.
type batchSender struct {
	rc     syscall.RawConn
	hs     []unix.Mmsghdr
	iov    unix.Iovec
	err    unix.Errno
	sendFn func(fd uintptr) bool
}

func newBatchSender(c *net.UDPConn, payload []byte, n int) (*batchSender, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	s := &batchSender{rc: rc, hs: make([]unix.Mmsghdr, n)}
	s.iov.Base = &payload[0]
	s.iov.SetLen(len(payload))
	for i := range s.hs {
		s.hs[i].Hdr.Iov = &s.iov
		s.hs[i].Hdr.SetIovlen(1)
	}
	s.sendFn = s.sendmmsg
	return s, nil
}

// send sends all n datagrams.
func (s *batchSender) send() error {
	if err := s.rc.Write(s.sendFn); err != nil {
		return err
	}
	if s.err != 0 {
		return s.err
	}
	return nil
}

func (s *batchSender) sendmmsg(fd uintptr) bool {
	for sent := 0; sent < len(s.hs); {
		n, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, fd,
			uintptr(unsafe.Pointer(&s.hs[sent])), uintptr(len(s.hs)-sent), 0, 0, 0)
		switch errno {
		case 0:
			sent += int(n)
		case unix.EINTR:
		case unix.EAGAIN:
			return false // resends the whole batch once writable: fine for a benchmark
		default:
			s.err = errno
			return true
		}
	}
	s.err = 0
	return true
}
