package udp

import (
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

// countHandler counts datagrams and payload bytes, touching every payload.
type countHandler struct {
	datagrams atomic.Uint64
	sum       uint64
}

func (h *countHandler) HandlePacket(b []byte, _ netip.AddrPort, _ Replier) {
	h.sum += uint64(b[0])
	h.datagrams.Add(1)
}

func (h *countHandler) EndBatch() {}

// BenchmarkLoopbackIngest sends 32-byte datagrams from the benchmark
// goroutine to one reader over loopback, 64 per sendmmsg call so that the
// reader rather than the sender is the bottleneck. One op is one datagram.
// datagrams/s is the rate at which the reader's handler saw them, measured
// until the last one arrived; lost_% is what the kernel dropped for lack of
// receive buffer.
func BenchmarkLoopbackIngest(b *testing.B) {
	for _, mode := range []string{"batched", "unbatched"} {
		b.Run(mode, func(b *testing.B) {
			h := new(countHandler)
			cfg := testConfig("127.0.0.1:0", 1, mode == "batched")
			cfg.RecvBuffer = 64 << 20
			l := listen(b, cfg, func(int) Handler { return h })
			c := dial(b, l.LocalAddr())
			payload := make([]byte, 32)
			payload[0] = 1
			const burst = 64
			sender, err := newBatchSender(c, payload, burst)
			if err != nil {
				b.Fatal(err)
			}

			b.ReportAllocs()
			b.SetBytes(int64(len(payload)))
			start := time.Now()
			var sent uint64
			for b.Loop() {
				if sent++; sent%burst == 0 {
					if err := sender.send(); err != nil {
						b.Fatal(err)
					}
				}
			}
			sent -= sent % burst
			// Wait for the reader to catch up, or to stall on what the
			// kernel dropped.
			last, lastChange := h.datagrams.Load(), time.Now()
			for last < sent && time.Since(lastChange) < 200*time.Millisecond {
				time.Sleep(time.Millisecond)
				if n := h.datagrams.Load(); n != last {
					last, lastChange = n, time.Now()
				}
			}
			elapsed := lastChange.Sub(start)
			st := l.Stats()
			b.ReportMetric(float64(last)/elapsed.Seconds(), "datagrams/s")
			b.ReportMetric(100*float64(sent-last)/float64(sent), "lost_%")
			b.ReportMetric(float64(st.Datagrams.Load())/float64(max(st.Batches.Load(), 1)), "datagrams/batch")
		})
	}
}

// gateHandler counts datagrams; a datagram starting with 0xff parks the
// reader until gate is signalled, so a backlog can build up in the socket.
type gateHandler struct {
	paused chan struct{}
	gate   chan struct{}
	done   chan struct{}
	count  int
	target int
}

func (h *gateHandler) HandlePacket(b []byte, _ netip.AddrPort, _ Replier) {
	if b[0] == 0xff {
		h.paused <- struct{}{}
		<-h.gate
		return
	}
	if h.count++; h.count == h.target {
		h.done <- struct{}{}
	}
}

func (h *gateHandler) EndBatch() {}

// BenchmarkDrainBacklog measures the reader alone: with the reader parked,
// a backlog of 4096 32-byte datagrams is queued on its socket (timer
// stopped), then the timer runs while the reader drains it. One op is one
// backlog; datagrams/s is the receive rate of the reader's core.
func BenchmarkDrainBacklog(b *testing.B) {
	const backlog, burst = 4096, 64
	for _, mode := range []string{"batched", "unbatched"} {
		b.Run(mode, func(b *testing.B) {
			h := &gateHandler{paused: make(chan struct{}), gate: make(chan struct{}), done: make(chan struct{}, 1)}
			cfg := testConfig("127.0.0.1:0", 1, mode == "batched")
			cfg.RecvBuffer = 64 << 20
			l := listen(b, cfg, func(int) Handler { return h })
			c := dial(b, l.LocalAddr())
			payload := make([]byte, 32)
			sender, err := newBatchSender(c, payload, burst)
			if err != nil {
				b.Fatal(err)
			}
			pause := []byte{0xff}

			b.ReportAllocs()
			var iters int
			for b.Loop() {
				b.StopTimer()
				if _, err := c.Write(pause); err != nil {
					b.Fatal(err)
				}
				<-h.paused
				h.target += backlog
				for range backlog / burst {
					if err := sender.send(); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				h.gate <- struct{}{}
				select {
				case <-h.done:
				case <-time.After(5 * time.Second):
					b.Fatalf("drained %d of %d datagrams; kernel drops %d", h.count, h.target, l.KernelDrops())
				}
				iters++
			}
			b.ReportMetric(float64(iters*backlog)/b.Elapsed().Seconds(), "datagrams/s")
			st := l.Stats()
			b.ReportMetric(float64(st.Datagrams.Load())/float64(max(st.Batches.Load(), 1)), "datagrams/batch")
		})
	}
}
