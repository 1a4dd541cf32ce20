package xdp

import (
	"net/netip"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// countHandler counts datagrams without allocating.
type countHandler struct{ n atomic.Uint64 }

func (h *countHandler) HandlePacket(b []byte, from netip.AddrPort, _ Replier) { h.n.Add(1) }
func (h *countHandler) EndBatch()                                             {}

func TestReceivingDoesNotAllocate(t *testing.T) {
	v := newVeth(t)
	h := &countHandler{}
	startListener(t, testConfig(v.Host), []Route{{Port: 40040, NewHandler: func(int) Handler { return h }}})
	c := v.udpSender(t)
	to := netip.AddrPortFrom(v.HostAddr, 40040)
	payload := make([]byte, 40)
	send := func(n int) {
		want := h.n.Load() + uint64(n)
		for i := range n {
			if _, err := c.WriteToUDPAddrPort(payload, to); err != nil {
				t.Fatal(err)
			}
			if i%100 == 99 {
				for h.n.Load() < want-uint64(n)+uint64(i+1)-100 {
					time.Sleep(100 * time.Microsecond)
				}
			}
		}
		deadline := time.Now().Add(5 * time.Second)
		for h.n.Load() < want {
			if time.Now().After(deadline) {
				t.Fatalf("received %d, want %d", h.n.Load(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	send(500) // warm up
	const n = 5000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	send(n)
	runtime.ReadMemStats(&after)
	// MemStats counts every goroutine (the sender, the test, the runtime):
	// allow a few in total, not one per packet.
	allocs := after.Mallocs - before.Mallocs
	t.Logf("%d allocations over %d packets", allocs, n)
	if allocs > n/50 {
		t.Errorf("%d allocations over %d packets: the receive path allocates", allocs, n)
	}
}
