package nf_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/tea/nf"
	"github.com/dta-go/dta/internal/tea/nf/tun"
)

var topoSeq atomic.Uint32

// topo is three network namespaces: a client (10.1.0.2) and a server
// (10.2.0.2) joined through an NF namespace that routes every packet from
// the client into the TUN device in, and every packet from the server into
// the TUN device out; what the NF writes to either is routed on by the
// kernel (by the main table: the client's and the server's prefixes).
type topo struct {
	cli, nfns, srv string
	in, out        *os.File
}

var (
	clientAddr = netip.MustParseAddrPort("10.1.0.2:40000")
	serverAddr = netip.MustParseAddrPort("10.2.0.2:9000")
	publicAddr = netip.MustParseAddrPort("203.0.113.7:50000")
)

func run(tb testing.TB, args ...string) {
	tb.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		tb.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// newTopo builds the namespaces, or skips the test when it cannot.
func newTopo(tb testing.TB) *topo {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		tb.Skip("ip(8) is not installed")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		tb.Skip("no /dev/net/tun")
	}
	id := fmt.Sprintf("%d%d", os.Getpid()%100000, topoSeq.Add(1))
	t := &topo{cli: "teanf-c" + id, nfns: "teanf-n" + id, srv: "teanf-s" + id}
	for _, ns := range []string{t.cli, t.nfns, t.srv} {
		run(tb, "ip", "netns", "add", ns)
		tb.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	}
	c0, c1, s0, s1 := "vc"+id, "vcn"+id, "vs"+id, "vsn"+id
	run(tb, "ip", "link", "add", c0, "netns", t.cli, "type", "veth", "peer", "name", c1, "netns", t.nfns)
	run(tb, "ip", "link", "add", s0, "netns", t.srv, "type", "veth", "peer", "name", s1, "netns", t.nfns)
	for _, c := range [][]string{
		{"-n", t.cli, "addr", "add", "10.1.0.2/24", "dev", c0},
		{"-n", t.cli, "link", "set", c0, "up"},
		{"-n", t.cli, "link", "set", "lo", "up"},
		{"-n", t.cli, "route", "add", "default", "via", "10.1.0.1"},
		{"-n", t.srv, "addr", "add", "10.2.0.2/24", "dev", s0},
		{"-n", t.srv, "link", "set", s0, "up"},
		{"-n", t.srv, "link", "set", "lo", "up"},
		{"-n", t.srv, "route", "add", "default", "via", "10.2.0.1"},
		{"-n", t.nfns, "addr", "add", "10.1.0.1/24", "dev", c1},
		{"-n", t.nfns, "addr", "add", "10.2.0.1/24", "dev", s1},
		{"-n", t.nfns, "link", "set", c1, "up"},
		{"-n", t.nfns, "link", "set", s1, "up"},
	} {
		run(tb, append([]string{"ip"}, c...)...)
	}
	tin, tout := "tin"+id, "tout"+id
	err := tun.InNetns(t.nfns, func() error {
		var err error
		if t.in, err = tun.Open(tin); err != nil {
			return err
		}
		t.out, err = tun.Open(tout)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { t.in.Close(); t.out.Close() })
	run(tb, "ip", "netns", "exec", t.nfns, "sh", "-c",
		"echo 1 > /proc/sys/net/ipv4/ip_forward; for f in /proc/sys/net/ipv4/conf/*/rp_filter; do echo 0 > $f; done")
	for _, c := range [][]string{
		{"-n", t.nfns, "rule", "add", "iif", c1, "lookup", "100"},
		{"-n", t.nfns, "route", "add", "default", "dev", tin, "table", "100"},
		{"-n", t.nfns, "rule", "add", "iif", s1, "lookup", "101"},
		{"-n", t.nfns, "route", "add", "default", "dev", tout, "table", "101"},
	} {
		run(tb, append([]string{"ip"}, c...)...)
	}
	return t
}

// listen opens a UDP socket bound to a in namespace ns.
func listen(tb testing.TB, ns string, a netip.AddrPort) *net.UDPConn {
	tb.Helper()
	var c *net.UDPConn
	err := tun.InNetns(ns, func() (err error) {
		c, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(a))
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// serve runs n on the topology's TUN devices until the test ends.
func (t *topo) serve(tb testing.TB, n *nf.NF) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- nf.Serve(ctx, n, t.in, t.out) }()
	tb.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				tb.Errorf("serve: %v", err)
			}
		case <-time.After(5 * time.Second):
			tb.Errorf("serve did not return after cancel")
		}
	})
}
