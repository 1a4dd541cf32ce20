package rdma

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/dta-go/dta/rdma/requester"
	"github.com/dta-go/dta/wire/roce"
)

func compareSwap(va uint64, rkey uint32, compare, swap uint64) roce.Packet {
	return roce.Packet{
		BTH:       roce.BTH{Opcode: roce.OpCompareSwap, AckReq: true},
		AtomicETH: roce.AtomicETH{VA: va, RKey: rkey, SwapAdd: swap, Compare: compare},
	}
}

// COMPARE_SWAP follows FETCH_ADD's rules: executed once at its PSN, its
// original value saved and replayed for a duplicate, refused unless
// aligned and allowed.
func TestCompareSwapRules(t *testing.T) {
	h := newHostile(t, nil)
	p, st := h.peer, h.resp.Stats()
	rw, reg := h.rw, h.regions[0]
	word := func(off uint64) uint64 { v, _ := reg.Load64(off); return v }
	const off = 512
	reg.Store64(off, 0) // an empty slot in the pattern

	// Into an empty word: swapped, original 0.
	psnA := p.request(compareSwap(rw.VA+off, rw.RKey, 0, 0xAAAA))
	if a := p.expectAETH(roce.OpAtomicACK, roce.ACKUnlimited, psnA); a.AtomicAckETH.OrigData != 0 {
		t.Errorf("swap into an empty word: orig %#x, want 0", a.AtomicAckETH.OrigData)
	}
	if w := word(off); w != 0xAAAA {
		t.Fatalf("word %#x after the swap, want 0xaaaa", w)
	}
	// Into a taken word: not swapped, the original returned.
	psnB := p.request(compareSwap(rw.VA+off, rw.RKey, 0, 0xBBBB))
	if a := p.expectAETH(roce.OpAtomicACK, roce.ACKUnlimited, psnB); a.AtomicAckETH.OrigData != 0xAAAA {
		t.Errorf("swap into a taken word: orig %#x, want 0xaaaa", a.AtomicAckETH.OrigData)
	}
	if w := word(off); w != 0xAAAA {
		t.Errorf("a failed swap changed the word to %#x", w)
	}

	// A retransmitted swap gets its saved original and is not executed
	// again: with the word emptied behind its back, executing it again
	// would take the word.
	reg.Store64(off, 0)
	atomics, replays := st.Atomics.Load(), st.AtomicReplays.Load()
	dup := compareSwap(rw.VA+off, rw.RKey, 0, 0xAAAA)
	dup.BTH.DestQP, dup.BTH.PSN, dup.BTH.PKey = p.rqpn, psnA, roce.DefaultPKey
	for range 3 {
		p.send(&dup)
		if a := p.expectAETH(roce.OpAtomicACK, roce.ACKUnlimited, psnA); a.AtomicAckETH.OrigData != 0 {
			t.Errorf("replayed orig %#x, want the saved 0", a.AtomicAckETH.OrigData)
		}
	}
	if w := word(off); w != 0 {
		t.Errorf("the duplicate swap was executed again: word %#x", w)
	}
	if st.Atomics.Load() != atomics || st.AtomicReplays.Load()-replays != 3 {
		t.Errorf("%d executed, %d replays; want 0 and 3", st.Atomics.Load()-atomics, st.AtomicReplays.Load()-replays)
	}

	// Misaligned: NAK invalid request, nothing written.
	reg.Store64(off, 0)
	mis := st.RejectMisaligned.Load()
	psn := p.request(compareSwap(rw.VA+off+4, rw.RKey, 0, ^uint64(0)))
	p.expectAETH(roce.OpACK, roce.NAKInvalidRequest, psn)
	if word(off) != 0 || st.RejectMisaligned.Load() != mis+1 {
		t.Errorf("misaligned swap: word %#x, %d refusals", word(off), st.RejectMisaligned.Load()-mis)
	}

	// Without remote atomic access: NAK remote access error, nothing
	// written (the write-only region keeps its pattern).
	rights := st.RejectRights.Load()
	psn = p.request(compareSwap(h.wo.VA+off, h.wo.RKey, 0, 1))
	p.expectAETH(roce.OpACK, roce.NAKRemoteAccessError, psn)
	if st.RejectRights.Load() != rights+1 {
		t.Errorf("swap without atomic rights: %d refusals", st.RejectRights.Load()-rights)
	}
	if got := snapshot(t, h.regions[1]); string(got) != string(h.before[1]) {
		t.Error("the write-only region changed")
	}
	// An atomic-only region takes it.
	h.regions[2].Store64(0, 0)
	psn = p.request(compareSwap(h.ao.VA, h.ao.RKey, 0, 7))
	if a := p.expectAETH(roce.OpAtomicACK, roce.ACKUnlimited, psn); a.AtomicAckETH.OrigData != 0 {
		t.Errorf("atomic-only region: orig %#x", a.AtomicAckETH.OrigData)
	}
	if v, _ := h.regions[2].Load64(0); v != 7 {
		t.Errorf("atomic-only region word %#x, want 7", v)
	}
}

func TestAtomicsInFlightCompleteWithErrNotConnectedWhenTheCollectorDies(t *testing.T) {
	reg := newRegion(t, 4096)
	resp := startResponder(t, testResponderConfig("127.0.0.1"))
	m, _ := resp.RegisterMR("m", reg, AccessRemoteWrite|AccessRemoteAtomic)
	cfg := testRequesterConfig(resp.LocalAddr())
	cfg.Retries = 2
	q := dial(t, cfg)
	q.SetTargets([]Target{targetOf(m)})
	var mu sync.Mutex
	got := map[uint64]error{}
	q.OnAtomic(func(c requester.Completion) {
		mu.Lock()
		got[c.ID] = c.Err
		mu.Unlock()
	})
	resp.crash() // no DREQ: the swaps stay unanswered
	for i := range 8 {
		if err := q.Post([]requester.Op{{Kind: requester.CompareSwap, Offset: uint64(i) * 8, Swap: 1, ID: uint64(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == 8 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 8 {
		t.Fatalf("%d completions after the connection was lost, want 8", len(got))
	}
	for id, err := range got {
		if !errors.Is(err, requester.ErrNotConnected) {
			t.Errorf("swap %d completed with %v, want ErrNotConnected", id, err)
		}
	}
}
