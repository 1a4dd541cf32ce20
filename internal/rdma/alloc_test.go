package rdma

import (
	"net/netip"
	"testing"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/rdma/requester"
	"github.com/dta-go/dta/wire/roce"
)

func skipAllocsUnderRace(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race; run without it")
	}
}

// TestApplyDoesNotAllocate measures the whole steady-state loop in this
// process: Apply, the requester's ACK handling and the responder's receive
// path, with the window cycling.
func TestApplyDoesNotAllocate(t *testing.T) {
	skipAllocsUnderRace(t)
	reg := newRegion(t, 1<<16)
	resp := startResponder(t, testResponderConfig("127.0.0.1"))
	m, _ := resp.RegisterMR("m", reg, AccessRemoteWrite|AccessRemoteAtomic)
	cfg := testRequesterConfig(resp.LocalAddr())
	cfg.Window = 64
	q := dial(t, cfg)
	q.SetTargets([]Target{targetOf(m)})
	for _, c := range []struct {
		name string
		ops  []memop.Op
	}{
		{"8-byte write", []memop.Op{{Kind: memop.Write, Offset: 64, Data: []byte("12345678")}}},
		{"fetch-add", []memop.Op{{Kind: memop.FetchAdd, Offset: 128, Delta: 1}}},
		{"write with immediate", []memop.Op{{Kind: memop.WriteImm, Offset: 256, Data: []byte("imm"), Imm: 5}}},
		{"3-packet write", []memop.Op{{Kind: memop.Write, Offset: 1024, Data: make([]byte, 2500)}}},
		{"batch of 16", func() []memop.Op {
			ops := make([]memop.Op, 16)
			for i := range ops {
				ops[i] = memop.Op{Kind: memop.Write, Offset: uint64(i) * 8, Data: []byte("abcdefgh")}
			}
			return ops
		}()},
	} {
		for range 500 { // warm: the window wraps several times
			if err := q.Apply(c.ops); err != nil {
				t.Fatal(err)
			}
		}
		n := testing.AllocsPerRun(2000, func() {
			if err := q.Apply(c.ops); err != nil {
				t.Fatal(err)
			}
		})
		if n != 0 {
			t.Errorf("Apply(%s) allocates %v times per call", c.name, n)
		}
	}
	// COMPARE_SWAP, posted on the public requester, its completion handed
	// to a callback.
	var won uint64
	q.OnAtomic(func(c requester.Completion) {
		if c.Err == nil && c.Orig == 0 {
			won++
		}
	})
	swap := []requester.Op{{Kind: requester.CompareSwap, Offset: 512, Compare: 0, Swap: 1}}
	for range 500 {
		if err := q.Post(swap); err != nil {
			t.Fatal(err)
		}
	}
	if n := testing.AllocsPerRun(2000, func() {
		if err := q.Post(swap); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Post(compare-swap) allocates %v times per call", n)
	}
	flush(t, q)
}

// TestResponderWritePathDoesNotAllocate drives the responder's packet
// handler directly with WRITEs and FETCH_ADDs (and the ACKs they draw).
func TestResponderWritePathDoesNotAllocate(t *testing.T) {
	skipAllocsUnderRace(t)
	reg := newRegion(t, 1<<16)
	resp, err := NewResponder(testResponderConfig("127.0.0.1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Close() })
	m, _ := resp.RegisterMR("m", reg, AccessRemoteWrite|AccessRemoteAtomic)
	local := resp.LocalAddr()
	peer := netip.MustParseAddrPort("127.0.0.1:9") // discard: the ACKs go nowhere
	q := &qp{
		qpn: 0x42, remoteQPN: 0x99, peer: peer, state: qpEstablished, pmtu: 1024, ePSN: 100,
		out:     roce.Envelope{Src: local.Addr(), Dst: peer.Addr(), SrcPort: local.Port(), DstPort: peer.Port()},
		atomics: make([]atomicResult, 16),
	}
	resp.insertQP(q)
	l := resp.loops[0]
	in := roce.Envelope{Src: peer.Addr(), Dst: local.Addr(), SrcPort: peer.Port(), DstPort: local.Port()}
	const runs = 3000
	for _, kind := range []string{"write", "fetch-add"} {
		pkts := make([][]byte, runs+1)
		for i := range pkts {
			var p roce.Packet
			if kind == "write" {
				p = writeOnly(m.VA+uint64(i%64)*8, m.RKey, []byte("abcdefgh"), i%32 == 0)
			} else {
				p = fetchAdd(m.VA+uint64(i%64)*8, m.RKey, 1)
			}
			p.BTH.DestQP, p.BTH.PKey, p.BTH.PSN = q.qpn, roce.DefaultPKey, (q.ePSN+uint32(i))&roce.PSNMask
			b := p.AppendTo(nil)
			if err := in.Seal(b); err != nil {
				t.Fatal(err)
			}
			pkts[i] = b
		}
		i := 0
		l.mu.Lock()
		n := testing.AllocsPerRun(runs, func() {
			l.handle(pkts[i], peer, local.Addr())
			i++
			if i%16 == 0 {
				l.flushACKs()
				l.flush()
			}
		})
		l.flush() // the end of a batch: the counters are published
		l.mu.Unlock()
		if n != 0 {
			t.Errorf("receiving a %s allocates %v times", kind, n)
		}
	}
	if got := resp.Stats().Writes.Load(); got != runs+1 {
		t.Errorf("executed %d writes, want %d", got, runs+1)
	}
}
