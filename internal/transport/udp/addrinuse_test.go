package udp

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// groupReaders is the number of readers of a listener whose sockets form an
// SO_REUSEPORT group where there is one (Linux), else 1.
func groupReaders() int {
	if reusePort {
		return 2
	}
	return 1
}

// listenIdle is Listen without Run; the listener is closed at cleanup.
func listenIdle(t *testing.T, addr string, readers int) *Listener {
	t.Helper()
	l, err := Listen(testConfig(addr, readers, true), newChanHandlers(nil, false, nil), nil)
	if err != nil {
		if isNoIPv6(err) {
			t.Skipf("IPv6 loopback unavailable: %v", err)
		}
		t.Fatalf("Listen(%s): %v", addr, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// requireAddrInUse fails the test unless Listen on addr fails with an error
// wrapping EADDRINUSE that names addr.
func requireAddrInUse(t *testing.T, addr string, readers int) {
	t.Helper()
	l, err := Listen(testConfig(addr, readers, true), newChanHandlers(nil, false, nil), nil)
	if err == nil {
		l.Close()
		t.Fatalf("a second Listen(%s) with %d readers succeeded, want EADDRINUSE: the kernel would split the datagrams between the two", addr, readers)
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("Listen(%s) = %v, want an error wrapping EADDRINUSE", addr, err)
	}
	if !strings.Contains(err.Error(), addr) {
		t.Errorf("Listen(%s) = %q, want the address named", addr, err)
	}
}

func TestListenRefusesAnAddressAlreadyHeld(t *testing.T) {
	port := func(l *Listener) string { return strconv.Itoa(int(l.LocalAddr().Port())) }
	tests := []struct {
		name   string
		first  string              // the first listener's address
		second func(string) string // the second's, given the first's port
	}{
		{"the same IPv4 address and port", "127.0.0.1:0", func(p string) string { return "127.0.0.1:" + p }},
		{"0.0.0.0 on the port of a listener on 127.0.0.1", "127.0.0.1:0", func(p string) string { return "0.0.0.0:" + p }},
		{"all addresses on the port of a listener on 127.0.0.1", "127.0.0.1:0", func(p string) string { return ":" + p }},
		{"127.0.0.1 on the port of a listener on all addresses", ":0", func(p string) string { return "127.0.0.1:" + p }},
		{"0.0.0.0 on the port of a listener on 0.0.0.0", "0.0.0.0:0", func(p string) string { return "0.0.0.0:" + p }},
		{"the same IPv6 address and port", "[::1]:0", func(p string) string { return "[::1]:" + p }},
		{"[::] on the port of a listener on ::1", "[::1]:0", func(p string) string { return "[::]:" + p }},
		{"::1 on the port of a listener on all addresses", ":0", func(p string) string { return "[::1]:" + p }},
	}
	for _, tt := range tests {
		for _, readers := range []int{1, groupReaders()} {
			t.Run(tt.name+", "+strconv.Itoa(readers)+" readers", func(t *testing.T) {
				if host, _, _ := net.SplitHostPort(tt.first); (host == "" || host == "0.0.0.0") && !reusePort {
					// Keep desktop firewalls quiet: bind beyond loopback on Linux only.
					t.Skip("a listener on all addresses, tested on Linux")
				}
				first := listenIdle(t, tt.first, groupReaders())
				requireAddrInUse(t, tt.second(port(first)), readers)
			})
		}
	}

	t.Run("a socket of another program that holds the port", func(t *testing.T) {
		for _, reuse := range []bool{false, true} {
			// A socket bound like one of a listener's group (SO_REUSEPORT
			// where there is one), or a plain one.
			var granted int
			lc := net.ListenConfig{Control: listenControl(0, reuse, &granted)}
			c, err := lc.ListenPacket(context.Background(), "udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			requireAddrInUse(t, c.LocalAddr().String(), groupReaders())
		}
	})

	t.Run("once the first listener is closed its port can be listened on again", func(t *testing.T) {
		first, err := Listen(testConfig("127.0.0.1:0", groupReaders(), true), newChanHandlers(nil, false, nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		addr := first.LocalAddr().String()
		requireAddrInUse(t, addr, groupReaders()) // leaves nothing bound
		if err := first.Close(); err != nil {
			t.Fatal(err)
		}
		second := listenIdle(t, addr, groupReaders())
		if second.LocalAddr().String() != addr {
			t.Errorf("LocalAddr() = %v, want %s", second.LocalAddr(), addr)
		}
		second.Close()
		listenIdle(t, addr, 1)
	})
}

func TestReadersOnAFixedPortShareTheDatagrams(t *testing.T) {
	if !reusePort {
		t.Skip("several readers need SO_REUSEPORT (Linux)")
	}
	checkNoGoroutineLeak(t)
	free, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	addr := free.LocalAddr().String()
	free.Close()

	const readers, senders = 3, 32
	ch := make(chan packet, senders)
	l := listen(t, testConfig(addr, readers, true), newChanHandlers(ch, false, nil))
	if got := l.LocalAddr().String(); got != addr {
		t.Fatalf("LocalAddr() = %s, want %s", got, addr)
	}
	to := netip.MustParseAddrPort(addr)
	for range senders {
		if _, err := dial(t, to).Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	got := make(map[int]int)
	for _, p := range receive(t, ch, senders, 5*time.Second) {
		got[p.reader]++
	}
	// 32 source ports hashed over 3 sockets: all on fewer than 3 has odds
	// of about 3*(2/3)^32, below 1e-5.
	if len(got) != readers {
		t.Errorf("datagrams per reader %v, want every one of the %d readers to receive", got, readers)
	}
}
