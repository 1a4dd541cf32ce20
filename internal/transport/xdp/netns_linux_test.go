package xdp

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// vethPair is a veth pair: Host stays in the test's network namespace and
// carries the listener; Peer lives in namespace NS, from where reports are
// sent.
type vethPair struct {
	NS, Host, Peer     string
	HostAddr, PeerAddr netip.Addr
	HostMAC            [6]byte
	PeerIndex          int
}

var vethSeq atomic.Uint32

// needRoot skips the test when it cannot create namespaces, and fails it
// instead in CI (CI=true), where the XDP tests must run.
func needRoot(t testing.TB) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "not root"
	} else if _, err := exec.LookPath("ip"); err != nil {
		why = "no ip command"
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("XDP tests need root and iproute2 in CI: %s", why)
	}
	t.Skipf("XDP tests need root and iproute2: %s", why)
}

func run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// newVeth creates a namespace and a veth pair with IPv4 addresses in
// 198.18.0.0/15 (the benchmarking range), removed when the test ends.
func newVeth(t testing.TB) *vethPair { return newVethQueues(t, 1) }

// newVethQueues is newVeth with that many queues on each end.
func newVethQueues(t testing.TB, queues int) *vethPair {
	t.Helper()
	needRoot(t)
	n := vethSeq.Add(1)
	id := fmt.Sprintf("%d%d", os.Getpid()%100000, n)
	k := (os.Getpid()*7 + int(n)) % 250
	v := &vethPair{
		NS: "dtaxn" + id, Host: "dxa" + id, Peer: "dxb" + id,
		HostAddr: netip.AddrFrom4([4]byte{198, 18, byte(k), 1}),
		PeerAddr: netip.AddrFrom4([4]byte{198, 18, byte(k), 2}),
	}
	run(t, "ip", "netns", "add", v.NS)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", v.NS).Run() })
	q := fmt.Sprint(queues)
	run(t, "ip", "link", "add", v.Host, "numtxqueues", q, "numrxqueues", q, "type", "veth", "peer", "name", v.Peer, "netns", v.NS, "numtxqueues", q, "numrxqueues", q)
	t.Cleanup(func() { exec.Command("ip", "link", "del", v.Host).Run() })
	run(t, "ip", "addr", "add", v.HostAddr.String()+"/24", "dev", v.Host)
	run(t, "ip", "link", "set", v.Host, "up")
	run(t, "ip", "-n", v.NS, "addr", "add", v.PeerAddr.String()+"/24", "dev", v.Peer)
	run(t, "ip", "-n", v.NS, "link", "set", v.Peer, "up")
	run(t, "ip", "-n", v.NS, "link", "set", "lo", "up")
	ifc, err := net.InterfaceByName(v.Host)
	if err != nil {
		t.Fatal(err)
	}
	copy(v.HostMAC[:], ifc.HardwareAddr)
	var peerMAC net.HardwareAddr
	v.inNS(t, func() {
		p, err := net.InterfaceByName(v.Peer)
		if err != nil {
			t.Error(err)
			return
		}
		v.PeerIndex, peerMAC = p.Index, p.HardwareAddr
	})
	// Each end knows the other's MAC from the start: without it the first
	// datagrams wait in the neighbour's queue for an ARP reply, and one
	// sent as the reply lands can leave before them (a test once saw
	// datagram 3 before 2).
	run(t, "ip", "-n", v.NS, "neigh", "replace", v.HostAddr.String(), "lladdr", ifc.HardwareAddr.String(), "dev", v.Peer, "nud", "permanent")
	run(t, "ip", "neigh", "replace", v.PeerAddr.String(), "lladdr", peerMAC.String(), "dev", v.Host, "nud", "permanent")
	return v
}

// inNS runs f on an OS thread in the peer namespace. Sockets opened by f
// belong to that namespace and may be used anywhere afterwards. The thread
// is discarded.
func (v *vethPair) inNS(t testing.TB, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		ns, err := os.Open("/run/netns/" + v.NS)
		if err != nil {
			t.Error(err)
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			t.Error(err)
			return
		}
		f()
	}()
	<-done
}

// udpSender returns a UDP socket in the peer namespace.
func (v *vethPair) udpSender(t testing.TB) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	v.inNS(t, func() {
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
	v.inNS(t, func() {
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

// xdpAttached reports whether ip link shows an XDP program on dev.
func xdpAttached(t testing.TB, dev string) bool {
	return strings.Contains(run(t, "ip", "link", "show", "dev", dev), "prog/xdp")
}

// ping sends one ICMP echo request from the peer namespace to the host end
// and waits for the reply.
func (v *vethPair) ping(t testing.TB) error {
	t.Helper()
	var c net.PacketConn
	var err error
	v.inNS(t, func() { c, err = net.ListenPacket("ip4:icmp", v.PeerAddr.String()) })
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
