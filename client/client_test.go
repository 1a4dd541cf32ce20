package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dta-go/dta/client"
	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/appendlist"
	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/internal/query"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
)

// env is a collector's catalogue behind a real query server.
type env struct {
	t     *testing.T
	cat   *store.Catalog
	srv   *query.Server
	ts    *httptest.Server
	c     *client.Client
	mu    sync.Mutex
	b     *memop.Batch
	cache *postcard.Cache
	aw    *appendlist.Writer
}

func newEnv(t *testing.T) *env {
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
	c, err := client.New(ts.URL+"/", ts.Client())
	if err != nil {
		t.Fatal(err)
	}
	cache, _ := postcard.NewCache(256)
	aw, err := appendlist.NewWriter(cat.ByName("append").Append.Spec(), cat.ByName("append").Index)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, cat: cat, srv: srv, ts: ts, c: c, b: memop.NewBatch(16, 1024), cache: cache, aw: aw}
}

func be32(v uint32) []byte { return []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)} }

func (e *env) keyWrite(key uint32, value uint32, n int, imm bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.cat.ByName("keywrite")
	spec := st.KeyWrite.Spec()
	k := keywrite.CompatKey(key)
	e.b.Reset()
	if err := spec.Translate(e.b, st.Index, k[:], be32(value), n, imm); err != nil {
		e.t.Error(err)
	}
	if err := e.cat.Apply(e.b.Ops); err != nil {
		e.t.Error(err)
	}
}

func (e *env) keyIncrement(key uint32, delta uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.cat.ByName("keyincrement")
	spec := st.KeyIncrement.Spec()
	k := keywrite.CompatKey(key)
	e.b.Reset()
	spec.Translate(e.b, st.Index, k[:], delta)
	if err := e.cat.Apply(e.b.Ops); err != nil {
		e.t.Error(err)
	}
}

func (e *env) postcardPath(key uint32, values ...uint32) {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.cat.ByName("postcard")
	spec := st.Postcard.Spec()
	k := postcard.CompatKey(key)
	for i, v := range values {
		if err := e.cache.Add(&spec, st.Index, k[:], i+1, len(values), v, false, 0, e.b, e.cat); err != nil {
			e.t.Error(err)
		}
	}
}

func (e *env) appendEntries(list uint32, values ...uint32) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, v := range values {
		if err := e.aw.Add(list, be32(v), false, 0, e.b, e.cat); err != nil {
			e.t.Error(err)
		}
	}
	if _, err := e.aw.Flush(0, 0, e.b, e.cat); err != nil {
		e.t.Error(err)
	}
}

func TestNewRejectsURLsThatAreNoServer(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8040", "ftp://h", "http://", "http://h:1/?q=1", "://"} {
		if _, err := client.New(u, nil); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
	if _, err := client.New("https://collector.example:8040/dta", nil); err != nil {
		t.Errorf("a URL with a path prefix: %v", err)
	}
}

func TestStoresDescribesTheCatalogue(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	stores, err := e.c.Stores(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(stores) != 5 || stores[0].Name != "keywrite" || stores[0].Geometry.Slots != 1024 || stores[3].Geometry.Lists != 4 {
		t.Errorf("stores %+v", stores)
	}
	s, err := e.c.Store(ctx, "3")
	if err != nil || s.Name != "postcard" || *s.Geometry.MaxValue == 0 {
		t.Errorf("store 3: %+v, %v", s, err)
	}
}

func TestKeyWriteSingleAndBatch(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.keyWrite(1, 11, 2, false)
	e.keyWrite(2, 22, 4, false)
	r, err := e.c.KeyWrite(ctx, "keywrite", "2", client.KeyWriteOptions{})
	if err != nil || r.Status != client.StatusFound || *r.ValueU32 != 22 || r.Value.String() != "00000016" || r.Votes != 4 {
		t.Errorf("key 2: %+v, %v", r, err)
	}
	r, err = e.c.KeyWrite(ctx, "keywrite", "1", client.KeyWriteOptions{N: 4, Threshold: 3})
	if err != nil || r.Status != client.StatusEmpty || r.Votes != 2 {
		t.Errorf("key 1 threshold 3: %+v, %v", r, err)
	}
	// More keys than one request carries: split and rejoined in order.
	keys := make([]string, client.MaxBatch+3)
	for i := range keys {
		keys[i] = fmt.Sprint(i % 5)
	}
	rs, err := e.c.KeyWriteBatch(ctx, "keywrite", keys, client.KeyWriteOptions{N: 2})
	if err != nil || len(rs) != len(keys) {
		t.Fatalf("batch: %d results, %v", len(rs), err)
	}
	for i, r := range rs {
		found := i%5 == 1 || i%5 == 2
		if r.Key != keys[i] || (r.Status == client.StatusFound) != found {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	if got := e.srv.Stats().Requests[query.EndpointKeyWriteBatch].Load(); got != 2 {
		t.Errorf("%d batch requests, want 2", got)
	}
}

func TestKeyIncrementAndReset(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.keyIncrement(8, 5)
	e.keyIncrement(8, 6)
	r, err := e.c.KeyIncrement(ctx, "keyincrement", "8", 0)
	if err != nil || r.Count != 11 || r.Copies != 4 {
		t.Errorf("%+v, %v", r, err)
	}
	rs, err := e.c.KeyIncrementBatch(ctx, "2", []string{"8", "9"}, 4)
	if err != nil || len(rs) != 2 || rs[0].Count != 11 || rs[1].Count != 0 {
		t.Errorf("batch %+v, %v", rs, err)
	}
	if err := e.c.ResetKeyIncrement(ctx, "keyincrement"); err != nil {
		t.Fatal(err)
	}
	if r, _ := e.c.KeyIncrement(ctx, "keyincrement", "8", 0); r.Count != 0 {
		t.Errorf("after reset: %+v", r)
	}
}

func TestPostcardPaths(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.postcardPath(77, 5, 6, 7)
	r, err := e.c.Postcard(ctx, "postcard", "77")
	if err != nil || r.Status != client.StatusFound || !r.Complete || len(r.Hops) != 3 || r.Hops[2] != (client.Hop{Hop: 3, Value: 7, Present: true}) {
		t.Errorf("%+v, %v", r, err)
	}
	rs, err := e.c.PostcardBatch(ctx, "postcard", []string{"78", "77"})
	if err != nil || rs[0].Status != client.StatusEmpty || rs[1].Status != client.StatusFound {
		t.Errorf("batch %+v, %v", rs, err)
	}
}

func TestAppendPollHeadAndReset(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.appendEntries(0, 1, 2, 3)
	r, err := e.c.Append(ctx, "append", 0, client.FromOldest, client.AppendOptions{Limit: 2})
	if err != nil || len(r.Entries) != 2 || r.NextCursor != 2 || r.Head != 3 || *r.Entries[1].ValueU32 != 2 {
		t.Fatalf("from oldest: %+v, %v", r, err)
	}
	r, err = e.c.Append(ctx, "append", 0, client.CursorAt(r.NextCursor), client.AppendOptions{})
	if err != nil || len(r.Entries) != 1 || r.Entries[0].Index != 2 {
		t.Errorf("cursor 2: %+v, %v", r, err)
	}
	r, err = e.c.Append(ctx, "append", 0, client.FromHead, client.AppendOptions{Wait: 20 * time.Millisecond})
	if err != nil || len(r.Entries) != 0 || r.NextCursor != 3 {
		t.Errorf("from head: %+v, %v", r, err)
	}
	if h, err := e.c.AppendHead(ctx, "append", 0); err != nil || h != 3 {
		t.Errorf("head %d, %v", h, err)
	}
	e.appendEntries(2, 7)
	heads, err := e.c.AppendHeads(ctx, "append")
	if want := []client.ListHead{{0, 3}, {1, 0}, {2, 1}, {3, 0}}; err != nil || !slices.Equal(heads, want) {
		t.Errorf("heads %v, %v; want %v", heads, err, want)
	}
	if err := e.c.ResetAppend(ctx, "append"); err != nil {
		t.Fatal(err)
	}
	_, err = e.c.Append(ctx, "append", 0, client.CursorAt(3), client.AppendOptions{})
	var ae *client.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusConflict || ae.Head == nil || *ae.Head != 0 || ae.Field != "cursor" {
		t.Errorf("after reset: %v", err)
	}
}

func TestFollowDeliversEntriesAsTheyArrive(t *testing.T) {
	e := newEnv(t)
	e.appendEntries(1, 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan client.Entry, 16)
	done := make(chan error, 1)
	go func() {
		done <- e.c.Follow(ctx, "append", 1, client.FromHead, func(en client.Entry) error {
			got <- en
			return nil
		})
	}()
	for i := uint32(0); i < 3; i++ {
		// Each entry arrives while Follow is parked in a long poll.
		deadline := time.Now().Add(5 * time.Second)
		for e.srv.Stats().LongPolls.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		e.appendEntries(1, 200+i)
		select {
		case en := <-got:
			if en.Index != uint64(1+i) || *en.ValueU32 != 200+i || en.Lost != 0 {
				t.Errorf("entry %d: %+v", i, en)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("entry %d not delivered", i)
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Follow returned %v, want context.Canceled", err)
	}
}

func TestFollowReportsLostEntriesAndCallbackErrors(t *testing.T) {
	e := newEnv(t)
	vals := make([]uint32, 100) // laps the 64-entry ring
	for i := range vals {
		vals[i] = uint32(i)
	}
	e.appendEntries(2, vals...)
	stop := errors.New("stop")
	var first client.Entry
	err := e.c.Follow(context.Background(), "append", 2, client.CursorAt(0), func(en client.Entry) error {
		first = en
		return stop
	})
	if err != stop {
		t.Fatalf("Follow returned %v, want the callback's error", err)
	}
	if first.Lost == 0 || first.Index != first.Lost {
		t.Errorf("first entry %+v: want Lost = Index > 0", first)
	}
}

func TestNotificationsStream(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan client.Notification, 4)
	done := make(chan error, 1)
	go func() {
		done <- e.c.Notifications(ctx, func(n client.Notification) error {
			got <- n
			return nil
		})
	}()
	deadline := time.Now().Add(5 * time.Second)
	for e.srv.Stats().Streams.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	e.keyWrite(3, 33, 1, true)
	select {
	case n := <-got:
		if n.Store != "keywrite" || n.Imm == 0 {
			t.Errorf("notification %+v", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notification")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Notifications returned %v", err)
	}
}

func TestErrorsCarryStatusAndServerText(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, err := e.c.KeyWrite(ctx, "nope", "1", client.KeyWriteOptions{})
	var ae *client.Error
	if !errors.As(err, &ae) || ae.StatusCode != 404 || ae.Field != "store" || !strings.Contains(ae.Error(), `no store named "nope"`) ||
		!strings.Contains(ae.Error(), "404 Not Found") {
		t.Errorf("unknown store: %v", err)
	}
	_, err = e.c.KeyWrite(ctx, "keywrite", "0xz", client.KeyWriteOptions{})
	if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Field != "key" {
		t.Errorf("bad key: %v", err)
	}
	_, err = e.c.KeyIncrementBatch(ctx, "keyincrement", []string{"1", "x"}, 0)
	if !errors.As(err, &ae) || ae.Field != "keys[1]" {
		t.Errorf("bad batch key: %v", err)
	}
	if _, err := e.c.PostcardBatch(ctx, "postcard", nil); err == nil {
		t.Error("an empty batch was sent")
	}
	// A server that is not the query API: the text is kept.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream gone", http.StatusBadGateway)
	}))
	defer plain.Close()
	c, _ := client.New(plain.URL, nil)
	_, err = c.Stores(ctx)
	if !errors.As(err, &ae) || ae.StatusCode != 502 || ae.Message != "upstream gone" {
		t.Errorf("plain error: %v", err)
	}
}

// TestClientTypesCoverEveryField decodes the server's answers strictly into
// the client's types: a field the server sends and the client lacks fails.
func TestClientTypesCoverEveryField(t *testing.T) {
	e := newEnv(t)
	e.keyWrite(1, 1, 2, false)
	e.keyIncrement(1, 1)
	e.postcardPath(1, 1, 2)
	e.appendEntries(0, 1)
	strict := func(method, path, body string, out any) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, e.ts.URL+path, rd)
		resp, err := e.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(out); err != nil {
			t.Errorf("%s %s: %s: %v", method, path, raw, err)
		}
	}
	strict("GET", "/v1/stores", "", &struct {
		Stores []client.Store `json:"stores"`
	}{})
	strict("GET", "/v1/stores/postcard", "", &client.Store{})
	strict("GET", "/v1/stores/keywrite/keywrite?key=1", "", &client.KeyWriteResult{})
	strict("POST", "/v1/stores/keywrite/keywrite:batch", `{"keys":["1"]}`, &struct {
		Results []client.KeyWriteResult `json:"results"`
	}{})
	strict("GET", "/v1/stores/keyincrement/keyincrement?key=1", "", &client.KeyIncrementResult{})
	strict("GET", "/v1/stores/postcard/postcard?key=1", "", &client.PostcardResult{})
	strict("GET", "/v1/stores/append/append/0?from=oldest", "", &client.AppendResult{})
	strict("GET", "/v1/stores/append/append/0?cursor=9", "", &client.Error{})
	strict("GET", "/v1/stores/append/append/0/head", "", &struct {
		List uint32 `json:"list"`
		Head uint64 `json:"head"`
	}{})
}

func TestCursorText(t *testing.T) {
	for in, want := range map[string]string{"": "head", "head": "head", "oldest": "oldest", "42": "42"} {
		c, err := client.ParseCursor(in)
		if err != nil || c.String() != want {
			t.Errorf("ParseCursor(%q) = %v, %v; want %s", in, c, err, want)
		}
	}
	if _, err := client.ParseCursor("-1"); err == nil {
		t.Error("ParseCursor(-1) accepted")
	}
}

func TestAnEmptyStoreNameIsRefusedBeforeAnyRequest(t *testing.T) {
	e := newEnv(t)
	if _, err := e.c.KeyWrite(context.Background(), "", "1", client.KeyWriteOptions{}); !errors.Is(err, client.ErrNoStore) {
		t.Errorf("KeyWrite with an empty store: %v, want ErrNoStore", err)
	}
}
