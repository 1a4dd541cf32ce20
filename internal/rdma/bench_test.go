package rdma

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/wire/roce"
)

// BenchmarkApply measures Apply through a loopback responder running in a
// child process: ops/s (first transmission to acknowledgement of the last
// op included), the responder's CPU time per op and the requester
// process's CPU time per op.
//
//	go test -run '^$' -bench Apply -benchtime 200000x ./internal/rdma
func BenchmarkApply(b *testing.B) {
	write := func(i int) memop.Op {
		return memop.Op{Kind: memop.Write, Offset: uint64(i%4096) * 8, Data: []byte("abcdefgh")}
	}
	add := func(i int) memop.Op { return memop.Op{Kind: memop.FetchAdd, Offset: uint64(i%4096) * 8, Delta: 1} }
	for _, c := range []struct {
		name  string
		batch int
		op    func(int) memop.Op
	}{
		{"write8", 1, write},
		{"write8-batch64", 64, write},
		{"fetchadd", 1, add},
		{"fetchadd-batch64", 64, add},
	} {
		b.Run(c.name, func(b *testing.B) {
			child := startChildResponder(b, "127.0.0.1")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			q, err := Dial(ctx, func() RequesterConfig {
				cfg := DefaultRequesterConfig()
				cfg.Collector = child.addr
				return cfg
			}(), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer q.Close()
			q.SetTargets([]Target{decodeTarget(q.Advertisement())})
			ops := make([]memop.Op, c.batch)
			for i := range ops {
				ops[i] = c.op(i)
			}
			for range 1000 {
				q.Apply(ops)
			}
			if err := q.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			cpu0, pk0, bt0 := child.cpu(b)
			self0 := cpuTime()
			start := time.Now()
			n := 0
			for b.Loop() {
				if err := q.Apply(ops); err != nil {
					b.Fatal(err)
				}
				n += len(ops)
			}
			fctx, fcancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer fcancel()
			if err := q.Flush(fctx); err != nil {
				b.Fatal(err)
			}
			elapsed := time.Since(start)
			self := cpuTime() - self0
			cpu1, pk1, bt1 := child.cpu(b)
			b.ReportMetric(float64(n)/elapsed.Seconds(), "ops/s")
			b.ReportMetric(float64(cpu1-cpu0)/float64(n), "responder-cpu-ns/op")
			b.ReportMetric(float64(self)/float64(n), "requester-cpu-ns/op")
			b.ReportMetric(float64(q.Stats().Retransmits.Load()), "retransmits")
			b.ReportMetric(float64(q.Stats().Timeouts.Load()), "timeouts")
			b.ReportMetric(float64(q.Stats().NAKSequence.Load()), "nak-seq")
			b.ReportMetric(float64(pk1-pk0)/float64(max(bt1-bt0, 1)), "pkts/recv")
		})
	}
}

// BenchmarkResponderHandle measures the responder's per-packet work
// without the sockets: ICRC check, decode, PSN rules, placement, ACKs
// built (one per 32 packets) but not sent.
func BenchmarkResponderHandle(b *testing.B) {
	reg := newRegion(b, 1<<16)
	resp, err := NewResponder(testResponderConfig("127.0.0.1"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Close()
	m, _ := resp.RegisterMR("m", reg, AccessRemoteWrite|AccessRemoteAtomic)
	local := resp.LocalAddr()
	peer := netip.MustParseAddrPort("127.0.0.1:9")
	q := &qp{qpn: 0x42, remoteQPN: 0x99, peer: peer, state: qpEstablished, pmtu: 1024,
		out:     roce.Envelope{Src: local.Addr(), Dst: peer.Addr(), SrcPort: local.Port(), DstPort: peer.Port()},
		atomics: make([]atomicResult, 16)}
	resp.insertQP(q)
	l := resp.loops[0]
	in := roce.Envelope{Src: peer.Addr(), Dst: local.Addr(), SrcPort: peer.Port(), DstPort: local.Port()}
	pkts := make([][]byte, 1<<12)
	for _, kind := range []string{"write8", "fetchadd"} {
		b.Run(kind, func(b *testing.B) {
			i := 0
			build := func() {
				for j := range pkts {
					var p roce.Packet
					if kind == "write8" {
						p = writeOnly(m.VA+uint64(j%64)*8, m.RKey, []byte("abcdefgh"), j%32 == 31)
					} else {
						p = fetchAdd(m.VA+uint64(j%64)*8, m.RKey, 1)
					}
					p.BTH.DestQP, p.BTH.PKey, p.BTH.PSN = q.qpn, roce.DefaultPKey, (q.ePSN+uint32(j))&roce.PSNMask
					pkts[j] = p.AppendTo(pkts[j][:0])
					in.Seal(pkts[j])
				}
				i = 0
			}
			build()
			b.ReportAllocs()
			l.mu.Lock()
			defer l.mu.Unlock()
			for b.Loop() {
				if i == len(pkts) {
					b.StopTimer()
					build()
					b.StartTimer()
				}
				l.handle(pkts[i], peer, local.Addr())
				i++
				if i%32 == 0 {
					l.flushACKs()
					l.tx.Discard() // built, not sent
				}
			}
		})
	}
}

// BenchmarkResponderParallelQPs measures a responder in a child process
// with 1, 2 or 4 read loops, written by qps requesters of this process at
// once (each its own socket and QP, 8-byte WRITEs in Applies of 16):
// packets/s the responder received in all, its CPU time per packet (the
// child's getrusage: every loop and the timer), packets per receive call,
// and how many loops received packets (the kernel hashes each requester's
// port to one socket, so with few QPs some loops may stay idle).
//
//	go test -run '^$' -bench ResponderParallelQPs -benchtime 20000x ./internal/rdma
func BenchmarkResponderParallelQPs(b *testing.B) {
	for _, c := range []struct{ loops, qps int }{{1, 4}, {2, 4}, {4, 8}} {
		b.Run(fmt.Sprintf("loops=%d/qps=%d", c.loops, c.qps), func(b *testing.B) {
			child := startChildResponderLoops(b, "127.0.0.1", c.loops)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			reqs := make([]*Requester, c.qps)
			for i := range reqs {
				cfg := DefaultRequesterConfig()
				cfg.Collector = child.addr
				q, err := Dial(ctx, cfg, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer q.Close()
				q.SetTargets([]Target{decodeTarget(q.Advertisement())})
				reqs[i] = q
			}
			const batch = 16
			opsOf := func(i int) []memop.Op {
				ops := make([]memop.Op, batch)
				for k := range ops {
					ops[k] = memop.Op{Kind: memop.Write, Offset: uint64(i*4096+k*8) % (1 << 20), Data: []byte("abcdefgh")}
				}
				return ops
			}
			run := func(per int) error {
				var wg sync.WaitGroup
				errs := make([]error, len(reqs))
				for i, q := range reqs {
					ops := opsOf(i)
					wg.Go(func() {
						for range per {
							if err := q.Apply(ops); err != nil {
								errs[i] = err
								return
							}
						}
						fctx, fcancel := context.WithTimeout(context.Background(), 60*time.Second)
						defer fcancel()
						errs[i] = q.Flush(fctx)
					})
				}
				wg.Wait()
				return errors.Join(errs...)
			}
			if err := run(200); err != nil { // warm: connections, page faults
				b.Fatal(err)
			}
			cpu0, pk0, bt0, _ := child.cpuLoops(b)
			per := max(1, b.N/c.qps)
			b.ResetTimer()
			start := time.Now()
			if err := run(per); err != nil {
				b.Fatal(err)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			cpu1, pk1, bt1, busy := child.cpuLoops(b)
			pkts := float64(pk1 - pk0)
			b.ReportMetric(pkts/elapsed.Seconds(), "pkts/s")
			b.ReportMetric(float64(cpu1-cpu0)/pkts, "responder-cpu-ns/pkt")
			b.ReportMetric(pkts/float64(max(bt1-bt0, 1)), "pkts/recv")
			b.ReportMetric(float64(busy), "busy-loops")
			var retx uint64
			for _, q := range reqs {
				retx += q.Stats().Retransmits.Load()
			}
			b.ReportMetric(float64(retx), "retransmits")
		})
	}
}
