package query

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/appendlist"
	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
)

// testStores are the stores of the test catalogue: the four defaults of
// `dta up`, shrunk, a Key-Write store of 20-byte values (INT paths), and a
// Key-Write store whose name is another store's id.
func testStores() []store.Config {
	cfgs := store.DefaultConfigs()
	cfgs[0].Slots = 1024
	cfgs[1].Slots = 1024
	cfgs[2].Chunks = 256
	cfgs[3].Lists, cfgs[3].Capacity = 4, 64
	return append(cfgs,
		store.Config{Name: "int-paths", ID: 5, Primitive: "keywrite", Slots: 1000, ValueSize: 20, Redundancy: 2, Hash: "crc32c"},
		store.Config{Name: "3", ID: 6, Primitive: "keywrite", Slots: 64, ValueSize: 4, Redundancy: 1},
	)
}

// newTestCatalog opens the test stores on base pages, closed when tb ends.
func newTestCatalog(tb testing.TB) *store.Catalog {
	tb.Helper()
	descs, err := store.DescribeAll(testStores())
	if err != nil {
		tb.Fatalf("DescribeAll: %v", err)
	}
	cat, err := store.Open(descs, region.Config{HugePages: region.HugePagesOff}, nil)
	if err != nil {
		if runtime.GOOS != "linux" {
			tb.Skipf("regions are not supported on %s: %v", runtime.GOOS, err)
		}
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { cat.Close() })
	return cat
}

// testConfig keeps waits short.
func testConfig() Config {
	return Config{PollInterval: time.Millisecond, MaxWait: 10 * time.Second}
}

// newTestServer serves a fresh catalogue over loopback.
func newTestServer(tb testing.TB, cfg Config) (*Server, *store.Catalog, *httptest.Server) {
	tb.Helper()
	cat := newTestCatalog(tb)
	srv := New(cat, cfg, nil)
	ts := httptest.NewServer(srv.Handler())
	tb.Cleanup(ts.Close)
	return srv, cat, ts
}

// writer fills stores through the primitives' real translation code.
type writer struct {
	tb    testing.TB
	cat   *store.Catalog
	b     *memop.Batch
	cache *postcard.Cache
	lists map[string]*appendlist.Writer
}

func newWriter(tb testing.TB, cat *store.Catalog) *writer {
	c, err := postcard.NewCache(1024)
	if err != nil {
		tb.Fatal(err)
	}
	return &writer{tb: tb, cat: cat, b: memop.NewBatch(16, 1024), cache: c, lists: map[string]*appendlist.Writer{}}
}

func (w *writer) st(name string) *store.Store {
	st := w.cat.ByName(name)
	if st == nil {
		w.tb.Fatalf("no store %q", name)
	}
	return st
}

// keyWrite writes value under the hashed key bytes with n copies.
func (w *writer) keyWrite(name string, key, value []byte, n int, imm bool) {
	w.tb.Helper()
	st := w.st(name)
	spec := st.KeyWrite.Spec()
	w.b.Reset()
	if err := spec.Translate(w.b, st.Index, key, value, n, imm); err != nil {
		w.tb.Fatalf("keywrite Translate: %v", err)
	}
	if err := w.cat.Apply(w.b.Ops); err != nil {
		w.tb.Fatalf("Apply: %v", err)
	}
}

// keyIncrement adds delta to the hashed key bytes.
func (w *writer) keyIncrement(name string, key []byte, delta uint64) {
	w.tb.Helper()
	st := w.st(name)
	spec := st.KeyIncrement.Spec()
	w.b.Reset()
	spec.Translate(w.b, st.Index, key, delta)
	if err := w.cat.Apply(w.b.Ops); err != nil {
		w.tb.Fatalf("Apply: %v", err)
	}
}

// postcard caches one postcard (hop is 1-based; pathLen 0 = unknown).
func (w *writer) postcard(name string, key []byte, hop, pathLen int, value uint32) {
	w.tb.Helper()
	st := w.st(name)
	spec := st.Postcard.Spec()
	if err := w.cache.Add(&spec, st.Index, key, hop, pathLen, value, false, 0, w.b, w.cat); err != nil {
		w.tb.Fatalf("postcard Add: %v", err)
	}
}

// flushPostcards writes every cached partial path.
func (w *writer) flushPostcards() {
	w.tb.Helper()
	if _, err := w.cache.Flush(1, 0, w.b, w.cat); err != nil {
		w.tb.Fatalf("postcard Flush: %v", err)
	}
}

// appendEntries appends entries to list and flushes partial batches.
func (w *writer) appendEntries(name string, list uint32, entries ...[]byte) {
	w.tb.Helper()
	st := w.st(name)
	aw := w.lists[name]
	if aw == nil {
		var err error
		if aw, err = appendlist.NewWriter(st.Append.Spec(), st.Index); err != nil {
			w.tb.Fatal(err)
		}
		w.lists[name] = aw
	}
	for _, e := range entries {
		if err := aw.Add(list, e, false, 0, w.b, w.cat); err != nil {
			w.tb.Fatalf("append Add: %v", err)
		}
	}
	if _, err := aw.Flush(0, 0, w.b, w.cat); err != nil {
		w.tb.Fatalf("append Flush: %v", err)
	}
}

func be32(v uint32) []byte { return []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)} }

// do sends a request and decodes the JSON answer into out (when not nil).
func do(tb testing.TB, ts *httptest.Server, method, path, body string, out any) *http.Response {
	tb.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.URL+path, rd)
	if err != nil {
		tb.Fatal(err)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		tb.Fatalf("%s %s: Content-Type %q, body %s", method, path, ct, raw)
	}
	if out != nil {
		reflect.ValueOf(out).Elem().SetZero()
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(out); err != nil {
			tb.Fatalf("%s %s: decode %s: %v", method, path, raw, err)
		}
	}
	return resp
}

// get is do for a GET that must succeed.
func get(tb testing.TB, ts *httptest.Server, path string, out any) {
	tb.Helper()
	if resp := do(tb, ts, http.MethodGet, path, "", out); resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET %s: status %d", path, resp.StatusCode)
	}
}

// post is do for a POST that must succeed.
func post(tb testing.TB, ts *httptest.Server, path, body string, out any) {
	tb.Helper()
	if resp := do(tb, ts, http.MethodPost, path, body, out); resp.StatusCode != http.StatusOK {
		tb.Fatalf("POST %s: status %d", path, resp.StatusCode)
	}
}
