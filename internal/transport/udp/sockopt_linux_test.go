package udp

import (
	"bytes"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestListenRequestsTheReceiveBuffer(t *testing.T) {
	checkNoGoroutineLeak(t)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	cfg := testConfig("127.0.0.1:0", 2, true)
	cfg.RecvBuffer = 64 << 20
	l, err := Listen(cfg, newChanHandlers(nil, false, nil), logger)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	warned := strings.Count(logs.String(), "smaller receive buffer")
	for _, r := range l.readers {
		granted := recvBufferOf(t, r.udp)
		switch {
		case granted >= cfg.RecvBuffer && warned != 0:
			t.Errorf("granted %d bytes as asked, yet logged %q", granted, logs.String())
		case granted < cfg.RecvBuffer && warned != 1:
			t.Errorf("granted %d of %d bytes; logged the shortfall %d times, want once", granted, cfg.RecvBuffer, warned)
		}
		t.Logf("reader %d: receive buffer %d bytes (asked %d)", r.id, granted, cfg.RecvBuffer)
	}
}

// recvBufferOf returns the receive buffer the kernel granted a socket, in the
// units of Config.RecvBuffer.
func recvBufferOf(t *testing.T, c *net.UDPConn) int {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var size int
	var sockErr error
	rc.Control(func(fd uintptr) { size, sockErr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF) })
	if sockErr != nil {
		t.Fatalf("getsockopt SO_RCVBUF: %v", sockErr)
	}
	return size / 2
}

// listenDualStackLoopback returns an AF_INET6 socket that accepts IPv4
// (IPV6_V6ONLY off) bound to ::ffff:127.0.0.1, so IPv4 senders arrive as
// IPv4-mapped IPv6 addresses, as on a listener bound to ":40040", without
// listening beyond loopback.
func listenDualStackLoopback(t *testing.T) *net.UDPConn {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no IPv6 sockets: %v", err)
	}
	f := os.NewFile(uintptr(fd), "dual-stack")
	defer f.Close()
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0); err != nil {
		t.Fatal(err)
	}
	sa := &unix.SockaddrInet6{Addr: [16]byte{10: 0xff, 11: 0xff, 12: 127, 15: 1}}
	if err := unix.Bind(fd, sa); err != nil {
		t.Skipf("cannot bind ::ffff:127.0.0.1: %v", err)
	}
	pc, err := net.FilePacketConn(f)
	if err != nil {
		t.Fatal(err)
	}
	return pc.(*net.UDPConn)
}

func TestDualStackSocketsReportIPv4SendersUnmapped(t *testing.T) {
	for _, mode := range []string{"batched", "unbatched"} {
		t.Run("a "+mode+" reader unmaps IPv4 senders and replies reach them", func(t *testing.T) {
			batched := mode == "batched"
			checkNoGoroutineLeak(t)
			c := listenDualStackLoopback(t)
			ch := make(chan packet, 4)
			cfg := DefaultConfig()
			cfg.Batched = batched
			l, err := Serve([]net.PacketConn{c}, cfg, newChanHandlers(ch, true, nil), nil)
			if err != nil {
				c.Close()
				t.Fatal(err)
			}
			run(t, l)
			if !l.LocalAddr().Addr().Is4() {
				t.Errorf("LocalAddr() = %v, want an unmapped IPv4 address", l.LocalAddr())
			}

			sender := dial(t, l.LocalAddr())
			if _, err := sender.Write([]byte("hello")); err != nil {
				t.Fatal(err)
			}
			got := receive(t, ch, 1, 5*time.Second)[0]
			if want := localAddrPort(sender); got.from != want || !got.from.Addr().Is4() {
				t.Errorf("handler saw sender %v, want %v (plain IPv4)", got.from, want)
			}
			buf := make([]byte, 16)
			n, err := sender.Read(buf)
			if err != nil || string(buf[:n]) != "ack:hello" {
				t.Errorf("reply %q, %v; want %q", buf[:n], err, "ack:hello")
			}
		})
	}
}
