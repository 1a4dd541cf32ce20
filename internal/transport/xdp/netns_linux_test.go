package xdp

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dta-go/dta/internal/vethtest"
)

// vethPair is a veth pair (vethtest.Pair): Host stays in the test's
// network namespace and carries the listener; Peer lives in namespace NS,
// from where reports are sent.
type vethPair struct{ *vethtest.Pair }

// newVeth creates a namespace and a veth pair in this package's subnets,
// removed when the test ends.
func newVeth(t testing.TB) *vethPair { return newVethQueues(t, 1) }

// newVethQueues is newVeth with that many queues on each end.
func newVethQueues(t testing.TB, queues int) *vethPair {
	return &vethPair{vethtest.New(t, vethtest.RangeXDP, queues)}
}

// udpSender returns a UDP socket in the peer namespace.
func (v *vethPair) udpSender(t testing.TB) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	v.InNS(t, func() {
		var err error
		c, err = net.ListenUDP("udp4", &net.UDPAddr{IP: v.PeerAddr.AsSlice()})
		if err != nil {
			t.Error(err)
		}
	})
	if c == nil {
		t.FailNow()
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rawSender returns a function that sends an Ethernet frame as is from the
// peer end.
func (v *vethPair) rawSender(t testing.TB) func(frame []byte) {
	t.Helper()
	fd := -1
	v.InNS(t, func() {
		var err error
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Error(err)
		}
	})
	if fd < 0 {
		t.FailNow()
	}
	t.Cleanup(func() { unix.Close(fd) })
	sa := &unix.SockaddrLinklayer{Ifindex: v.PeerIndex, Halen: 6}
	copy(sa.Addr[:], v.HostMAC[:])
	return func(frame []byte) {
		if err := unix.Sendto(fd, frame, 0, sa); err != nil {
			t.Fatalf("send raw frame: %v", err)
		}
	}
}

// ping sends one ICMP echo request from the peer namespace to the host end
// and waits for the reply.
func (v *vethPair) ping(t testing.TB) error {
	t.Helper()
	var c net.PacketConn
	var err error
	v.InNS(t, func() { c, err = net.ListenPacket("ip4:icmp", v.PeerAddr.String()) })
	if err != nil {
		return err
	}
	defer c.Close()
	req := []byte{8, 0, 0, 0, 0x12, 0x34, 0, 1, 'd', 't', 'a', '!'}
	binary.BigEndian.PutUint16(req[2:], ^ipv4Checksum(req))
	if _, err := c.WriteTo(req, &net.IPAddr{IP: v.HostAddr.AsSlice()}); err != nil {
		return err
	}
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	buf := make([]byte, 1500)
	for {
		n, _, err := c.ReadFrom(buf)
		if err != nil {
			return fmt.Errorf("no echo reply: %w", err)
		}
		if n >= 8 && buf[0] == 0 && buf[4] == 0x12 && buf[5] == 0x34 {
			return nil
		}
	}
}

func addrPort(a netip.Addr, port uint16) netip.AddrPort { return netip.AddrPortFrom(a, port) }
