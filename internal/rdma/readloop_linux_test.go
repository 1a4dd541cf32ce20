package rdma

import (
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dta-go/dta/internal/memop"
)

func TestOnReadLoopNamesTheThreadThatExecutesRequests(t *testing.T) {
	var calls, immTID, immOther atomic.Int64
	var hookMu sync.Mutex
	hookTIDs := map[int64]bool{} // one per read loop
	cfg := testResponderConfig("127.0.0.1")
	cfg.OnReadLoop = func() {
		calls.Add(1)
		hookMu.Lock()
		hookTIDs[int64(unix.Gettid())] = true
		hookMu.Unlock()
	}
	reg := newRegion(t, 4096)
	resp := startResponder(t, cfg)
	m, err := resp.RegisterMR("m", reg, AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	// OnImmediate runs where the request is executed.
	resp.OnImmediate(func(Immediate) {
		tid := int64(unix.Gettid())
		if prev := immTID.Swap(tid); prev != 0 && prev != tid {
			immOther.Add(1)
		}
	})
	q := dial(t, testRequesterConfig(resp.LocalAddr()))
	q.SetTargets([]Target{targetOf(m)})
	for i := range 200 {
		ops := []memop.Op{{Kind: memop.WriteImm, Offset: uint64(i%64) * 8, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}, Imm: uint32(i)}}
		if err := q.Apply(ops); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, q)
	if n := resp.Stats().Immediates.Load(); n != 200 {
		t.Fatalf("%d immediates delivered, want 200", n)
	}
	if calls.Load() != int64(cfg.ReadLoops) {
		t.Errorf("OnReadLoop called %d times, want once per read loop (%d)", calls.Load(), cfg.ReadLoops)
	}
	// One requester: one QP, executed by one loop, on the thread its
	// OnReadLoop call noted.
	hookMu.Lock()
	defer hookMu.Unlock()
	if len(hookTIDs) != cfg.ReadLoops || !hookTIDs[immTID.Load()] || immOther.Load() != 0 {
		t.Errorf("OnReadLoop ran on threads %v, requests were executed on %d (and %d times elsewhere)",
			hookTIDs, immTID.Load(), immOther.Load())
	}
}
