package rdma

import (
	"bytes"
	"context"
	"log/slog"
	"net/netip"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/region"
)

// testLogger logs to the test output when -v and DTA_TEST_LOG are set.
func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("DTA_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(b, "\n")))
	return len(b), nil
}

func newRegion(t testing.TB, size uint64) *region.Region {
	t.Helper()
	r, err := region.New(region.Config{Size: size, HugePages: region.HugePagesOff}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// testResponderConfig is a responder on a free loopback port.
func testResponderConfig(host string) ResponderConfig {
	cfg := DefaultResponderConfig()
	cfg.Addr = netip.AddrPortFrom(netip.MustParseAddr(host), 0).String()
	// Timeouts long enough that a loaded machine (go test ./... with -race
	// beside other suites) does not give a QP up: a stall of a few hundred
	// milliseconds costs retransmissions, never the connection. Tests of
	// the timeouts themselves set their own.
	cfg.Timeout = 100 * time.Millisecond
	cfg.Retries = 50
	cfg.RecvBuffer = 4 << 20
	cfg.ReadLoops = testReadLoops()
	cfg.KernelWait = os.Getenv(pollerWaitEnv) == ""
	cfg.KeepProcessor = cfg.KernelWait // as dta collector runs it
	return cfg
}

// pollerWaitEnv, set, makes the responders the tests start wait for
// requests in the Go runtime's network poller (KernelWait false), as
// TestSuiteWithParallelReadLoops's run does; unset, they wait in the
// kernel, the default.
const pollerWaitEnv = "DTA_TEST_POLLER_WAIT"

// readLoopsEnv sets the ReadLoops of the responders the tests start
// (testResponderConfig); unset, 1. TestSuiteWithParallelReadLoops runs the
// package's tests again with it set.
const readLoopsEnv = "DTA_TEST_READ_LOOPS"

func testReadLoops() int {
	if n, err := strconv.Atoi(os.Getenv(readLoopsEnv)); err == nil && n > 0 {
		return n
	}
	return 1
}

// startResponder runs a responder until the test ends, after calling setup
// (registering MRs, setting the advertisement) on it: a requester already
// waiting for the address must not connect before that.
func startResponder(t testing.TB, cfg ResponderConfig, setup ...func(*Responder)) *Responder {
	t.Helper()
	r, err := NewResponder(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range setup {
		f(r)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	t.Cleanup(func() {
		r.Close()
		if err := <-done; err != nil {
			t.Errorf("Responder.Run: %v", err)
		}
	})
	return r
}

func testRequesterConfig(to netip.AddrPort) RequesterConfig {
	cfg := DefaultRequesterConfig()
	cfg.Collector = to
	cfg.Timeout = 100 * time.Millisecond // see testResponderConfig
	cfg.Retries = 50
	cfg.CMTimeout = 200 * time.Millisecond
	cfg.ReconnectMin = 10 * time.Millisecond
	cfg.ReconnectMax = 100 * time.Millisecond
	cfg.KeepAlive = 0 // tests count packets exactly; the keep-alive has tests of its own (rdma/requester)
	return cfg
}

func dial(t testing.TB, cfg RequesterConfig) *Requester {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q, err := Dial(ctx, cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

func flush(t testing.TB, q *Requester) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := q.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v (stats %+v)", err, statsString(q))
	}
}

func statsString(q *Requester) map[string]uint64 {
	s := q.Stats()
	return map[string]uint64{
		"packets": s.Packets.Load(), "retransmits": s.Retransmits.Load(), "timeouts": s.Timeouts.Load(),
		"acks": s.ACKs.Load(), "atomic_acks": s.AtomicACKs.Load(), "nak_seq": s.NAKSequence.Load(),
		"in_flight": uint64(s.InFlight.Load()), "lost": s.OpsLost.Load(), "reconnects": s.Reconnect.Load(),
	}
}

func targetOf(m MR) Target { return Target{VA: m.VA, RKey: m.RKey, Length: m.Length} }

func snapshot(t testing.TB, r *region.Region) []byte {
	t.Helper()
	b := make([]byte, r.Size())
	if err := r.Read(0, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// insertQP puts q in the QP table as the first read loop's, as a REQ would
// (tests that drive the packet handler directly). Called with the first
// loop's lock and mu held, or before Run.
func (r *Responder) insertQP(q *qp) {
	q.owner = r.loops[0]
	r.qps[q.qpn] = q
	r.byPeer[q.peer] = q
	q.owner.qps[q.qpn] = q
}
