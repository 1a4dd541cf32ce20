package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/wire/dta"
)

// smallConfig is a run of a fraction of a second over small stores.
func smallConfig(p dta.Primitive) Config {
	cfg := DefaultConfig()
	cfg.Primitives = []dta.Primitive{p}
	cfg.Modes = []Mode{{PerDatagram: 0, Recvmmsg: true}}
	cfg.Duration, cfg.Warmup = 100*time.Millisecond, 20*time.Millisecond
	cfg.Keys, cfg.Pool, cfg.Memory = 1<<10, 1<<12, 1<<20
	cfg.Region = region.Config{HugePages: region.HugePagesOff}
	cfg.RecvBuffer = 4 << 20
	cfg.Rate = 200_000
	return cfg
}

func TestRunMeasuresBothCollectors(t *testing.T) {
	for _, p := range dta.Primitives {
		t.Run(p.String()+" reports reach both collectors and are counted", func(t *testing.T) {
			var progress bytes.Buffer
			cfg := smallConfig(p)
			cfg.Progress = &progress
			rep, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) != 2 || len(rep.Ratios) != 1 {
				t.Fatalf("%d results, %d ratios; want 2 and 1", len(rep.Results), len(rep.Ratios))
			}
			for _, r := range rep.Results {
				if r.Accepted <= 0 || r.Stored == 0 || r.AppDrops != 0 || r.Sent == 0 || r.CPUSeconds <= 0 {
					t.Errorf("%s: %+v", r.Collector, r)
				}
				if r.Stored+r.KernelDrops > r.Sent {
					t.Errorf("%s: %d stored + %d dropped by the kernel > %d sent", r.Collector, r.Stored, r.KernelDrops, r.Sent)
				}
			}
			dtaRes := rep.Results[0]
			// Memory ops per report, as bounds: ops and reports are two counters
			// read one after the other while the last datagrams are still being
			// applied, so an exact N (2) can read a little above or below.
			want := map[dta.Primitive][2]float64{
				dta.KeyWrite: {1.95, 2.05}, dta.KeyIncrement: {1.95, 2.05}, dta.Postcard: {0.3, 0.5}, dta.Append: {0.1, 0.2},
			}[p]
			if dtaRes.Collector != DTA || dtaRes.OpsPerReport < want[0] || dtaRes.OpsPerReport > want[1] {
				t.Errorf("DTA memory ops per report %.3f, want %v", dtaRes.OpsPerReport, want)
			}
			if !strings.Contains(progress.String(), "accepted") {
				t.Errorf("no progress line: %q", progress.String())
			}
		})
	}
}

func TestReportOutputs(t *testing.T) {
	rep, err := Run(context.Background(), smallConfig(dta.KeyWrite))
	if err != nil {
		t.Fatal(err)
	}
	var tb, js bytes.Buffer
	if err := rep.WriteTable(&tb); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"keywrite", "multi/recvmmsg", "dta", "baseline", "DTA/baseline"} {
		if !strings.Contains(tb.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, tb.String())
		}
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Results) != 2 || back.Machine.CPUs == 0 {
		t.Errorf("JSON does not read back: %v\n%s", err, js.String())
	}
}

func TestRunStopsWhenInterrupted(t *testing.T) {
	cfg := smallConfig(dta.KeyWrite)
	cfg.Duration = 30 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Run(ctx, cfg)
	if err == nil || time.Since(start) > 10*time.Second {
		t.Errorf("Run = %v after %v; want the context's error, soon", err, time.Since(start))
	}
}

func TestConfigIsValidated(t *testing.T) {
	for _, mod := range []func(*Config){
		func(c *Config) { c.Duration = 0 },
		func(c *Config) { c.Duration = MaxDuration + time.Second },
		func(c *Config) { c.Senders = 0 },
		func(c *Config) { c.Primitives = nil },
		func(c *Config) { c.Modes = nil },
		func(c *Config) { c.Memory = 1 },
		func(c *Config) { c.Rate = -1 },
	} {
		c := DefaultConfig()
		mod(&c)
		if c.Validate() == nil {
			t.Errorf("%+v validated", c)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Error(err)
	}
}

func TestCombineTakesMediansAndRanges(t *testing.T) {
	mk := func(acc, base float64) *Report {
		return &Report{
			Results: []Result{
				{Primitive: "keywrite", Mode: "multi/recvmmsg", Collector: DTA, Accepted: acc, PerCore: acc},
				{Primitive: "keywrite", Mode: "multi/recvmmsg", Collector: Baseline, Accepted: base, PerCore: base},
			},
			Ratios: []Ratio{{Primitive: "keywrite", Mode: "multi/recvmmsg", Accepted: acc / base, PerCore: acc / base}},
		}
	}
	c := Combine([]*Report{mk(30, 10), mk(10, 10), mk(20, 5)})
	if c.Runs != 3 || len(c.Rows) != 2 || len(c.Ratios) != 1 {
		t.Fatalf("%+v", c)
	}
	if got := c.Rows[0].Accepted; got != (Stat{Median: 20, Min: 10, Max: 30}) {
		t.Errorf("DTA accepted %+v", got)
	}
	if got := c.Ratios[0].Accepted; got != (Stat{Median: 3, Min: 1, Max: 4}) {
		t.Errorf("ratio %+v: want each run's own ratio, then their median", got)
	}
	var b bytes.Buffer
	if err := c.WriteTable(&b); err != nil || !strings.Contains(b.String(), "3.00x (1.00x..4.00x)") {
		t.Errorf("table %v:\n%s", err, b.String())
	}
}
