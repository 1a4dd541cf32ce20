package bench

import (
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// batchSender sends up to sendBurst datagrams per sendmmsg(2) call over a
// connected socket, without allocating.
type batchSender struct {
	rc     syscall.RawConn
	hs     [sendBurst]unix.Mmsghdr
	iovs   [sendBurst]unix.Iovec
	n      int
	done   int
	errno  unix.Errno
	sendFn func(fd uintptr) bool
}

func (b *batchSender) init(c *net.UDPConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	b.rc = rc
	for i := range b.hs {
		b.hs[i].Hdr.Iov = &b.iovs[i]
		b.hs[i].Hdr.SetIovlen(1)
	}
	b.sendFn = b.sendmmsg
	return nil
}

// send sends the next n datagrams of s's pool and returns how many went out.
func (b *batchSender) send(s *sender, n int) (int, error) {
	for i := range n {
		d := s.take()
		b.iovs[i].Base = &d[0]
		b.iovs[i].SetLen(len(d))
	}
	b.n, b.done, b.errno = n, 0, 0
	if err := b.rc.Write(b.sendFn); err != nil {
		return b.done, err
	}
	if b.errno != 0 {
		return b.done, b.errno
	}
	return b.done, nil
}

func (b *batchSender) sendmmsg(fd uintptr) bool {
	for b.done < b.n {
		k, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, fd,
			uintptr(unsafe.Pointer(&b.hs[b.done])), uintptr(b.n-b.done), unix.MSG_DONTWAIT, 0, 0)
		switch errno {
		case 0:
			b.done += int(k)
		case unix.EINTR:
		case unix.EAGAIN:
			return false
		default:
			b.errno = errno
			return true
		}
	}
	return true
}

func threadID() int { return unix.Gettid() }
