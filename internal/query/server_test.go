package query

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/internal/primitive/sketchmerge"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/sketch"
	"github.com/dta-go/dta/wire/dta"
)

func TestStoresListsEveryStoreWithItsGeometry(t *testing.T) {
	_, cat, ts := newTestServer(t, testConfig())
	var resp storesResponse
	get(t, ts, "/v1/stores", &resp)
	var names []string
	for _, s := range resp.Stores {
		names = append(names, s.Name)
	}
	want := []string{"keywrite", "keyincrement", "postcard", "append", "sketchmerge", "int-paths", "3"}
	if !slices.Equal(names, want) {
		t.Fatalf("names %v, want %v", names, want)
	}
	kw := resp.Stores[0]
	if kw.ID != 1 || kw.Primitive != "keywrite" || !kw.Default || kw.Geometry.Slots != 1024 || kw.Geometry.ValueSize != 4 ||
		kw.Geometry.MaxRedundancy != 4 || kw.Geometry.SlotSize != 8 || kw.Geometry.Hash != cat.ByName("keywrite").KeyWrite.Spec().Hash.String() || kw.RegionBytes != 8192 || kw.Backing == "" {
		t.Errorf("keywrite store %+v", kw)
	}
	ki := resp.Stores[1].Geometry
	if ki.Redundancy != 4 || ki.MaxRedundancy != 0 || ki.SlotSize != 8 {
		t.Errorf("keyincrement geometry %+v", ki)
	}
	pc := resp.Stores[2].Geometry
	if pc.Chunks != 256 || pc.Hops != 5 || pc.Redundancy != 2 || pc.MinValue == nil || *pc.MinValue != 0 || pc.MaxValue == nil {
		t.Errorf("postcard geometry %+v", pc)
	}
	ap := resp.Stores[3].Geometry
	if ap.Lists != 4 || ap.Capacity != 64 || ap.EntrySize != 4 || ap.Batch != 4 || ap.Slots != 0 {
		t.Errorf("append geometry %+v", ap)
	}
}

func TestStoreIsFoundByNameBeforeID(t *testing.T) {
	_, _, ts := newTestServer(t, testConfig())
	for path, want := range map[string]string{
		"/v1/stores/postcard": "postcard",
		"/v1/stores/4":        "append",
		"/v1/stores/3":        "3", // a store named "3" wins over the store with id 3
		"/v1/stores/6":        "3",
	} {
		var info storeInfo
		get(t, ts, path, &info)
		if info.Name != want {
			t.Errorf("GET %s: store %q, want %q", path, info.Name, want)
		}
	}
}

func TestKeyWriteFindsValuesWrittenByTranslation(t *testing.T) {
	_, cat, ts := newTestServer(t, testConfig())
	w := newWriter(t, cat)
	k := keywrite.CompatKey(42)
	w.keyWrite("keywrite", k[:], be32(0xdeadbeef), 2, false)

	var res keyWriteResult
	get(t, ts, "/v1/stores/keywrite/keywrite?key=42&n=2", &res)
	if res.Key != "42" || res.Status != "found" || string(res.Value) != string(be32(0xdeadbeef)) || res.ValueU32 == nil ||
		*res.ValueU32 != 0xdeadbeef || res.Votes != 2 || res.Checks != 2 || res.Copies != 2 {
		t.Errorf("n=2: got %+v", res)
	}
	// Default n is the store's maximum (4): two more copies read, none match.
	get(t, ts, "/v1/stores/1/keywrite?key=42", &res)
	if res.Status != "found" || res.Votes != 2 || res.Copies != 4 {
		t.Errorf("default n: got %+v", res)
	}
	get(t, ts, "/v1/stores/keywrite/keywrite?key=42&threshold=3", &res)
	if res.Status != "empty" || res.Value != nil || res.ValueU32 != nil || res.Votes != 2 {
		t.Errorf("threshold 3: got %+v", res)
	}
	get(t, ts, "/v1/stores/keywrite/keywrite?key=43", &res)
	if res.Status != "empty" || res.Checks != 0 {
		t.Errorf("unwritten key: got %+v", res)
	}
	// A decimal key is hashed little-endian for Key-Write: the same 4 bytes
	// given in hex are big-endian, another key.
	get(t, ts, "/v1/stores/keywrite/keywrite?key=0x0000002a", &res)
	if res.Status != "empty" {
		t.Errorf("0x0000002a: got %+v, want empty", res)
	}
	get(t, ts, "/v1/stores/keywrite/keywrite?key=0x2a000000", &res)
	if res.Status != "found" || res.Key != "0x2a000000" {
		t.Errorf("0x2a000000 (the little-endian bytes of 42): got %+v, want found", res)
	}
}

func TestKeyWriteReportsConflicts(t *testing.T) {
	_, cat, ts := newTestServer(t, testConfig())
	w := newWriter(t, cat)
	st := cat.ByName("keywrite")
	k := keywrite.CompatKey(7)
	w.keyWrite("keywrite", k[:], be32(1), 1, false) // copy 0 holds 1
	// Copy 1 holds 2: translate two copies, apply only the second.
	spec := st.KeyWrite.Spec()
	w.b.Reset()
	if err := spec.Translate(w.b, st.Index, k[:], be32(2), 2, false); err != nil {
		t.Fatal(err)
	}
	if w.b.Ops[0].Offset == w.b.Ops[1].Offset {
		t.Skip("copies 0 and 1 of key 7 share a slot")
	}
	if err := cat.Apply(w.b.Ops[1:]); err != nil {
		t.Fatal(err)
	}
	var res keyWriteResult
	get(t, ts, "/v1/stores/keywrite/keywrite?key=7&n=2", &res)
	if res.Status != "conflict" || res.Votes != 1 || res.Checks != 2 || res.Value != nil {
		t.Errorf("got %+v, want conflict", res)
	}
}

func TestKeyWriteLongValuesAndFiveTupleKeys(t *testing.T) {
	_, cat, ts := newTestServer(t, testConfig())
	w := newWriter(t, cat)
	tuple, err := dta.ParseKey("tcp,10.0.0.1:5000,10.0.0.2:80")
	if err != nil {
		t.Fatal(err)
	}
	path := []byte("switch01switch02sw03")
	w.keyWrite("int-paths", tuple.Bytes, path, 2, false)
	var res keyWriteResult
	get(t, ts, "/v1/stores/int-paths/keywrite?key=tcp,10.0.0.1:5000,10.0.0.2:80", &res)
	if res.Status != "found" || string(res.Value) != string(path) || res.ValueU32 != nil || res.Key != "tcp,10.0.0.1:5000,10.0.0.2:80" {
		t.Errorf("got %+v", res)
	}
	// The same key in its hex form.
	get(t, ts, "/v1/stores/int-paths/keywrite?key=0x0a0000010a0000021388005006", &res)
	if res.Status != "found" {
		t.Errorf("hex form: got %+v", res)
	}
}

func TestKeyWriteBatchAnswersInOrder(t *testing.T) {
	_, cat, ts := newTestServer(t, testConfig())
	w := newWriter(t, cat)
	for i := uint32(1); i <= 3; i++ {
		k := keywrite.CompatKey(i)
		w.keyWrite("keywrite", k[:], be32(i*100), 2, false)
	}
	var resp keyWriteBatchResponse
	post(t, ts, "/v1/stores/keywrite/keywrite:batch", `{"keys": ["3", 1, "9", "2"], "n": 2, "threshold": 2}`, &resp)
	var got []string
	for _, r := range resp.Results {
		u := "-"
		if r.ValueU32 != nil {
			u = fmt.Sprint(*r.ValueU32)
		}
		got = append(got, r.Key+"="+r.Status+":"+u)
	}
	want := []string{"3=found:300", "1=found:100", "9=empty:-", "2=found:200"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestKeyIncrementCountsResetsAndBatches(t *testing.T) {
	_, cat, ts := newTestServer(t, testConfig())
	w := newWriter(t, cat)
	k := keywrite.CompatKey(5)
	w.keyIncrement("keyincrement", k[:], 3)
	w.keyIncrement("keyincrement", k[:], 4)
	tuple, _ := dta.ParseKey("udp,[2001:db8::1]:53,[2001:db8::2]:5353")
	w.keyIncrement("keyincrement", tuple.Bytes, 11)

	var res keyIncrementResult
	get(t, ts, "/v1/stores/keyincrement/keyincrement?key=5", &res)
	if res != (keyIncrementResult{Key: "5", Count: 7, Copies: 4}) {
		t.Errorf("got %+v", res)
	}
	var batch keyIncrementBatchResponse
	post(t, ts, "/v1/stores/keyincrement/keyincrement:batch",
		`{"keys": ["udp,[2001:db8::1]:53,[2001:db8::2]:5353", "5", "6"], "n": 2}`, &batch)
	if len(batch.Results) != 3 || batch.Results[0].Count != 11 || batch.Results[1].Count != 7 || batch.Results[2].Count != 0 ||
		batch.Results[0].Key != "udp,[2001:db8::1]:53,[2001:db8::2]:5353" {
		t.Errorf("batch: %+v", batch.Results)
	}
	var reset resetResponse
	post(t, ts, "/v1/stores/keyincrement/keyincrement:reset", "", &reset)
	if reset != (resetResponse{Store: "keyincrement", Reset: true}) {
		t.Errorf("reset: %+v", reset)
	}
	get(t, ts, "/v1/stores/keyincrement/keyincrement?key=5", &res)
	if res.Count != 0 {
		t.Errorf("after reset: %+v", res)
	}
}

func TestPostcardDecodesCompleteAndPartialPaths(t *testing.T) {
	_, cat, ts := newTestServer(t, testConfig())
	w := newWriter(t, cat)
	full := postcard.CompatKey(1000)
	for hop := 1; hop <= 5; hop++ {
		w.postcard("postcard", full[:], hop, 0, uint32(100+hop))
	}
	var res postcardResult
	get(t, ts, "/v1/stores/postcard/postcard?key=1000", &res)
	if res.Status != "found" || !res.Complete || len(res.Hops) != 5 || res.PathLen != 5 || res.Valid != 2 || res.Copies != 2 {
		t.Fatalf("full path: %+v", res)
	}
	for i, h := range res.Hops {
		if h.Hop != i+1 || !h.Present || h.Value == nil || *h.Value != uint32(101+i) {
			t.Errorf("hop %d: %+v", i+1, h)
		}
	}
	// A decimal key is hashed big-endian for Postcarding: its hex form is the
	// same key.
	get(t, ts, "/v1/stores/postcard/postcard?key=0x000003e8", &res)
	if res.Status != "found" {
		t.Errorf("hex form of 1000: %+v", res)
	}

	// A path of 3 hops whose hop 2 never reported, written when it aged out.
	part := postcard.CompatKey(2000)
	w.postcard("postcard", part[:], 1, 3, 7)
	w.postcard("postcard", part[:], 3, 3, 9)
	w.flushPostcards()
	get(t, ts, "/v1/stores/postcard/postcard?key=2000", &res)
	if res.Status != "found" || res.Complete || len(res.Hops) != 3 || res.PathLen != 3 {
		t.Fatalf("partial path: %+v", res)
	}
	if !res.Hops[0].Present || res.Hops[1].Present || res.Hops[1].Value != nil || !res.Hops[2].Present || *res.Hops[2].Value != 9 {
		t.Errorf("partial path hops: %+v", res.Hops)
	}

	var batch postcardBatchResponse
	post(t, ts, "/v1/stores/postcard/postcard:batch", `{"keys": [2000, "3000", 1000]}`, &batch)
	if len(batch.Results) != 3 || batch.Results[0].Status != "found" || batch.Results[1].Status != "empty" ||
		batch.Results[1].Hops == nil || len(batch.Results[1].Hops) != 0 || !batch.Results[2].Complete {
		t.Errorf("batch: %+v", batch.Results)
	}
}

func TestAppendPollsFromCursorsAndCountsLostEntries(t *testing.T) {
	_, cat, ts := newTestServer(t, testConfig())
	w := newWriter(t, cat)
	for i := range uint32(10) {
		w.appendEntries("append", 1, be32(i))
	}
	var res appendResponse
	get(t, ts, "/v1/stores/append/append/1?from=oldest&limit=4", &res)
	if res.List != 1 || len(res.Entries) != 4 || res.NextCursor != 4 || res.Head != 10 || res.Lost != 0 {
		t.Fatalf("from oldest: %+v", res)
	}
	for i, e := range res.Entries {
		if e.Index != uint64(i) || *e.ValueU32 != uint32(i) || len(e.Value) != 4 {
			t.Errorf("entry %d: %+v", i, e)
		}
	}
	get(t, ts, "/v1/stores/append/append/1?cursor=4", &res)
	if len(res.Entries) != 6 || res.Entries[0].Index != 4 || res.NextCursor != 10 {
		t.Errorf("cursor 4: %+v", res)
	}
	// Without a cursor a poll starts at the head: only new entries.
	get(t, ts, "/v1/stores/append/append/1", &res)
	if len(res.Entries) != 0 || res.NextCursor != 10 || res.Entries == nil {
		t.Errorf("no cursor: %+v", res)
	}
	var head headResponse
	get(t, ts, "/v1/stores/append/append/1/head", &head)
	if head != (headResponse{List: 1, Head: 10}) {
		t.Errorf("head: %+v", head)
	}
	// Lap the ring (capacity 64): cursor 0 has lost entries.
	for i := range uint32(100) {
		w.appendEntries("append", 1, be32(1000+i))
	}
	get(t, ts, "/v1/stores/append/append/1?cursor=0&limit=10000", &res)
	if res.Lost == 0 || res.Entries[0].Index != res.Lost || res.NextCursor != 110 || uint64(len(res.Entries))+res.Lost != 110 {
		t.Errorf("lapped: lost %d, first %d, next %d, %d entries", res.Lost, res.Entries[0].Index, res.NextCursor, len(res.Entries))
	}
	// Reset: the old cursor is now ahead of the head.
	var reset resetResponse
	post(t, ts, "/v1/stores/append/append:reset", "", &reset)
	var ae apiError
	resp := do(t, ts, http.MethodGet, "/v1/stores/append/append/1?cursor=110", "", &ae)
	if resp.StatusCode != http.StatusConflict || ae.Head == nil || *ae.Head != 0 || ae.Field != "cursor" {
		t.Errorf("after reset: %d %+v", resp.StatusCode, ae)
	}
}

func TestAppendLongPollReturnsWhenAnEntryArrives(t *testing.T) {
	srv, cat, ts := newTestServer(t, testConfig())
	w := newWriter(t, cat)
	w.appendEntries("append", 2, be32(1), be32(2))

	done := make(chan appendResponse, 1)
	start := time.Now()
	go func() {
		var res appendResponse
		get(t, ts, "/v1/stores/append/append/2?cursor=2&wait=10s", &res)
		done <- res
	}()
	// Wait until the poll is parked, then append from this goroutine.
	for srv.Stats().LongPolls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	w.appendEntries("append", 2, be32(3))
	select {
	case res := <-done:
		if len(res.Entries) != 1 || res.Entries[0].Index != 2 || *res.Entries[0].ValueU32 != 3 || res.NextCursor != 3 {
			t.Errorf("got %+v", res)
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("long poll took %v", el)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("long poll did not return after an entry arrived")
	}
}

func TestAppendLongPollTimesOutEmpty(t *testing.T) {
	_, _, ts := newTestServer(t, testConfig())
	start := time.Now()
	var res appendResponse
	get(t, ts, "/v1/stores/append/append/0?wait=0.05", &res)
	if el := time.Since(start); el < 50*time.Millisecond {
		t.Errorf("returned after %v, before the wait", el)
	}
	if len(res.Entries) != 0 || res.NextCursor != 0 || res.Head != 0 {
		t.Errorf("got %+v", res)
	}
}

func TestAppendLongPollEndsWhenTheClientGoesAway(t *testing.T) {
	srv, _, ts := newTestServer(t, testConfig())
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/v1/stores/append/append/0?wait=10s", nil)
	errc := make(chan error, 1)
	go func() {
		resp, err := ts.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	for srv.Stats().LongPolls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-errc
	deadline := time.Now().Add(5 * time.Second)
	for srv.Stats().LongPolls.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the long poll kept waiting after its client left")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestNotificationsStreamWritesWithImmediate(t *testing.T) {
	srv, cat, ts := newTestServer(t, testConfig())
	w := newWriter(t, cat)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/v1/notifications", nil)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	k := keywrite.CompatKey(9)
	w.keyWrite("keywrite", k[:], be32(1), 2, true)
	w.keyWrite("keywrite", k[:], be32(2), 1, true)
	sc := bufio.NewScanner(resp.Body)
	var got []notificationJSON
	for len(got) < 2 && sc.Scan() {
		var n notificationJSON
		if err := json.Unmarshal(sc.Bytes(), &n); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, n)
	}
	if len(got) != 2 || got[0].Store != "keywrite" || got[0].Imm != got[1].Imm || got[0].Imm == 0 {
		t.Errorf("got %+v", got)
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for srv.Stats().Streams.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the stream kept running after its client left")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestStatsCountRequestsAndErrorsByReason(t *testing.T) {
	srv, _, ts := newTestServer(t, testConfig())
	get(t, ts, "/v1/stores", nil)
	do(t, ts, http.MethodGet, "/v1/stores/nope/keywrite?key=1", "", nil)
	do(t, ts, http.MethodGet, "/v1/stores/keywrite/keywrite?key=x", "", nil)
	do(t, ts, http.MethodGet, "/v2", "", nil)
	st := srv.Stats()
	checks := []struct {
		name string
		got  uint64
		want uint64
	}{
		{"stores requests", st.Requests[EndpointStores].Load(), 1},
		{"keywrite requests", st.Requests[EndpointKeyWrite].Load(), 2},
		{"keywrite unknown store", st.Errors[EndpointKeyWrite][ReasonUnknownStore].Load(), 1},
		{"keywrite invalid", st.Errors[EndpointKeyWrite][ReasonInvalid].Load(), 1},
		{"other no route", st.Errors[EndpointOther][ReasonNoRoute].Load(), 1},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
	for e := range NumEndpoints {
		if strings.HasPrefix(e.String(), "invalid") || e.String() == "" {
			t.Errorf("endpoint %d has no name", e)
		}
	}
	for r := range NumReasons {
		if strings.HasPrefix(r.String(), "invalid_") || r.String() == "" {
			t.Errorf("reason %d has no name", r)
		}
	}
}

func TestAfterResetIsCalledWithTheStore(t *testing.T) {
	cfg := testConfig()
	var mu sync.Mutex
	var got []string
	cfg.AfterReset = func(s *store.Store) { mu.Lock(); got = append(got, s.Name); mu.Unlock() }
	_, _, ts := newTestServer(t, cfg)
	post(t, ts, "/v1/stores/4/append:reset", "", nil)
	post(t, ts, "/v1/stores/keyincrement/keyincrement:reset", "", nil)
	if !slices.Equal(got, []string{"append", "keyincrement"}) {
		t.Errorf("got %v", got)
	}
}

func TestConfigValidateNamesTheField(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("default: %v", err)
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero: %v", err)
	}
	for _, c := range []struct {
		cfg   Config
		field string
	}{
		{Config{MaxBatch: -1}, "max_batch"},
		{Config{MaxBodyBytes: -1}, "max_body_bytes"},
		{Config{MaxEntries: 2_000_000}, "max_entries"},
		{Config{MaxEntries: 10, DefaultEntries: 11}, "default_entries"},
		{Config{MaxWait: time.Hour}, "max_wait"},
		{Config{PollInterval: -time.Second}, "poll_interval"},
		{Config{NotifyBuffer: -1}, "notify_buffer"},
	} {
		if err := c.cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), c.field+":") {
			t.Errorf("%+v: %v, want an error naming %s", c.cfg, err, c.field)
		}
	}
}

func TestAResetWithABodyChangesNothing(t *testing.T) {
	_, cat, ts := newTestServer(t, testConfig())
	w := newWriter(t, cat)
	k := keywrite.CompatKey(5)
	w.keyIncrement("keyincrement", k[:], 3)
	w.appendEntries("append", 1, be32(7), be32(8))
	for _, c := range []struct{ path, body string }{
		{"/v1/stores/keyincrement/keyincrement:reset", "garbage{{{"},
		{"/v1/stores/append/append:reset", `{"lists":[1]}`},
		{"/v1/stores/append/append:reset", "{}"},
	} {
		if resp := do(t, ts, http.MethodPost, c.path, c.body, nil); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("POST %s with body %q: status %d, want 400", c.path, c.body, resp.StatusCode)
		}
	}
	var res keyIncrementResult
	get(t, ts, "/v1/stores/keyincrement/keyincrement?key=5", &res)
	if res.Count != 3 {
		t.Errorf("after refused resets the count is %d, want 3", res.Count)
	}
	if h, err := cat.ByName("append").Append.Head(1); err != nil || h != 2 {
		t.Errorf("after refused resets list 1's head is %d (%v), want 2", h, err)
	}
}

func TestAHeadOfTheNotificationStreamReturnsAtOnce(t *testing.T) {
	srv, _, ts := newTestServer(t, testConfig())
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodHead, ts.URL+"/v1/notifications", nil)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatalf("HEAD /v1/notifications: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" || srv.Stats().Streams.Load() != 0 {
		t.Fatalf("status %d, Content-Type %q, streams open %d", resp.StatusCode, resp.Header.Get("Content-Type"), srv.Stats().Streams.Load())
	}
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		r, _ := http.NewRequest(m, "/v1/stores/append/append/0?wait=5s", nil)
		if !IsStream(r) {
			t.Errorf("%s of a waiting Append poll is not bounded as a stream", m)
		}
	}
}

func TestTopKNamesEachCandidateOnce(t *testing.T) {
	_, cat, ts := newTestServer(t, testConfig())
	st := cat.ByName("sketchmerge")
	spec := st.SketchMerge.Spec()
	b := memop.NewBatch(64, 0)
	sketchmerge.NewOpener(&spec).Open(b, st.Index, 3)
	if err := cat.Apply(b.Ops); err != nil {
		t.Fatal(err)
	}
	sk, _ := sketch.New(spec.Geometry)
	for k := range 30 {
		sk.Update(binary.BigEndian.AppendUint32(nil, uint32(k%3)), int64(k%3+1))
	}
	sk.Runs(64, func(r sketch.Run) error {
		var v []byte
		for _, c := range r.Counters {
			v = binary.BigEndian.AppendUint64(v, uint64(c))
		}
		b.Reset()
		spec.Add(b, st.Index, &sketchmerge.Run{Epoch: 3, Row: r.Row, Column: r.Column, Counters: v})
		return cat.Apply(b.Ops)
	})
	var res sketchTopKResponse
	post(t, ts, "/v1/stores/sketchmerge/sketchmerge:topk?k=5&epoch=3", `{"keys": [2, "2", "0x00000002", 1, 2]}`, &res)
	var names []string
	for _, h := range res.Hitters {
		names = append(names, h.Key)
	}
	if !slices.Equal(names, []string{"2", "1"}) || res.Hitters[0].Estimate < 30 {
		t.Errorf("hitters %+v, want 2 (as first written) then 1, once each", res.Hitters)
	}
}
