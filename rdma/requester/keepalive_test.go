package requester_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/rdma"
	"github.com/dta-go/dta/rdma/requester"
)

// An idle connection is kept alive with zero-length WRITEs, which name no
// memory, change none and are ACKed: the connection stays up and nothing is
// lost. (That a collector which goes away while the connection is idle is
// found is tested with a real process killed: internal/cli,
// TestATranslatorFindsAnIdleCollectorThatWasKilled.)
func TestAnIdleConnectionIsKeptAliveAndAnswered(t *testing.T) {
	resp, reg, tgt := startResponder(t, 4096, rdma.AccessRemoteWrite)
	before := make([]byte, 4096)
	reg.Read(0, before)
	cfg := testConfig(resp.LocalAddr())
	cfg.KeepAlive = 20 * time.Millisecond
	q := dial(t, cfg)
	q.SetTargets([]requester.Target{tgt})
	st := q.Stats()
	deadline := time.Now().Add(10 * time.Second)
	for st.KeepAlives.Load() < 3 || st.ACKs.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: %d keep-alives, %d ACKs; want 3 of each", st.KeepAlives.Load(), st.ACKs.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !q.Connected() || st.Reconnect.Load() != 0 || st.OpsLost.Load() != 0 || st.Timeouts.Load() != 0 {
		t.Fatalf("an idle, answered connection: connected %v, %d lost, %d packets lost, %d timeouts",
			q.Connected(), st.Reconnect.Load(), st.OpsLost.Load(), st.Timeouts.Load())
	}
	after := make([]byte, 4096)
	reg.Read(0, after)
	if !bytes.Equal(before, after) {
		t.Error("a keep-alive changed the region")
	}
	// Ops posted between keep-alives are served as ever.
	if err := q.Post([]requester.Op{{Kind: requester.Write, Offset: 8, Data: []byte{1, 2, 3, 4}}}); err != nil {
		t.Fatal(err)
	}
	flush(t, q)
	reg.Read(0, after)
	if !bytes.Equal(after[8:12], []byte{1, 2, 3, 4}) {
		t.Errorf("the write between keep-alives: % x", after[8:12])
	}
}

// With KeepAlive 0 an idle connection sends nothing.
func TestAnIdleRequesterWithoutKeepAliveSendsNothing(t *testing.T) {
	resp, _, _ := startResponder(t, 4096, rdma.AccessRemoteWrite)
	q := dial(t, testConfig(resp.LocalAddr()))
	before := q.Stats().Packets.Load()
	time.Sleep(100 * time.Millisecond)
	if n := q.Stats().Packets.Load() - before; n != 0 || q.Stats().KeepAlives.Load() != 0 {
		t.Errorf("%d packets, %d keep-alives sent while idle with KeepAlive 0", n, q.Stats().KeepAlives.Load())
	}
}

// The requester names its collector's address as peer in its log lines, so
// that a caller that names the collector (a translator over several logs
// collector=NAME) gets no key twice.
func TestTheRequestersLogLinesRepeatNoKey(t *testing.T) {
	resp, _, _ := startResponder(t, 4096, rdma.AccessRemoteWrite)
	var b syncBuilder
	logger := slog.New(slog.NewTextHandler(&b, nil)).With("collector", "c2")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q, err := requester.Dial(ctx, testConfig(resp.LocalAddr()), logger)
	if err != nil {
		t.Fatal(err)
	}
	q.Close()
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) < 2 {
		t.Fatalf("log: %q", b.String())
	}
	for _, l := range lines {
		seen := map[string]bool{}
		for _, f := range strings.Fields(l) {
			k, _, ok := strings.Cut(f, "=")
			if !ok {
				continue
			}
			if seen[k] {
				t.Errorf("key %s twice in %q", k, l)
			}
			seen[k] = true
		}
		if !strings.Contains(l, "peer="+resp.LocalAddr().String()) {
			t.Errorf("no peer address in %q", l)
		}
	}
}

// syncBuilder is a strings.Builder safe for the logger's goroutines.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
