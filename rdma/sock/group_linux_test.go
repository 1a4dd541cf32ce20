package sock

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Every datagram of one peer socket reaches the socket of the group the
// program names for it, and a socket of the same user that joins the group
// afterwards receives nothing.
func TestListenGroupSpreadsPeersAndKeepsIntrudersOut(t *testing.T) {
	for _, tc := range []struct {
		name, host string
		n, peers   int
	}{
		{"four IPv4 sockets", "127.0.0.1", 4, 24},
		{"three IPv6 sockets", "::1", 3, 18},
		{"two sockets on the wildcard address", "", 2, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conns, err := ListenGroup(net.JoinHostPort(tc.host, "0"), tc.n, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range conns {
				t.Cleanup(func() { c.Close() })
			}
			if len(conns) != tc.n {
				t.Fatalf("%d sockets, want %d", len(conns), tc.n)
			}
			port := conns[0].LocalAddr().Port()
			for _, c := range conns {
				if c.LocalAddr().Port() != port {
					t.Fatalf("ports %d and %d", port, c.LocalAddr().Port())
				}
			}
			// An intruder: the same user, SO_REUSEPORT, the group's address.
			lc := net.ListenConfig{Control: controlReusePort}
			in, err := lc.ListenPacket(context.Background(), "udp", net.JoinHostPort(tc.host, itoa(port)))
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()

			peerHost := tc.host
			if peerHost == "" {
				peerHost = "127.0.0.1"
			}
			to := netip.AddrPortFrom(netip.MustParseAddr(peerHost), port)
			want := map[netip.AddrPort]int{}
			used := map[int]bool{}
			for range tc.peers {
				p, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(to.Addr(), 0)))
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close()
				from := p.LocalAddr().(*net.UDPAddr).AddrPort()
				from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
				want[from] = spreadIndex(from, tc.n)
				used[want[from]] = true
				for range 3 {
					if _, err := p.WriteToUDPAddrPort([]byte("x"), to); err != nil {
						t.Fatal(err)
					}
				}
			}
			got := map[netip.AddrPort]int{}
			count := 0
			for i, c := range conns {
				b := make([]byte, 64)
				for {
					c.UDPConn().SetReadDeadline(time.Now().Add(100 * time.Millisecond))
					_, from, err := c.UDPConn().ReadFromUDPAddrPort(b)
					if errors.Is(err, os.ErrDeadlineExceeded) {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
					if j, ok := got[from]; ok && j != i {
						t.Errorf("datagrams of %v reached sockets %d and %d", from, j, i)
					}
					got[from] = i
					count++
				}
			}
			if count != 3*tc.peers {
				t.Errorf("%d datagrams received, want %d", count, 3*tc.peers)
			}
			for from, i := range want {
				if got[from] != i {
					t.Errorf("datagrams of %v reached socket %d, the program names %d", from, got[from], i)
				}
			}
			if tc.peers >= 4*tc.n && len(used) < 2 {
				t.Errorf("%d peers all on one socket", tc.peers)
			}
			in.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			if _, _, err := in.ReadFrom(make([]byte, 64)); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("the intruder received a datagram (%v)", err)
			}
		})
	}
}

func TestListenGroupRefusesATakenPort(t *testing.T) {
	taken, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.LocalAddr().String()
	if _, err := ListenGroup(addr, 2, 0, 0); !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("ListenGroup on a taken port: %v, want EADDRINUSE", err)
	}
	// Nor does a group slip in beside another group of the same user.
	other, err := ListenGroup("127.0.0.1:0", 2, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, c := range other {
			c.Close()
		}
	}()
	if _, err := ListenGroup(other[0].LocalAddr().String(), 2, 0, 0); !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("ListenGroup on another group's port: %v, want EADDRINUSE", err)
	}
}

func itoa(p uint16) string { return strconv.Itoa(int(p)) }
