//go:build linux

// Package vethtest gives tests a veth pair whose ends are in two network
// namespaces, so that packets really cross an interface (AF_XDP, XDP
// programs, a collector and a translator on "different hosts"). One end
// stays in the test's namespace, the other goes into a namespace of its
// own; both are removed when the test ends.
//
// Each test package that uses it owns a Range of /24 subnets in the
// benchmarking block 198.18.0.0/15, so that packages go test runs at the
// same time never route the same subnet to two interfaces. It needs Linux,
// root and iproute2: [Need] skips a test without them, except in CI
// (CI=true), where it fails it. It must not be imported outside tests.
package vethtest

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// Range is the block of /24 subnets 198.<Second>.<First>.0 to
// 198.<Second>.<First+Count-1>.0 one test package takes its pairs from.
type Range struct{ Second, First, Count byte }

// The ranges of the packages that use veth pairs. dta bench's own pairs
// (--transport xdp, --responder-path) take 198.19.0-199.
var (
	RangeXDP  = Range{18, 0, 250}  // internal/transport/xdp
	RangeCLI  = Range{19, 200, 50} // internal/cli
	RangeRDMA = Range{19, 250, 6}  // internal/rdma
)

// Pair is a veth pair: Host stays in the test's network namespace, Peer
// lives in namespace NS. Each end knows the other's MAC address from the
// start (permanent neighbour entries), and NS's loopback is up.
type Pair struct {
	NS, Host, Peer     string
	HostAddr, PeerAddr netip.Addr
	HostMAC, PeerMAC   [6]byte
	PeerIndex          int // Peer's interface index in NS
}

var seq atomic.Uint32

// Need skips the test without root or the ip command, and fails it
// instead in CI (CI=true), where such tests must run.
func Need(t testing.TB) {
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
		t.Fatalf("this test needs root and iproute2 in CI: %s", why)
	}
	t.Skipf("this test needs root and iproute2: %s", why)
}

// Run runs a command and returns its combined output; it fails the test if
// the command fails.
func Run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// New creates a namespace and a veth pair with queues receive and transmit
// queues on each end, addressed .1 (Host) and .2 (Peer) in a /24 of r,
// removed when the test ends. It calls Need first.
func New(t testing.TB, r Range, queues int) *Pair {
	t.Helper()
	Need(t)
	n := seq.Add(1)
	id := fmt.Sprintf("%d%d", os.Getpid()%100000, n)
	k := r.First + byte((os.Getpid()*7+int(n))%int(r.Count))
	p := &Pair{
		NS: "dtavt" + id, Host: "vta" + id, Peer: "vtb" + id,
		HostAddr: netip.AddrFrom4([4]byte{198, r.Second, k, 1}),
		PeerAddr: netip.AddrFrom4([4]byte{198, r.Second, k, 2}),
	}
	Run(t, "ip", "netns", "add", p.NS)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", p.NS).Run() })
	q := fmt.Sprint(queues)
	Run(t, "ip", "link", "add", p.Host, "numtxqueues", q, "numrxqueues", q, "type", "veth",
		"peer", "name", p.Peer, "netns", p.NS, "numtxqueues", q, "numrxqueues", q)
	t.Cleanup(func() { exec.Command("ip", "link", "del", p.Host).Run() })
	Run(t, "ip", "addr", "add", p.HostAddr.String()+"/24", "dev", p.Host)
	Run(t, "ip", "link", "set", p.Host, "up")
	Run(t, "ip", "-n", p.NS, "addr", "add", p.PeerAddr.String()+"/24", "dev", p.Peer)
	Run(t, "ip", "-n", p.NS, "link", "set", p.Peer, "up")
	Run(t, "ip", "-n", p.NS, "link", "set", "lo", "up")
	ifc, err := net.InterfaceByName(p.Host)
	if err != nil {
		t.Fatal(err)
	}
	copy(p.HostMAC[:], ifc.HardwareAddr)
	p.InNS(t, func() {
		ifc, err := net.InterfaceByName(p.Peer)
		if err != nil {
			t.Error(err)
			return
		}
		p.PeerIndex = ifc.Index
		copy(p.PeerMAC[:], ifc.HardwareAddr)
	})
	// Without the neighbours known, the first datagrams wait for an ARP
	// reply, and one sent as the reply lands can overtake them.
	Run(t, "ip", "-n", p.NS, "neigh", "replace", p.HostAddr.String(), "lladdr", net.HardwareAddr(p.HostMAC[:]).String(), "dev", p.Peer, "nud", "permanent")
	Run(t, "ip", "neigh", "replace", p.PeerAddr.String(), "lladdr", net.HardwareAddr(p.PeerMAC[:]).String(), "dev", p.Host, "nud", "permanent")
	return p
}

// InNS runs f on an OS thread in namespace NS: sockets f opens belong to it
// and may be used from anywhere afterwards. The thread is discarded.
func (p *Pair) InNS(t testing.TB, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		ns, err := os.Open("/run/netns/" + p.NS)
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

// Attached reports whether an XDP program is attached to Host.
func (p *Pair) Attached(t testing.TB) bool {
	t.Helper()
	return strings.Contains(Run(t, "ip", "link", "show", "dev", p.Host), "prog/xdp")
}
