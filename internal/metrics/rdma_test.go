package metrics

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dta-go/dta/internal/rdma"
)

// uint64Counters returns the addresses of the atomic.Uint64 fields of the
// struct s points to, by field name.
func uint64Counters(s any) map[*atomic.Uint64]string {
	out := map[*atomic.Uint64]string{}
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		if p, ok := v.Field(i).Addr().Interface().(*atomic.Uint64); ok {
			out[p] = v.Type().Field(i).Name
		}
	}
	return out
}

// checkExportsEvery fails unless l exports each counter of stats once, and
// registers and gathers c.
func checkExportsEvery(t *testing.T, c prometheus.Collector, l counterList, stats any, skip map[string]bool) {
	t.Helper()
	want := uint64Counters(stats)
	seen := map[*atomic.Uint64]bool{}
	for _, e := range l {
		if _, ok := want[e.v]; !ok {
			t.Errorf("%v exports a counter that is not one of the stats' fields", e.d)
		}
		if seen[e.v] {
			t.Errorf("%v exports a field twice", e.d)
		}
		seen[e.v] = true
	}
	for p, name := range want {
		if !seen[p] && !skip[name] {
			t.Errorf("stats field %s is not exported", name)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
}

func TestEveryRDMACounterIsExportedOnce(t *testing.T) {
	rc := rdma.DefaultResponderConfig()
	rc.Addr = "127.0.0.1:0"
	resp, err := rdma.NewResponder(rc, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- resp.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	qc := rdma.DefaultRequesterConfig()
	qc.Collector = resp.LocalAddr()
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	req, err := rdma.Dial(dctx, qc, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer req.Close()

	q := Requester{R: req}
	t.Run("requester", func(t *testing.T) {
		// LastAtomic is a value, not a count.
		checkExportsEvery(t, q, q.list(), req.Stats(), map[string]bool{"LastAtomic": true})
	})
	r := Responder{R: resp}
	t.Run("responder", func(t *testing.T) {
		checkExportsEvery(t, r, r.list(), resp.Stats(), nil)
	})
}
