package nf_test

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/tea"
	"github.com/dta-go/dta/internal/tea/nf"
)

// BenchmarkNATThroughTUN is the paper's Table 3 NAT row on this machine:
// UDP packets from a client namespace through the NAT on TUN devices to a
// server namespace, at most 64 in flight, with the table in local memory
// (the server-based NF) and in a server's memory over RDMA (loopback
// software RoCEv2: TEA's one READ per lookup, the packet parked by a WRITE
// in the row's scratchpad). It reports packets per second the server
// received, translated, and the median round trip of a ping-pong through
// the NAT both ways (two lookups). table=rdma+cache adds TEA's popularity
// cache, filled from the engine's digests by the control plane (Table 3's
// "TEA w/ cache"): the benchmark's one flow is as skewed as a workload can
// be, so after its first 16 lookups every lookup is answered from SRAM.
// Needs root, as the tests.
func BenchmarkNATThroughTUN(b *testing.B) {
	for _, c := range []struct {
		name string
		be   func(testing.TB, tea.Spec) backend
	}{
		{"table=local", localBackend},
		{"table=rdma", rdmaBackend},
		{"table=rdma+cache", rdmaCacheBackend},
	} {
		b.Run(c.name, func(b *testing.B) {
			tp := newTopo(b)
			be := c.be(b, natSpec)
			for _, e := range nf.NATEntries(nf.ProtoUDP, clientAddr, publicAddr, serverAddr) {
				if err := be.tab.Insert(e.Key, e.Value); err != nil {
					b.Fatal(err)
				}
			}
			n := newNF(b, nf.NAT, be, tp)
			tp.serve(b, n)
			cli, srv := listen(b, tp.cli, clientAddr), listen(b, tp.srv, serverAddr)
			// Latency first: ping-pong, the reply translated back, one
			// packet in flight (two lookups per round trip).
			rtts := make([]time.Duration, 0, 200)
			buf := make([]byte, 2048)
			for range cap(rtts) {
				t0 := time.Now()
				if _, err := cli.WriteToUDPAddrPort([]byte("ping"), serverAddr); err != nil {
					b.Fatal(err)
				}
				srv.SetReadDeadline(time.Now().Add(time.Second))
				_, from, err := srv.ReadFromUDPAddrPort(buf)
				if err != nil {
					b.Fatal(err)
				}
				srv.WriteToUDPAddrPort([]byte("pong"), from)
				cli.SetReadDeadline(time.Now().Add(time.Second))
				if _, _, err := cli.ReadFromUDPAddrPort(buf); err != nil {
					b.Fatal(err)
				}
				rtts = append(rtts, time.Since(t0))
			}
			slices.Sort(rtts)
			rtt := rtts[len(rtts)/2] // reported after the loop: ResetTimer drops metrics
			srv.SetReadDeadline(time.Time{})
			var got atomic.Uint64
			go func() {
				buf := make([]byte, 2048)
				for {
					if _, _, err := srv.ReadFromUDPAddrPort(buf); err != nil {
						return
					}
					got.Add(1)
				}
			}()
			payload := make([]byte, 18) // 64-byte frames: 14 + 20 + 8 + 18 + 4 FCS
			const window = 64
			var sent, lost uint64
			stalled := time.Now()
			start := time.Now()
			for b.Loop() {
				for sent-lost-got.Load() >= window {
					if time.Since(stalled) > 100*time.Millisecond {
						lost = sent - got.Load() // dropped somewhere: stop waiting for them
						break
					}
					time.Sleep(5 * time.Microsecond)
				}
				stalled = time.Now()
				if _, err := cli.WriteToUDPAddrPort(payload, serverAddr); err != nil {
					b.Fatal(err)
				}
				sent++
			}
			for deadline := time.Now().Add(time.Second); got.Load()+lost < sent && time.Now().Before(deadline); {
				time.Sleep(100 * time.Microsecond)
			}
			el := time.Since(start)
			b.StopTimer()
			r := got.Load()
			b.ReportMetric(float64(r)/el.Seconds(), "pkts/s")
			b.ReportMetric(float64(sent-r), "lost")
			b.ReportMetric(float64(rtt.Nanoseconds())/1e3, "µs-rtt-median")
			b.Logf("%s: %d sent, %d received translated in %v; NF %v", c.name, sent, r, el.Round(time.Millisecond), statsOf(n))
		})
	}
}
