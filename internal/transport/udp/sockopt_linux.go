//go:build linux

package udp

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// reusePort reports whether several sockets can share one address and have
// the kernel spread datagrams over them (SO_REUSEPORT).
const reusePort = true

// msgTrunc is the flag with which the kernel reports a datagram longer than
// the buffer it was read into.
const msgTrunc = unix.MSG_TRUNC

// setRecvBufferAfterBind is false: listenControl sets the receive buffer.
const setRecvBufferAfterBind = false

// listenControl returns a net.ListenConfig.Control function that sets the
// receive buffer before bind, and SO_REUSEPORT too if join is set: the
// sockets that join a group another socket opened (see [openGroup]). It
// stores in *granted the smallest receive buffer the kernel granted, in the
// units of recvBuffer.
func listenControl(recvBuffer int, join bool, granted *int) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var opErr error
		err := c.Control(func(fd uintptr) {
			s := int(fd)
			if join {
				if err := unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
					opErr = os.NewSyscallError("setsockopt SO_REUSEPORT", err)
					return
				}
			}
			if recvBuffer == 0 {
				return
			}
			// SO_RCVBUFFORCE ignores net.core.rmem_max but needs
			// CAP_NET_ADMIN; SO_RCVBUF is silently capped at rmem_max.
			if unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, recvBuffer) != nil {
				if err := unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_RCVBUF, recvBuffer); err != nil {
					opErr = os.NewSyscallError("setsockopt SO_RCVBUF", err)
					return
				}
			}
			// The kernel doubles the value for bookkeeping overhead and
			// reports the doubled value.
			if got, err := unix.GetsockoptInt(s, unix.SOL_SOCKET, unix.SO_RCVBUF); err == nil && got/2 < *granted {
				*granted = got / 2
			}
		})
		if err != nil {
			return err
		}
		return opErr
	}
}

// openGroup sets SO_REUSEPORT on c, a socket already bound without it, so
// that the sockets bound to its address afterwards with SO_REUSEPORT (by
// the same user) join it in a group over which the kernel spreads
// datagrams. Binding the first socket of a group without SO_REUSEPORT is
// what makes the bind fail with EADDRINUSE when any socket, SO_REUSEPORT or
// not, already holds the address, and gives a port 0 a port that no
// SO_REUSEPORT group of the same user holds; with no gap between the check
// and the group, two processes starting together cannot both succeed.
func openGroup(c net.PacketConn) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return errors.New("not a socket")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var opErr error
	if err := rc.Control(func(fd uintptr) { opErr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1) }); err != nil {
		return err
	}
	if opErr != nil {
		return os.NewSyscallError("setsockopt SO_REUSEPORT", opErr)
	}
	return nil
}

// socketInode returns the inode number of a socket, the key of its row in
// /proc/net/udp.
func socketInode(c syscall.Conn) (uint64, bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, false
	}
	var st unix.Stat_t
	var statErr error
	if err := rc.Control(func(fd uintptr) { statErr = unix.Fstat(int(fd), &st) }); err != nil || statErr != nil {
		return 0, false
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return 0, false
	}
	return st.Ino, true
}

// procUDPFiles list every UDP socket of this network namespace; dual-stack
// sockets appear in udp6.
var procUDPFiles = [...]string{"/proc/net/udp", "/proc/net/udp6"}

// readKernelDrops sets drops[inode] to the "drops" column of /proc/net/udp
// and /proc/net/udp6 for every inode already present as a key in drops. It
// returns false if neither file could be read.
func readKernelDrops(drops map[uint64]uint64) bool {
	ok := false
	for _, name := range procUDPFiles {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		ok = true
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local rem st tx:rx tr:when retrnsmt uid timeout inode ref pointer drops
			fields := bytes.Fields(sc.Bytes())
			if len(fields) < 13 {
				continue
			}
			inode, err := strconv.ParseUint(string(fields[9]), 10, 64)
			if err != nil {
				continue
			}
			if _, mine := drops[inode]; !mine {
				continue
			}
			if n, err := strconv.ParseUint(string(fields[12]), 10, 64); err == nil {
				drops[inode] = n
			}
		}
		f.Close()
	}
	return ok
}

// queued reports whether a datagram waits in c's receive buffer (SIOCINQ:
// the size of the next one, which is 0 only for an empty datagram).
func queued(c net.PacketConn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var n int
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.SIOCINQ) }); err != nil || ierr != nil {
		return false
	}
	return n > 0
}
