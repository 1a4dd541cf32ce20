package sock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"syscall"
)

// Conn is one UDP socket of a RoCEv2 endpoint, set up as the package
// documentation describes. Receive with a [Receiver], send with a [Sender].
type Conn struct {
	c        *net.UDPConn
	rc       syscall.RawConn
	local    netip.AddrPort // as bound; the address may be unspecified
	v6       bool           // an AF_INET6 socket: IPv4 peers are v4-mapped
	wildcard bool           // bound to an unspecified address: pick sources per packet
	gso      atomic.Bool    // Senders group runs of datagrams (EnableGSO); cleared when the kernel refuses
	gro      bool           // the kernel may coalesce received datagrams (EnableGRO)
}

// Listen binds a UDP socket to addr ("host:port"; port 0 picks a free
// one) and sets the options above. recvBuffer and sendBuffer are the
// socket buffer sizes asked for, in bytes (0 keeps the kernel's default).
func Listen(addr string, recvBuffer, sendBuffer int) (*Conn, error) {
	return listen(addr, recvBuffer, sendBuffer, false)
}

// ListenGroup binds n sockets to addr ("host:port"; port 0 picks a free
// one) as one SO_REUSEPORT group that only they serve, each set up as
// Listen sets one up; n = 1 is Listen. The first socket is bound without
// SO_REUSEPORT, so that it gets a port no other socket holds (with port 0)
// or fails as Listen does when the port is taken, then the others join it.
// A classic BPF program on the group sends each datagram to socket
// hash(source address, source port) mod n: every datagram of one peer
// socket reaches the same socket of the group, and a socket of the same
// user that joins the group later (Linux lets an SO_REUSEPORT socket bound
// to port 0 land on a port such a group holds) never receives. Linux only;
// elsewhere n above 1 is an error.
func ListenGroup(addr string, n, recvBuffer, sendBuffer int) ([]*Conn, error) {
	if n < 1 {
		return nil, fmt.Errorf("rdma: listen on %s: %d sockets", addr, n)
	}
	first, err := listen(addr, recvBuffer, sendBuffer, false)
	if err != nil {
		return nil, err
	}
	conns := []*Conn{first}
	if n == 1 {
		return conns, nil
	}
	fail := func(err error) ([]*Conn, error) {
		for _, c := range conns {
			c.Close()
		}
		return nil, err
	}
	if err := first.control(setReusePort); err != nil {
		return fail(fmt.Errorf("rdma: SO_REUSEPORT on %s: %w", addr, err))
	}
	host, _, _ := net.SplitHostPort(addr)
	join := net.JoinHostPort(host, strconv.Itoa(int(first.local.Port())))
	for range n - 1 {
		c, err := listen(join, recvBuffer, sendBuffer, true)
		if err != nil {
			return fail(err)
		}
		conns = append(conns, c)
	}
	if err := first.control(func(fd int) error { return attachSpread(fd, n) }); err != nil {
		return fail(fmt.Errorf("rdma: reuseport program on %s: %w", join, err))
	}
	return conns, nil
}

// control runs f on the socket's descriptor.
func (s *Conn) control(f func(fd int) error) error {
	var opErr error
	if err := s.rc.Control(func(fd uintptr) { opErr = f(int(fd)) }); err != nil {
		return err
	}
	return opErr
}

func listen(addr string, recvBuffer, sendBuffer int, reusePort bool) (*Conn, error) {
	var lc net.ListenConfig
	if reusePort {
		lc.Control = controlReusePort
	}
	pc, err := lc.ListenPacket(context.Background(), "udp", addr)
	if err != nil {
		return nil, fmt.Errorf("rdma: listen on %s: %w", addr, err)
	}
	c := pc.(*net.UDPConn)
	rc, err := c.SyscallConn()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("rdma: socket of %s: %w", addr, err)
	}
	ua := c.LocalAddr().(*net.UDPAddr)
	local := netip.AddrPortFrom(ua.AddrPort().Addr().Unmap(), ua.AddrPort().Port())
	s := &Conn{c: c, rc: rc, local: local, wildcard: local.Addr().IsUnspecified()}
	if err := s.setOptions(recvBuffer, sendBuffer); err != nil {
		c.Close()
		return nil, fmt.Errorf("rdma: socket options on %s: %w", addr, err)
	}
	return s, nil
}

// LocalAddr returns the address the socket is bound to (its IP may be
// unspecified), IPv4-mapped addresses unmapped.
func (s *Conn) LocalAddr() netip.AddrPort { return s.local }

// UDPConn returns the underlying socket, for code that sends or receives
// one datagram at a time (tests, tools) with the options Listen set.
func (s *Conn) UDPConn() *net.UDPConn { return s.c }

// Close closes the socket; a Read blocked on it returns an error that
// TransientError reports as permanent.
func (s *Conn) Close() error {
	s.wakeWaiters()
	return s.c.Close()
}

// TransientError reports whether a receive or send error leaves the socket
// usable (an interrupted call, an ICMP error reported on the socket, a
// short-lived lack of buffers), as opposed to a closed socket.
func TransientError(err error) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	switch errno {
	case syscall.EINTR, syscall.EAGAIN, syscall.ECONNREFUSED, syscall.EHOSTUNREACH,
		syscall.ENETUNREACH, syscall.ENOBUFS, syscall.ENOMEM:
		return true
	}
	return false
}
