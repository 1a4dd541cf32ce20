package requester_test

import (
	"errors"
	"testing"

	"github.com/dta-go/dta/internal/rdma"
	"github.com/dta-go/dta/rdma/requester"
)

func TestCompareSwapTakesAnEmptyWordAndLeavesATakenOne(t *testing.T) {
	resp, reg, tgt := startResponder(t, 4096, rdma.AccessRemoteWrite|rdma.AccessRemoteAtomic)
	q := dial(t, testConfig(resp.LocalAddr()))
	q.SetTargets([]requester.Target{tgt})
	c := collect(q, 16)
	if err := reg.Store64(64, 0x1111); err != nil {
		t.Fatal(err)
	}
	ops := []requester.Op{
		{Kind: requester.CompareSwap, Offset: 0, Compare: 0, Swap: 0xAAAA, ID: 1},  // empty: swapped
		{Kind: requester.CompareSwap, Offset: 0, Compare: 0, Swap: 0xBBBB, ID: 2},  // now taken: not swapped
		{Kind: requester.CompareSwap, Offset: 64, Compare: 0, Swap: 0xCCCC, ID: 3}, // taken from the start
		{Kind: requester.FetchAdd, Offset: 128, Add: 5, ID: 4},
		{Kind: requester.CompareSwap, Offset: 128, Compare: 5, Swap: 9, ID: 5}, // equal to a non-zero compare: swapped
	}
	if err := q.Post(ops); err != nil {
		t.Fatal(err)
	}
	want := []requester.Completion{
		{ID: 1, Kind: requester.CompareSwap, Orig: 0},
		{ID: 2, Kind: requester.CompareSwap, Orig: 0xAAAA},
		{ID: 3, Kind: requester.CompareSwap, Orig: 0x1111},
		{ID: 4, Kind: requester.FetchAdd, Orig: 0},
		{ID: 5, Kind: requester.CompareSwap, Orig: 5},
	}
	for _, w := range want {
		if got := c.next(t); got != w {
			t.Errorf("completion %+v, want %+v", got, w)
		}
	}
	flush(t, q)
	for off, w := range map[uint64]uint64{0: 0xAAAA, 64: 0x1111, 128: 9} {
		if v, _ := reg.Load64(off); v != w {
			t.Errorf("word %d = %#x, want %#x", off, v, w)
		}
	}
	if st := q.Stats(); st.CompareSwaps.Load() != 4 || st.FetchAdds.Load() != 1 || st.AtomicACKs.Load() != 5 {
		t.Errorf("stats: %d compare-swaps, %d fetch-adds, %d ATOMIC ACKs", st.CompareSwaps.Load(), st.FetchAdds.Load(), st.AtomicACKs.Load())
	}
}

func TestAnAtomicOnAWriteOnlyRegionIsRefusedAndChangesNothing(t *testing.T) {
	resp, reg, tgt := startResponder(t, 4096, rdma.AccessRemoteWrite)
	q := dial(t, testConfig(resp.LocalAddr()))
	q.SetTargets([]requester.Target{tgt})
	c := collect(q, 4)
	err := q.Post([]requester.Op{
		{Kind: requester.CompareSwap, Offset: 0, Compare: 0, Swap: 7, ID: 1},
		{Kind: requester.Write, Offset: 8, Data: []byte("after it")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.next(t); got.ID != 1 || !errors.Is(got.Err, requester.ErrRefused) {
		t.Fatalf("completion %+v, want ErrRefused", got)
	}
	flush(t, q)
	if v, _ := reg.Load64(0); v != 0 {
		t.Errorf("word = %#x after a refused swap", v)
	}
	b := make([]byte, 8)
	reg.Read(8, b)
	if string(b) != "after it" {
		t.Errorf("the write after the refused swap landed as %q", b)
	}
	if st := q.Stats(); st.NAKRemoteAccess.Load() != 1 || st.OpsFailed.Load() != 1 {
		t.Errorf("%d NAK remote access, %d ops failed, want 1 and 1", st.NAKRemoteAccess.Load(), st.OpsFailed.Load())
	}
}

func TestPostRefusesMisalignedAtomicsBeforeSending(t *testing.T) {
	resp, _, tgt := startResponder(t, 4096, rdma.AccessRemoteWrite|rdma.AccessRemoteAtomic)
	q := dial(t, testConfig(resp.LocalAddr()))
	q.SetTargets([]requester.Target{tgt})
	for _, c := range []struct {
		op   requester.Op
		want error
	}{
		{requester.Op{Kind: requester.CompareSwap, Offset: 4}, requester.ErrMisaligned},
		{requester.Op{Kind: requester.FetchAdd, Offset: 12}, requester.ErrMisaligned},
		{requester.Op{Kind: requester.CompareSwap, Offset: 4096}, requester.ErrOutOfRange},
		{requester.Op{Kind: requester.CompareSwap, Target: 1}, requester.ErrUnknownTarget},
		{requester.Op{Kind: 9}, requester.ErrBadOp},
	} {
		if err := q.Post([]requester.Op{c.op}); !errors.Is(err, c.want) {
			t.Errorf("Post(%v at %d) = %v, want %v", c.op.Kind, c.op.Offset, err, c.want)
		}
	}
	if n := q.Stats().Packets.Load(); n != 0 {
		t.Errorf("%d packets sent for refused ops", n)
	}
}
