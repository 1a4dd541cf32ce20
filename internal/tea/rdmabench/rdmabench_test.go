package rdmabench_test

import (
	"testing"
	"time"

	"github.com/dta-go/dta/internal/tea/rdmabench"
)

func TestLookupsOverSoftwareRDMAReturnTheParkedPacketOfEverySize(t *testing.T) {
	c := rdmabench.LatencyConfig{Keys: 2000, Sizes: []int{64, 1500}, Unloaded: 200, Window: 16,
		Duration: 100 * time.Millisecond, RawReads: 200, Seed: 1}
	rows, err := rdmabench.Latency(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		t.Logf("%+v", r)
		if r.Failed != 0 || r.Lost != 0 {
			t.Errorf("%d B: %d lookups failed, %d packets lost", r.Size, r.Failed, r.Lost)
		}
		if r.LookupsPerS <= 0 || r.Lookup.Median <= 0 || r.RawRead.Median <= 0 {
			t.Errorf("%d B: nothing measured: %+v", r.Size, r)
		}
		if !(r.Lookup.P10 <= r.Lookup.Median && r.Lookup.Median <= r.Lookup.P90) {
			t.Errorf("%d B: percentiles out of order: %+v", r.Size, r.Lookup)
		}
	}
	if rows[1].ReadBytes <= rows[0].ReadBytes {
		t.Errorf("the 1500 B lookup reads %d bytes, the 64 B one %d", rows[1].ReadBytes, rows[0].ReadBytes)
	}
}

func TestEveryServerOfAPartitionedTableAnswersItsShare(t *testing.T) {
	rows, err := rdmabench.Scale(rdmabench.ScaleConfig{Keys: 2000, Servers: []int{1, 2}, Window: 32,
		Duration: 100 * time.Millisecond, Packet: 64, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		t.Logf("%+v", r)
		if r.Failed != 0 || len(r.PerServer) != r.Servers {
			t.Fatalf("%+v", r)
		}
		for i, p := range r.PerServer {
			// Uniform keys over equal ranges: each server about 1/n.
			if share := p / r.LookupsPerS; share < 0.5/float64(r.Servers) {
				t.Errorf("%d servers: server %d answered %.2f of the lookups", r.Servers, i, share)
			}
		}
	}
	m := rdmabench.ScaleModel(rows, 8, 3*rows[0].LookupsPerS)
	if m[0] != rows[0].LookupsPerS || m[1] != 2*m[0] || m[7] != 3*m[0] {
		t.Errorf("model %v for one server at %v, limit 3×", m, rows[0].LookupsPerS)
	}
}

func TestLookupsGoOnWhenAReplicaIsKilled(t *testing.T) {
	c := rdmabench.DefaultFailoverConfig()
	c.Keys, c.Duration, c.Kill, c.Bucket = 2000, 300*time.Millisecond, 100*time.Millisecond, 50*time.Millisecond
	// Generous: a scheduling stall on a busy machine is not a failure (a
	// 20ms ACK timeout failed the table's load once, beside a -race run).
	c.Timeout, c.Holddown, c.AckTimeout = 50*time.Millisecond, 100*time.Millisecond, 500*time.Millisecond
	rows, sum, err := rdmabench.Failover(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", sum)
	for _, r := range rows {
		t.Logf("%+v", r)
	}
	if sum.Failed != 0 || sum.Answered != sum.Issued {
		t.Errorf("%d of %d lookups answered, %d failed", sum.Answered, sum.Issued, sum.Failed)
	}
	if sum.Retried == 0 || sum.Timeouts+sum.Errors == 0 {
		t.Errorf("the killed server cost no retry: %+v", sum)
	}
	before, after := rows[0], rows[len(rows)-1]
	if before.Served[0] == 0 || before.Served[1] == 0 {
		t.Errorf("before the kill both servers should answer: %+v", before)
	}
	if after.Served[0] != 0 || after.Served[1] == 0 {
		t.Errorf("after the kill only server 1 should answer: %+v", after)
	}
}
