package rdma

import (
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/rdma/requester"
)

// TestLossDuplicationReordering runs writes, fetch-adds and
// compare-and-swaps through a proxy that drops, duplicates and reorders 10 %
// of the packets each way, and checks that every op landed exactly once and
// that every swap reported the original value it met, exactly once.
func TestLossDuplicationReordering(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "::1"} {
		t.Run(host, func(t *testing.T) {
			ops := 4000
			if testing.Short() || host == "::1" {
				ops = 1500
			}
			testLossy(t, host, ops)
		})
	}
}

func testLossy(t *testing.T, host string, nops int) {
	reg := newRegion(t, 64<<10)
	resp := startResponder(t, testResponderConfig(host))
	m, err := resp.RegisterMR("r", reg, AccessRemoteWrite|AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	resp.SetAdvertisement(make([]byte, 700)) // three packets at MTU 256
	proxy := newLossyProxy(t, resp.LocalAddr(), 42, 0.10, 0.10, 0.10)
	cfg := testRequesterConfig(proxy.addr())
	cfg.MTU = 256
	cfg.Window = 32
	cfg.AckEvery = 8
	cfg.MaxAtomic = 8
	cfg.Timeout = 10 * 1e6
	cfg.Retries = 50
	q := dial(t, cfg)
	q.SetTargets([]Target{targetOf(m)})
	var mu sync.Mutex
	completed := map[uint64][]requester.Completion{}
	q.OnAtomic(func(c requester.Completion) {
		if c.Kind != requester.CompareSwap {
			return // the fetch-adds are checked by their sums
		}
		mu.Lock()
		completed[c.ID] = append(completed[c.ID], c)
		mu.Unlock()
	})

	const slots, counters, bigSlots, swaps = 64, 16, 4, 8
	const counterBase, bigBase, bigLen, swapBase = 4096, 8192, 600, 16384 // a big write is three packets
	var swapWord [swaps]uint64
	wantOrig := map[uint64]uint64{} // swap ID → the original value it must meet
	swap := make([]requester.Op, 1)
	var wantSlot [slots]uint64
	var wantCounter [counters]uint64
	var wantBig [bigSlots][bigLen]byte
	batch := make([]memop.Op, 0, 8)
	for i := range nops {
		batch = batch[:0]
		for j := range 4 {
			k := uint64(i*4 + j)
			switch k % 5 {
			case 0, 1:
				s := k * 2654435761 % slots
				v := k<<8 | 0xA5
				wantSlot[s] = v
				data := binary.LittleEndian.AppendUint64(nil, v)
				batch = append(batch, memop.Op{Kind: memop.Write, Offset: s * 8, Data: data})
			case 2, 3:
				c := k * 40503 % counters
				d := k%1000 + 1
				wantCounter[c] += d
				batch = append(batch, memop.Op{Kind: memop.FetchAdd, Offset: counterBase + c*8, Delta: d})
			default:
				if k%25 == 4 {
					b := k / 25 % bigSlots
					for x := range wantBig[b] {
						wantBig[b][x] = byte(k + uint64(x))
					}
					data := append([]byte(nil), wantBig[b][:]...)
					batch = append(batch, memop.Op{Kind: memop.WriteImm, Offset: bigBase + b*1024, Data: data, Imm: uint32(k)})
				}
			}
		}
		if err := q.Apply(batch); err != nil {
			t.Fatalf("Apply %d: %v (%v)", i, err, statsString(q))
		}
		if i%3 == 0 {
			// A swap that wins every other time: PSN order is execution
			// order, so the original each meets is known here.
			w := uint64(i/3) % swaps
			id := uint64(i)
			cmp := swapWord[w]
			if i%2 == 1 {
				cmp++
			}
			swap[0] = requester.Op{Kind: requester.CompareSwap, Offset: swapBase + w*8, Compare: cmp, Swap: id<<8 | 0x5A, ID: id}
			wantOrig[id] = swapWord[w]
			if cmp == swapWord[w] {
				swapWord[w] = swap[0].Swap
			}
			if err := q.Post(swap); err != nil {
				t.Fatalf("Post swap %d: %v (%v)", i, err, statsString(q))
			}
		}
	}
	flush(t, q)
	mu.Lock()
	for id, orig := range wantOrig {
		c := completed[id]
		if len(c) != 1 || c[0].Err != nil || c[0].Orig != orig {
			t.Errorf("swap %d: completions %+v, want one with orig %#x", id, c, orig)
		}
	}
	if len(completed) != len(wantOrig) {
		t.Errorf("%d swaps completed, %d posted", len(completed), len(wantOrig))
	}
	mu.Unlock()
	for w, want := range swapWord {
		if got, _ := reg.Load64(swapBase + uint64(w)*8); got != want {
			t.Errorf("swap word %d = %#x, want %#x", w, got, want)
		}
	}
	for s, w := range wantSlot {
		if got, _ := reg.Load64(uint64(s) * 8); got != w {
			t.Errorf("slot %d = %#x, want %#x", s, got, w)
		}
	}
	for c, w := range wantCounter {
		if got, _ := reg.Load64(counterBase + uint64(c)*8); got != w {
			t.Errorf("counter %d = %d, want %d", c, got, w)
		}
	}
	for b := range wantBig {
		got := make([]byte, bigLen)
		reg.Read(bigBase+uint64(b)*1024, got)
		if string(got) != string(wantBig[b][:]) {
			t.Errorf("big slot %d differs", b)
		}
	}
	rs, qs := resp.Stats(), q.Stats()
	proxy.mu.Lock()
	summary := fmt.Sprintf("proxy dropped %v duplicated %v reordered %v; requester packets %d retransmits %d timeouts %d NAK-seq %d implied NAKs %d; responder duplicates %d out-of-sequence %d atomic replays %d",
		proxy.dropped, proxy.duplicated, proxy.reordered, qs.Packets.Load(), qs.Retransmits.Load(), qs.Timeouts.Load(),
		qs.NAKSequence.Load(), qs.AtomicsLost.Load(), rs.Duplicates.Load(), rs.OutOfSequence.Load(), rs.AtomicReplays.Load())
	proxy.mu.Unlock()
	t.Log(summary)
	if qs.OpsLost.Load() != 0 || qs.Reconnect.Load() != 0 {
		t.Errorf("connection lost during the run: %s", summary)
	}
	if rs.Duplicates.Load() == 0 || rs.OutOfSequence.Load() == 0 || qs.Retransmits.Load() == 0 {
		t.Errorf("the faults did not exercise the recovery paths: %s", summary)
	}
}
