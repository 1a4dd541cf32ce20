package udp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestListenerDeliversEveryDatagramExactlyOnce(t *testing.T) {
	const senders, perSender = 16, 20
	tests := []struct {
		name    string
		addr    string
		readers int
		batched bool
	}{
		{"one batched reader receives every datagram once", "127.0.0.1:0", 1, true},
		{"one unbatched reader receives every datagram once", "127.0.0.1:0", 1, false},
		{"four batched readers share the datagrams without duplicates", "127.0.0.1:0", 4, true},
		{"four unbatched readers share the datagrams without duplicates", "127.0.0.1:0", 4, false},
		{"batched readers on IPv6 loopback receive every datagram once", "[::1]:0", 4, true},
		{"unbatched readers on IPv6 loopback receive every datagram once", "[::1]:0", 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkNoGoroutineLeak(t)
			ch := make(chan packet, senders*perSender*2)
			var endBatches atomic.Uint64
			l := listen(t, testConfig(tt.addr, tt.readers, tt.batched), newChanHandlers(ch, false, &endBatches))
			if l.LocalAddr().Port() == 0 {
				t.Fatalf("LocalAddr() = %v, want the port the kernel picked", l.LocalAddr())
			}
			for _, r := range l.readers {
				if got := addrPort(r.conn.LocalAddr()); got != l.LocalAddr() {
					t.Fatalf("reader %d bound to %v, want %v like the first", r.id, got, l.LocalAddr())
				}
			}

			want := make(map[string]netip.AddrPort)
			for s := range senders {
				c := dial(t, l.LocalAddr())
				for i := range perSender {
					payload := fmt.Sprintf("sender %d datagram %d", s, i)
					want[payload] = localAddrPort(c)
					if _, err := c.Write([]byte(payload)); err != nil {
						t.Fatalf("Write: %v", err)
					}
				}
			}

			got := receive(t, ch, len(want), 5*time.Second)
			time.Sleep(20 * time.Millisecond) // let duplicates, if any, arrive
			if extra := len(ch); extra > 0 {
				t.Errorf("%d datagrams more than sent", extra)
			}
			readers := make(map[int]int)
			for _, p := range got {
				from, ok := want[p.payload]
				if !ok {
					t.Errorf("unexpected or duplicate datagram %q", p.payload)
					continue
				}
				delete(want, p.payload)
				if p.from != from {
					t.Errorf("datagram %q from %v, want %v", p.payload, p.from, from)
				}
				readers[p.reader]++
			}
			if tt.readers > 1 && len(readers) < 2 {
				t.Errorf("all datagrams went to one of %d readers: %v", tt.readers, readers)
			}

			st := l.Stats()
			if got, want := st.Datagrams.Load(), uint64(senders*perSender); got != want {
				t.Errorf("Stats.Datagrams = %d, want %d", got, want)
			}
			eventually(t, "EndBatch has followed every batch", func() bool { return endBatches.Load() == st.Batches.Load() })
			if !tt.batched && st.Batches.Load() != st.Datagrams.Load() {
				t.Errorf("unbatched: Stats.Batches = %d, want one per datagram (%d)", st.Batches.Load(), st.Datagrams.Load())
			}
			t.Logf("datagrams per reader %v, mean batch %.2f", readers, float64(st.Datagrams.Load())/float64(st.Batches.Load()))
		})
	}
}

// serveConfigs are the read paths of a listener over one loopback socket.
var readPaths = []struct {
	name  string
	plain bool // hide the *net.UDPConn behind net.PacketConn
	batch bool
}{
	{"batched", false, true},
	{"unbatched", false, false},
	{"over a plain net.PacketConn", true, true},
}

// serveLoopback serves one IPv4 loopback socket through the given read path.
func serveLoopback(t *testing.T, plain, batched bool, cfg Config, newHandler func(int) Handler) *Listener {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	var pc net.PacketConn = c
	if plain {
		pc = plainConn{c}
	}
	cfg.Batched = batched
	l, err := Serve([]net.PacketConn{pc}, cfg, newHandler, nil)
	if err != nil {
		c.Close()
		t.Fatalf("Serve: %v", err)
	}
	run(t, l)
	return l
}

func TestReplyReachesTheSender(t *testing.T) {
	for _, p := range readPaths {
		t.Run("a reply "+p.name+" reaches the sender", func(t *testing.T) {
			checkNoGoroutineLeak(t)
			ch := make(chan packet, 16)
			l := serveLoopback(t, p.plain, p.batch, DefaultConfig(), newChanHandlers(ch, true, nil))
			c := dial(t, l.LocalAddr())
			for i := range 3 {
				msg := fmt.Sprintf("report %d", i)
				if _, err := c.Write([]byte(msg)); err != nil {
					t.Fatal(err)
				}
				buf := make([]byte, 64)
				n, err := c.Read(buf)
				if err != nil {
					t.Fatalf("reading reply: %v", err)
				}
				if got, want := string(buf[:n]), "ack:"+msg; got != want {
					t.Errorf("reply %q, want %q", got, want)
				}
				if got := <-ch; got.from != localAddrPort(c) {
					t.Errorf("handler saw sender %v, want %v", got.from, localAddrPort(c))
				}
			}
			if n := l.Stats().ReplyErrors.Load(); n != 0 {
				t.Errorf("Stats.ReplyErrors = %d, want 0", n)
			}
		})
	}
}

func TestOversizedDatagramsAreCountedAndNotDelivered(t *testing.T) {
	for _, p := range readPaths {
		t.Run("oversized datagrams read "+p.name+" are counted as truncated", func(t *testing.T) {
			checkNoGoroutineLeak(t)
			ch := make(chan packet, 16)
			cfg := DefaultConfig()
			cfg.MaxDatagram = 64
			l := serveLoopback(t, p.plain, p.batch, cfg, newChanHandlers(ch, false, nil))
			c := dial(t, l.LocalAddr())
			for _, size := range []int{65, 1000, 64} {
				if _, err := c.Write([]byte(strings.Repeat("x", size))); err != nil {
					t.Fatal(err)
				}
			}
			got := receive(t, ch, 1, 5*time.Second)[0]
			if len(got.payload) != 64 {
				t.Errorf("handler got a %d-byte datagram, want only the 64-byte one", len(got.payload))
			}
			st := l.Stats()
			if n := st.Truncated.Load(); n != 2 {
				t.Errorf("Stats.Truncated = %d, want 2", n)
			}
			if n := st.Datagrams.Load(); n != 1 {
				t.Errorf("Stats.Datagrams = %d, want 1", n)
			}
			if n := st.Bytes.Load(); n != 64 {
				t.Errorf("Stats.Bytes = %d, want 64", n)
			}
		})
	}
}

func TestRunStopsPromptly(t *testing.T) {
	newListener := func(t *testing.T) *Listener {
		l, err := Listen(testConfig("127.0.0.1:0", 4, true), newChanHandlers(make(chan packet, 1), false, nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	// runAsync starts Run and returns its result channel.
	runAsync := func(ctx context.Context, l *Listener) <-chan error {
		done := make(chan error, 1)
		go func() { done <- l.Run(ctx) }()
		return done
	}
	wait := func(t *testing.T, done <-chan error) error {
		t.Helper()
		select {
		case err := <-done:
			return err
		case <-time.After(2 * time.Second):
			t.Fatal("Run did not return within 2s")
			return nil
		}
	}

	t.Run("Close unblocks Run, which returns nil", func(t *testing.T) {
		checkNoGoroutineLeak(t)
		l := newListener(t)
		done := runAsync(context.Background(), l)
		time.Sleep(20 * time.Millisecond) // let the readers block
		start := time.Now()
		if err := l.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := wait(t, done); err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Errorf("Run took %v to return after Close", d)
		}
		if err := l.Close(); err != nil {
			t.Errorf("second Close = %v, want nil", err)
		}
	})
	t.Run("cancelling the context stops Run, which returns nil", func(t *testing.T) {
		checkNoGoroutineLeak(t)
		l := newListener(t)
		ctx, cancel := context.WithCancel(context.Background())
		done := runAsync(ctx, l)
		time.Sleep(20 * time.Millisecond)
		cancel()
		if err := wait(t, done); err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
		if err := l.Close(); err != nil {
			t.Errorf("Close after Run = %v, want nil", err)
		}
	})
	t.Run("Run after Close returns nil at once", func(t *testing.T) {
		checkNoGoroutineLeak(t)
		l := newListener(t)
		l.Close()
		if err := wait(t, runAsync(context.Background(), l)); err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	})
	t.Run("a second Run fails", func(t *testing.T) {
		checkNoGoroutineLeak(t)
		l := newListener(t)
		done := runAsync(context.Background(), l)
		time.Sleep(20 * time.Millisecond)
		if err := l.Run(context.Background()); err == nil {
			t.Error("second Run = nil, want an error")
		}
		l.Close()
		if err := wait(t, done); err != nil {
			t.Errorf("first Run = %v, want nil", err)
		}
	})
	t.Run("Run reports a socket closed behind the listener's back", func(t *testing.T) {
		checkNoGoroutineLeak(t)
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		l, err := Serve([]net.PacketConn{c}, DefaultConfig(), newChanHandlers(make(chan packet, 1), false, nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		done := runAsync(context.Background(), l)
		time.Sleep(20 * time.Millisecond)
		c.Close()
		if err := wait(t, done); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Run = %v, want an error wrapping net.ErrClosed", err)
		}
	})
}

func TestValidateNamesTheBadField(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Config)
		field string // "" means valid
	}{
		{"the default config is valid", func(*Config) {}, ""},
		{"a loopback address with a free port is valid", func(c *Config) { c.Addr = "[::1]:0" }, ""},
		{"a zero receive buffer keeps the kernel default", func(c *Config) { c.RecvBuffer = 0 }, ""},
		{"an address without a port is rejected", func(c *Config) { c.Addr = "127.0.0.1" }, "Addr"},
		{"a host name is rejected", func(c *Config) { c.Addr = "localhost:40040" }, "Addr"},
		{"a port above 65535 is rejected", func(c *Config) { c.Addr = ":65536" }, "Addr"},
		{"no readers is rejected", func(c *Config) { c.Readers = 0 }, "Readers"},
		{"more than 64 readers is rejected", func(c *Config) { c.Readers = 65 }, "Readers"},
		{"a zero batch is rejected", func(c *Config) { c.BatchSize = 0 }, "BatchSize"},
		{"a batch above 1024 is rejected", func(c *Config) { c.BatchSize = 1025 }, "BatchSize"},
		{"a negative receive buffer is rejected", func(c *Config) { c.RecvBuffer = -1 }, "RecvBuffer"},
		{"a receive buffer above 1 GiB is rejected", func(c *Config) { c.RecvBuffer = MaxRecvBuffer + 1 }, "RecvBuffer"},
		{"a zero datagram size is rejected", func(c *Config) { c.MaxDatagram = 0 }, "MaxDatagram"},
		{"a datagram size above 65535 is rejected", func(c *Config) { c.MaxDatagram = 65536 }, "MaxDatagram"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tt.edit(&cfg)
			err := cfg.Validate()
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.field != "" && err == nil:
				t.Errorf("Validate() = nil, want an error naming %s", tt.field)
			case tt.field != "" && !strings.Contains(err.Error(), "Config."+tt.field):
				t.Errorf("Validate() = %q, want it to name Config.%s", err, tt.field)
			}
		})
	}
	t.Run("a zero config names every bad field", func(t *testing.T) {
		err := Config{}.Validate()
		for _, field := range []string{"Addr", "Readers", "BatchSize", "MaxDatagram"} {
			if err == nil || !strings.Contains(err.Error(), "Config."+field) {
				t.Errorf("Validate() = %v, want it to name Config.%s", err, field)
			}
		}
	})
	t.Run("Listen refuses an invalid config", func(t *testing.T) {
		cfg := testConfig("127.0.0.1:0", 1, true)
		cfg.BatchSize = 0
		if _, err := Listen(cfg, newChanHandlers(nil, false, nil), nil); err == nil || !strings.Contains(err.Error(), "BatchSize") {
			t.Errorf("Listen = %v, want an error naming BatchSize", err)
		}
	})
	t.Run("Serve refuses no connections", func(t *testing.T) {
		if _, err := Serve(nil, DefaultConfig(), newChanHandlers(nil, false, nil), nil); err == nil {
			t.Error("Serve(nil) = nil error, want one")
		}
	})
}
