package query

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

func TestAppendHeadsListsEveryListInPages(t *testing.T) {
	_, cat, ts := newTestServer(t, testConfig())
	w := newWriter(t, cat)
	for list, n := range []int{3, 0, 8, 5} { // test store: 4 lists, batch 4
		for i := range n {
			w.appendEntries("append", uint32(list), be32(uint32(i)))
		}
	}
	want := []headResponse{{0, 3}, {1, 0}, {2, 8}, {3, 5}}
	var all headsResponse
	get(t, ts, "/v1/stores/append/append", &all)
	if all.Lists != 4 || !slices.Equal(all.Heads, want) || all.Next != nil {
		t.Errorf("all lists: %+v, want heads %v and no next", all, want)
	}
	var page headsResponse
	get(t, ts, "/v1/stores/append/append?first=1&limit=2", &page)
	if page.Lists != 4 || !slices.Equal(page.Heads, want[1:3]) || page.Next == nil || *page.Next != 3 {
		t.Errorf("lists 1..2: %+v", page)
	}
	get(t, ts, "/v1/stores/4/append?first=3&limit=2", &page)
	if !slices.Equal(page.Heads, want[3:]) || page.Next != nil {
		t.Errorf("last page by store id: %+v", page)
	}
}

func TestAppendHeadsRejectsBadParameters(t *testing.T) {
	_, _, ts := newTestServer(t, testConfig())
	for _, tt := range []struct {
		name, path string
		status     int
		field      string
	}{
		{"a first list beyond the store", "/v1/stores/append/append?first=4", http.StatusBadRequest, "first"},
		{"a negative first list", "/v1/stores/append/append?first=-1", http.StatusBadRequest, "first"},
		{"a zero limit", "/v1/stores/append/append?limit=0", http.StatusBadRequest, "limit"},
		{"a limit above the maximum", "/v1/stores/append/append?limit=10001", http.StatusBadRequest, "limit"},
		{"an unknown parameter", "/v1/stores/append/append?cursor=1", http.StatusBadRequest, "cursor"},
		{"a store of another primitive", "/v1/stores/keywrite/append", http.StatusNotFound, "store"},
		{"no such store", "/v1/stores/nope/append", http.StatusNotFound, "store"},
	} {
		t.Run(tt.name+" is refused", func(t *testing.T) {
			var ae apiError
			resp := do(t, ts, http.MethodGet, tt.path, "", &ae)
			if resp.StatusCode != tt.status || ae.Field != tt.field {
				t.Errorf("GET %s: %d field %q (%s), want %d field %q", tt.path, resp.StatusCode, ae.Field, ae.Message, tt.status, tt.field)
			}
		})
	}
}

func TestLatencyIsRecordedPerEndpointExceptStreams(t *testing.T) {
	srv, _, ts := newTestServer(t, testConfig())
	get(t, ts, "/v1/stores", nil)
	get(t, ts, "/v1/stores", nil)
	do(t, ts, http.MethodGet, "/v1/stores/keywrite/keywrite?key=x", "", nil)
	var res appendResponse
	get(t, ts, "/v1/stores/append/append/0?wait=30ms", &res) // a long poll that times out
	st := srv.Stats()
	count := func(e Endpoint) (n uint64) {
		for i := range st.Latency[e].Buckets {
			n += st.Latency[e].Buckets[i].Load()
		}
		return n
	}
	if n := count(EndpointStores); n != 2 {
		t.Errorf("stores: %d durations recorded, want 2", n)
	}
	if n := count(EndpointKeyWrite); n != 1 {
		t.Errorf("keywrite: %d durations recorded (failed requests count too), want 1", n)
	}
	if n, sum := count(EndpointAppend), time.Duration(st.Latency[EndpointAppend].SumNanos.Load()); n != 1 || sum < 30*time.Millisecond {
		t.Errorf("append: %d durations summing to %v, want 1 of at least the 30ms wait", n, sum)
	}
	if n := count(EndpointNotifications); n != 0 {
		t.Errorf("notifications: %d durations recorded, want none", n)
	}
}

func TestLatencyBucketsHoldTheirBounds(t *testing.T) {
	b := LatencyBounds()
	if len(b) != NumLatencyBuckets-1 || !slices.IsSorted(b) {
		t.Fatalf("bounds %v: want %d ascending", b, NumLatencyBuckets-1)
	}
	for _, tt := range []struct {
		d      time.Duration
		bucket int
	}{
		{0, 0},
		{100 * time.Microsecond, 0}, // an upper bound is inclusive
		{101 * time.Microsecond, 1},
		{time.Second, 12},
		{30 * time.Second, NumLatencyBuckets - 2},
		{time.Hour, NumLatencyBuckets - 1},
	} {
		var l Latency
		l.Observe(tt.d)
		if l.Buckets[tt.bucket].Load() != 1 || l.SumNanos.Load() != uint64(tt.d) {
			t.Errorf("Observe(%v): not in bucket %d (bound %v)", tt.d, tt.bucket, b[min(tt.bucket, len(b)-1)])
		}
	}
}
