package udp

import (
	"net"
	"net/netip"
	"runtime"
	"testing"
)

// echoHandler replies to every datagram with the datagram itself and signals
// each batch on a channel, without allocating.
type echoHandler struct{ batch chan<- struct{} }

func (h echoHandler) HandlePacket(b []byte, from netip.AddrPort, r Replier) { r.Reply(b, from) }
func (h echoHandler) EndBatch()                                             { h.batch <- struct{}{} }

func TestSteadyStateDoesNotAllocate(t *testing.T) {
	const warmup, cycles = 200, 5000
	for _, mode := range []string{"batched", "unbatched"} {
		t.Run("a "+mode+" receive and reply cycle does not allocate", func(t *testing.T) {
			checkNoGoroutineLeak(t)
			batches := make(chan struct{}, 1)
			l := listen(t, testConfig("127.0.0.1:0", 1, mode == "batched"), func(int) Handler { return echoHandler{batches} })
			c := dial(t, l.LocalAddr())
			payload := make([]byte, 32)
			reply := make([]byte, 64)
			cycle := func() {
				if _, err := c.Write(payload); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Read(reply); err != nil {
					t.Fatal(err)
				}
				<-batches
			}
			for range warmup {
				cycle()
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range cycles {
				cycle()
			}
			runtime.ReadMemStats(&after)
			// MemStats counts every goroutine: the sender, the reader
			// and the runtime. Allow a few allocations in total, not one
			// per datagram.
			allocs := after.Mallocs - before.Mallocs
			t.Logf("%d allocations over %d datagrams and replies", allocs, cycles)
			if allocs > 50 {
				t.Errorf("%d allocations over %d receive+reply cycles, want a small constant (<= 50)", allocs, cycles)
			}
		})
	}
}

// TestReplyDoesNotAllocate pins the reply path on its own.
func TestReplyDoesNotAllocate(t *testing.T) {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := Serve([]net.PacketConn{c}, DefaultConfig(), newChanHandlers(nil, false, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sink, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	to := sink.LocalAddr().(*net.UDPAddr).AddrPort()
	var r Replier = l.readers[0]
	b := make([]byte, 16)
	if n := testing.AllocsPerRun(1000, func() { r.Reply(b, to) }); n != 0 {
		t.Errorf("Reply allocates %v times per call, want 0", n)
	}
}
