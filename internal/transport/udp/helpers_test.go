package udp

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// packet is one datagram as seen by a handler.
type packet struct {
	reader  int
	payload string
	from    netip.AddrPort
}

// chanHandler forwards every datagram to a channel and optionally echoes it
// back prefixed with "ack:".
type chanHandler struct {
	reader  int
	out     chan<- packet
	reply   bool
	batches *atomic.Uint64
	buf     []byte
}

func (h *chanHandler) HandlePacket(b []byte, from netip.AddrPort, r Replier) {
	h.out <- packet{reader: h.reader, payload: string(b), from: from}
	if h.reply {
		h.buf = append(append(h.buf[:0], "ack:"...), b...)
		r.Reply(h.buf, from)
	}
}

func (h *chanHandler) EndBatch() {
	if h.batches != nil {
		h.batches.Add(1)
	}
}

// newChanHandlers returns a newHandler function whose handlers all feed out.
func newChanHandlers(out chan<- packet, reply bool, batches *atomic.Uint64) func(int) Handler {
	return func(reader int) Handler {
		return &chanHandler{reader: reader, out: out, reply: reply, batches: batches}
	}
}

// testConfig is DefaultConfig on a loopback address with a free port.
func testConfig(addr string, readers int, batched bool) Config {
	cfg := DefaultConfig()
	cfg.Addr = addr
	cfg.Readers = readers
	cfg.Batched = batched
	cfg.RecvBuffer = 4 << 20
	return cfg
}

// checkNoGoroutineLeak fails the test if, once every later cleanup has run,
// more goroutines are alive than when it was called. Call it first.
func checkNoGoroutineLeak(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(2 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				t.Errorf("goroutines leaked: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// run starts l.Run and registers a cleanup that closes l and requires Run to
// return nil promptly.
func run(t testing.TB, l *Listener) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- l.Run(context.Background()) }()
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v, want nil", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("Run did not return within 5s of Close")
		}
	})
}

// listen is Listen plus run, failing the test on error.
func listen(t testing.TB, cfg Config, newHandler func(int) Handler) *Listener {
	t.Helper()
	l, err := Listen(cfg, newHandler, nil)
	if err != nil {
		if isNoIPv6(err) {
			t.Skipf("IPv6 loopback unavailable: %v", err)
		}
		t.Fatalf("Listen(%+v): %v", cfg, err)
	}
	run(t, l)
	return l
}

// isNoIPv6 reports whether binding failed because the host has no IPv6.
func isNoIPv6(err error) bool {
	return errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EAFNOSUPPORT)
}

// dial returns a UDP socket connected to the listener, with a read deadline
// that bounds the test.
func dial(t testing.TB, to netip.AddrPort) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(to))
	if err != nil {
		t.Fatalf("DialUDP(%v): %v", to, err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

// localAddrPort returns a conn's local address with IPv4-mapped addresses
// unmapped, as handlers see senders.
func localAddrPort(c net.Conn) netip.AddrPort {
	ap := c.LocalAddr().(*net.UDPAddr).AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// receive collects n packets from ch, failing the test after timeout.
func receive(t *testing.T, ch <-chan packet, n int, timeout time.Duration) []packet {
	t.Helper()
	got := make([]packet, 0, n)
	deadline := time.After(timeout)
	for len(got) < n {
		select {
		case p := <-ch:
			got = append(got, p)
		case <-deadline:
			t.Fatalf("received %d of %d datagrams within %v", len(got), n, timeout)
		}
	}
	return got
}

// eventually polls cond until it holds or two seconds pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// plainConn hides the *net.UDPConn behind the net.PacketConn interface, to
// exercise the generic read path.
type plainConn struct{ net.PacketConn }
