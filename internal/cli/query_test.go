package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/appendlist"
	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/internal/query"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
)

// queryTestEnv is a small catalogue, filled through the primitives'
// translation code, behind a real query server.
type queryTestEnv struct {
	t   *testing.T
	cat *store.Catalog
	srv *query.Server
	url string
	mu  sync.Mutex
	b   *memop.Batch
	aw  *appendlist.Writer
}

func newQueryTestEnv(t *testing.T) *queryTestEnv {
	t.Helper()
	cfgs := store.DefaultConfigs()
	cfgs[0].Slots, cfgs[1].Slots, cfgs[2].Chunks = 1024, 1024, 256
	cfgs[3].Lists, cfgs[3].Capacity = 4, 64
	descs, err := store.DescribeAll(cfgs)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := store.Open(descs, region.Config{HugePages: region.HugePagesOff}, nil)
	if err != nil {
		if runtime.GOOS != "linux" {
			t.Skipf("regions need linux: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	srv := query.New(cat, query.Config{PollInterval: time.Millisecond}, nil)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	e := &queryTestEnv{t: t, cat: cat, srv: srv, url: ts.URL, b: memop.NewBatch(16, 1024)}
	e.newAppendWriter()
	return e
}

func (e *queryTestEnv) newAppendWriter() {
	st := e.cat.ByName("append")
	aw, err := appendlist.NewWriter(st.Append.Spec(), st.Index)
	if err != nil {
		e.t.Fatal(err)
	}
	e.mu.Lock()
	e.aw = aw
	e.mu.Unlock()
}

func (e *queryTestEnv) apply() {
	if err := e.cat.Apply(e.b.Ops); err != nil {
		e.t.Error(err)
	}
}

func (e *queryTestEnv) fill() {
	e.mu.Lock()
	defer e.mu.Unlock()
	kw := e.cat.ByName("keywrite")
	spec := kw.KeyWrite.Spec()
	k := keywrite.CompatKey(1)
	e.b.Reset()
	if err := spec.Translate(e.b, kw.Index, k[:], []byte{0, 0, 0, 42}, 2, false); err != nil {
		e.t.Fatal(err)
	}
	e.apply()
	ki := e.cat.ByName("keyincrement")
	kspec := ki.KeyIncrement.Spec()
	e.b.Reset()
	kspec.Translate(e.b, ki.Index, k[:], 12)
	e.apply()
	pc := e.cat.ByName("postcard")
	pspec := pc.Postcard.Spec()
	cache, _ := postcard.NewCache(64)
	pk := postcard.CompatKey(42)
	for hop := 1; hop <= 5; hop++ {
		if err := cache.Add(&pspec, pc.Index, pk[:], hop, 0, uint32(100+hop), false, 0, e.b, e.cat); err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *queryTestEnv) appendEntries(list uint32, vals ...byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, v := range vals {
		if err := e.aw.Add(list, []byte{0, 0, 0, v}, false, 0, e.b, e.cat); err != nil {
			e.t.Error(err)
		}
	}
	if _, err := e.aw.Flush(0, 0, e.b, e.cat); err != nil {
		e.t.Error(err)
	}
}

// run runs dta with args against the server and returns the exit code,
// stdout and stderr.
func (e *queryTestEnv) run(args ...string) (int, string, string) {
	e.t.Helper()
	var out, errb bytes.Buffer
	if !slices.Contains(args, "--server") {
		args = append(args, "--server", e.url)
	}
	code := Run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestQueryStoresPrintsATable(t *testing.T) {
	e := newQueryTestEnv(t)
	code, out, errs := e.run("query", "stores")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"NAME", "keywrite", "1024 slots, 4 B values, N≤4, crc32", "append", "4 lists × 64 entries of 4 B, batch 4", "8.0 KiB"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = e.run("query", "stores", "-o", "json")
	var stores []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &stores) != nil || len(stores) != 5 {
		t.Errorf("json: exit %d, %s", code, out)
	}
}

func TestQueryKeyWriteSingleBatchAndJSON(t *testing.T) {
	e := newQueryTestEnv(t)
	e.fill()
	code, out, errs := e.run("query", "keywrite", "--key", "1", "--n", "2")
	if code != 0 || !strings.Contains(out, "found") || !strings.Contains(out, "0x0000002a") || !strings.Contains(out, " 42 ") {
		t.Errorf("exit %d:\n%s%s", code, out, errs)
	}
	code, out, _ = e.run("query", "keywrite", "--key", "1", "--key", "2", "--key", "tcp,10.0.0.1:5000,10.0.0.2:80", "-o", "json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	var r struct {
		Key      string `json:"key"`
		Status   string `json:"status"`
		ValueU32 uint32 `json:"value_u32"`
	}
	if json.Unmarshal([]byte(lines[0]), &r) != nil || r.Status != "found" || r.ValueU32 != 42 {
		t.Errorf("line 1: %s", lines[0])
	}
	if json.Unmarshal([]byte(lines[2]), &r) != nil || r.Status != "empty" || r.Key != "tcp,10.0.0.1:5000,10.0.0.2:80" {
		t.Errorf("line 3: %s", lines[2])
	}
}

func TestQueryKeyIncrementAndPostcard(t *testing.T) {
	e := newQueryTestEnv(t)
	e.fill()
	code, out, errs := e.run("query", "keyincrement", "--key", "1")
	if code != 0 || !strings.Contains(out, "12") {
		t.Errorf("keyincrement: exit %d:\n%s%s", code, out, errs)
	}
	code, out, errs = e.run("query", "postcard", "--key", "42", "--key", "43")
	if code != 0 || !strings.Contains(out, "101 102 103 104 105") || !strings.Contains(out, "yes") || !strings.Contains(out, "empty") {
		t.Errorf("postcard: exit %d:\n%s%s", code, out, errs)
	}
}

func TestQueryAppendPollsOnce(t *testing.T) {
	e := newQueryTestEnv(t)
	e.appendEntries(1, 7, 8, 9)
	code, out, errs := e.run("query", "append", "--list", "1")
	if code != 0 || !strings.Contains(out, "0x00000008") || strings.Count(out, "\n") != 4 || !strings.Contains(errs, "next cursor 3, head 3, lost 0") {
		t.Errorf("exit %d:\n%s%s", code, out, errs)
	}
	code, out, _ = e.run("query", "append", "--list", "1", "--cursor", "2", "-o", "json")
	var r struct {
		Entries    []struct{ Index uint64 } `json:"entries"`
		NextCursor uint64                   `json:"next_cursor"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || len(r.Entries) != 1 || r.Entries[0].Index != 2 || r.NextCursor != 3 {
		t.Errorf("json: exit %d: %s", code, out)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestQueryAppendFollowStreamsUntilCancelledAndSurvivesAReset(t *testing.T) {
	e := newQueryTestEnv(t)
	e.appendEntries(2, 1) // before following: not printed
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"query", "append", "--list", "2", "--follow", "-o", "json", "--server", e.url}, strings.NewReader(""), &out, &errb)
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s; stdout:\n%s\nstderr:\n%s", what, out.String(), errb.String())
			}
			time.Sleep(time.Millisecond)
		}
	}
	parked := func() bool { return e.srv.Stats().LongPolls.Load() > 0 }
	waitFor("follow never parked", parked)
	e.appendEntries(2, 2, 3)
	waitFor("entries 2 and 3 not printed", func() bool { return strings.Count(out.String(), "\n") == 2 })

	// Reset the store and start a new writer: following goes on from 0.
	e.cat.ByName("append").Append.Reset()
	e.newAppendWriter()
	waitFor("reset not reported", func() bool { return strings.Contains(errb.String(), "was reset (head now 0)") })
	waitFor("follow never parked again", parked)
	e.appendEntries(2, 4)
	waitFor("entry after the reset not printed", func() bool { return strings.Count(out.String(), "\n") == 3 })
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after Ctrl-C: %s", code, errb.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not stop when cancelled")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		`{"index":1,"value":"00000002","value_u32":2}`,
		`{"index":2,"value":"00000003","value_u32":3}`,
		`{"index":0,"value":"00000004","value_u32":4}`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestQueryErrorsAndExitCodes(t *testing.T) {
	e := newQueryTestEnv(t)
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	tests := []struct {
		name string
		args []string
		code int
		errs string
	}{
		{"a key that is no key form", []string{"query", "keywrite", "--key", "abc"}, 2, "--key: key \"abc\""},
		{"no key", []string{"query", "keyincrement"}, 2, "give at least one key"},
		{"an unknown output format", []string{"query", "stores", "-o", "yaml"}, 2, `-o: "yaml" is not table or json`},
		{"a server URL without scheme", []string{"query", "stores", "--server", "127.0.0.1:8040"}, 2, "--server"},
		{"a negative n", []string{"query", "keywrite", "--key", "1", "--n", "-1"}, 2, "must not be negative"},
		{"a bad cursor", []string{"query", "append", "--cursor", "newest"}, 2, "--cursor"},
		{"a limit with --follow", []string{"query", "append", "--follow", "--limit", "5"}, 2, "not to --follow"},
		{"an unknown store", []string{"query", "keywrite", "--key", "1", "--store", "nope"}, 1, `404 Not Found: no store named "nope"`},
		{"a store of another primitive", []string{"query", "postcard", "--key", "1", "--store", "keywrite"}, 1, "not a postcard store"},
		{"n above the store's maximum", []string{"query", "keywrite", "--key", "1", "--n", "9"}, 1, "n: 9 out of range [1, 4]"},
		{"a list beyond the store's", []string{"query", "append", "--list", "9"}, 1, "beyond store"},
		{"a cursor ahead of the head", []string{"query", "append", "--cursor", "5"}, 1, "409 Conflict"},
		{"a collector that is not running", []string{"query", "stores", "--server", dead}, 1, "cannot reach the collector"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := e.run(tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.errs) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errs, tc.code, tc.errs)
			}
		})
	}
}
