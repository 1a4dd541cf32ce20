//go:build !linux

package udp

import (
	"errors"
	"net"
	"syscall"
)

// reusePort reports whether several sockets can share one address and have
// the kernel spread datagrams over them. Outside Linux a listener binds one
// socket.
const reusePort = false

// msgTrunc is unknown here: the spare byte of every receive buffer alone
// detects datagrams longer than Config.MaxDatagram.
const msgTrunc = 0

// setRecvBufferAfterBind is true: listenControl does not touch the socket.
const setRecvBufferAfterBind = true

// listenControl leaves the socket alone: outside Linux the receive buffer is
// set after bind with SetReadBuffer, and what the kernel granted is unknown.
func listenControl(int, bool, *int) func(network, address string, c syscall.RawConn) error {
	return nil
}

// openGroup fails: without SO_REUSEPORT load balancing a listener binds one
// socket, and [Listen] refuses more readers before binding any.
func openGroup(net.PacketConn) error {
	return errors.New("SO_REUSEPORT groups need Linux")
}

// socketInode is not available outside Linux.
func socketInode(syscall.Conn) (uint64, bool) { return 0, false }

// readKernelDrops cannot read a drop counter outside Linux.
func readKernelDrops(map[uint64]uint64) bool { return false }

// queued cannot tell outside Linux.
func queued(net.PacketConn) bool { return false }
