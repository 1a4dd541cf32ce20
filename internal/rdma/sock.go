package rdma

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// sock is one UDP socket of an endpoint with batched, allocation-free
// receive (with each datagram's destination address) and send (with a
// chosen source address).
//
// The ICRC covers the IPv4 ID and DF bit, which a socket does not show: the
// socket is left unconnected and set to IP_PMTUDISC_DO, so Linux sends every
// IPv4 packet with DF and ID 0, and both ends compute and check ICRCs for
// that header (Envelope.ID 0, NoDF false).
type sock struct {
	c        *net.UDPConn
	rc       syscall.RawConn
	local    netip.AddrPort // as bound; the address may be unspecified
	v6       bool           // an AF_INET6 socket: IPv4 peers are v4-mapped
	wildcard bool           // bound to an unspecified address: pick sources per packet
}

// listenSock binds a UDP socket to addr and sets the options above.
func listenSock(addr string, rcvbuf, sndbuf int) (*sock, error) {
	var lc net.ListenConfig
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
	s := &sock{c: c, rc: rc, local: local, wildcard: local.Addr().IsUnspecified()}
	if err := s.setOptions(rcvbuf, sndbuf); err != nil {
		c.Close()
		return nil, fmt.Errorf("rdma: socket options on %s: %w", addr, err)
	}
	return s, nil
}

func (s *sock) close() error { return s.c.Close() }
