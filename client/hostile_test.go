package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dta-go/dta/client"
)

// A collector that answers without end (a faulty or hostile one) cannot make
// the client allocate without bound: the answer is cut at the client's
// bound and the error names the option that raises it.
func TestAnAnswerLargerThanTheBoundIsRefused(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"stores":[`))
		chunk := []byte(strings.Repeat(`{"name":"x","id":1},`, 1000))
		for range 200 { // 4 MB, and it would go on
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer ts.Close()
	c, err := client.New(ts.URL, nil, client.WithMaxResponseBytes(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Stores(context.Background())
	if err == nil || !strings.Contains(err.Error(), "WithMaxResponseBytes") {
		t.Fatalf("an endless answer: %v", err)
	}
	// Under the bound, the same client reads it.
	small := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"stores":[]}`))
	}))
	defer small.Close()
	if c, err = client.New(small.URL, nil, client.WithMaxResponseBytes(1<<20)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stores(context.Background()); err != nil {
		t.Fatalf("a small answer: %v", err)
	}
}

func TestAddRefusesCountersThatAreNotTheShapeTheyState(t *testing.T) {
	good := func() client.SketchCounters {
		return client.SketchCounters{Epoch: 1, Kind: "countmin", Rows: 2, Columns: 2, Counters: [][]int64{{1, 2}, {3, 4}}}
	}
	for _, tc := range []struct {
		name string
		edit func(s, o *client.SketchCounters)
	}{
		{"the first has a row more than it states", func(s, o *client.SketchCounters) { s.Counters = append(s.Counters, []int64{5, 6}) }},
		{"the second has a row fewer", func(s, o *client.SketchCounters) { o.Counters = o.Counters[:1] }},
		{"the first has a short row", func(s, o *client.SketchCounters) { s.Counters[1] = s.Counters[1][:1] }},
		{"the second has a long row", func(s, o *client.SketchCounters) { o.Counters[0] = append(o.Counters[0], 9) }},
		{"the kinds differ", func(s, o *client.SketchCounters) { o.Kind = "countsketch" }},
		{"the columns differ", func(s, o *client.SketchCounters) { o.Columns = 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, o := good(), good()
			tc.edit(&s, &o)
			before, _ := json.Marshal(s)
			if err := s.Add(o); err == nil {
				t.Fatal("accepted")
			}
			if after, _ := json.Marshal(s); string(after) != string(before) {
				t.Errorf("a refused Add changed the sum: %s → %s", before, after)
			}
		})
	}
	s, o := good(), good()
	if err := s.Add(o); err != nil || s.Counters[1][1] != 8 {
		t.Errorf("Add of two good sketches: %v, %v", err, s.Counters)
	}
}

// FuzzSketchCountersFromCollectors merges and queries counters as two
// collectors might send them, whatever they send: an error or a sum, never
// a panic.
func FuzzSketchCountersFromCollectors(f *testing.F) {
	f.Add(`{"epoch":1,"kind":"countmin","rows":1,"columns":1,"counters":[[1],[2]]}`,
		`{"epoch":1,"kind":"countmin","rows":1,"columns":1,"counters":[[1]]}`, "42")
	f.Add(`{"epoch":1,"kind":"countsketch","rows":2,"columns":2,"counters":[[1,2],[3,4]]}`,
		`{"epoch":1,"kind":"countsketch","rows":2,"columns":2,"counters":[[1,2],[3]]}`, "0x0102")
	f.Add(`{"epoch":1,"kind":"countmin","rows":-1,"columns":0,"counters":[]}`,
		`{"epoch":1,"kind":"countmin","rows":-1,"columns":0,"counters":[]}`, "1")
	f.Fuzz(func(t *testing.T, a, b, key string) {
		var s, o client.SketchCounters
		if json.Unmarshal([]byte(a), &s) != nil || json.Unmarshal([]byte(b), &o) != nil {
			return
		}
		_ = s.Add(o)
		_, _ = s.Estimate(key)
		_, _ = o.Estimate(key)
	})
}
