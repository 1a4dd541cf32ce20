package requester_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/rdma"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/rdma/requester"
)

// The requester's tests run against the collector's software responder
// (internal/rdma), over loopback sockets.

func newRegion(t testing.TB, size uint64) *region.Region {
	t.Helper()
	r, err := region.New(region.Config{Size: size, HugePages: region.HugePagesOff}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// startResponder runs a responder on a free loopback port until the test
// ends, with one MR of size bytes and the rights given.
func startResponder(t testing.TB, size uint64, access rdma.Access) (*rdma.Responder, *region.Region, requester.Target) {
	t.Helper()
	cfg := rdma.DefaultResponderConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Timeout = 20 * time.Millisecond
	cfg.RecvBuffer = 4 << 20
	resp, err := rdma.NewResponder(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegion(t, size)
	m, err := resp.RegisterMR("m", reg, access)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- resp.Run(context.Background()) }()
	t.Cleanup(func() {
		resp.Close()
		if err := <-done; err != nil {
			t.Errorf("Responder.Run: %v", err)
		}
	})
	return resp, reg, requester.Target{VA: m.VA, RKey: m.RKey, Length: m.Length}
}

func testConfig(to netip.AddrPort) requester.Config {
	cfg := requester.DefaultConfig()
	cfg.Collector = to
	cfg.Timeout = 20 * time.Millisecond
	cfg.CMTimeout = 50 * time.Millisecond
	cfg.ReconnectMin = 10 * time.Millisecond
	cfg.ReconnectMax = 100 * time.Millisecond
	cfg.KeepAlive = 0 // tests count packets exactly; keepalive_test.go turns it on
	return cfg
}

func dial(t testing.TB, cfg requester.Config) *requester.Requester {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q, err := requester.Dial(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

func flush(t testing.TB, q *requester.Requester) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := q.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// completions collects the Completions of a requester.
type completions struct {
	ch chan requester.Completion
}

func collect(q *requester.Requester, n int) *completions {
	c := &completions{ch: make(chan requester.Completion, n)}
	q.OnAtomic(func(x requester.Completion) { c.ch <- x })
	return c
}

func (c *completions) next(t testing.TB) requester.Completion {
	t.Helper()
	select {
	case x := <-c.ch:
		return x
	case <-time.After(10 * time.Second):
		t.Fatal("no completion within 10s")
	}
	return requester.Completion{}
}
