package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
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

func TestRunMeasuresEveryCollector(t *testing.T) {
	for _, p := range Primitives {
		t.Run(p.String()+" reports reach DTA, the baseline and the receive-only ceiling and are counted", func(t *testing.T) {
			var progress bytes.Buffer
			cfg := smallConfig(p)
			cfg.Progress = &progress
			rep, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) != 3 || len(rep.Ratios) != 1 {
				t.Fatalf("%d results, %d ratios; want 3 and 1", len(rep.Results), len(rep.Ratios))
			}
			for i, c := range []string{DTA, Baseline, ReceiveOnly} {
				if rep.Results[i].Collector != c {
					t.Fatalf("result %d is %q, want %q", i, rep.Results[i].Collector, c)
				}
			}
			if ro := rep.Results[2]; ro.Stored%uint64(ro.PerDatagram) != 0 {
				t.Errorf("receive-only took %d reports: not whole datagrams of %d", ro.Stored, ro.PerDatagram)
			}
			q := rep.Ratios[0]
			for name, v := range map[string]float64{
				"DTA/baseline": q.Accepted, "DTA/ceiling": q.DTAOfCeiling, "DTA/ceiling per CPU s": q.DTAOfCeilingPerCore,
				"baseline/ceiling": q.BaseOfCeiling, "baseline/ceiling per CPU s": q.BaseOfCeilingPerCore,
			} {
				if v <= 0 {
					t.Errorf("ratio %s = %v", name, v)
				}
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
			// Memory ops per report, over the whole run, drained: Key-Write
			// and Key-Increment write exactly N (2) per report (the window's
			// two counters, read one after the other, gave 2.051 and 2.412 on
			// a loaded machine; the whole run cannot skew).
			// Postcarding: a path's 5 postcards, 2 copies, are 2 writes (0.4);
			// a translator that falls behind on a loaded machine lets some
			// paths age out half-seen and writes them twice (0.502 once,
			// under -race in CI), still far from a write per postcard (2).
			// Append: the whole batches a receive batch holds for one list
			// share one write and one head (appendlist.Spec.Window, and a run
			// per list in the translator's worker), well below the 2 ops per
			// batch of 16 (0.125) of a write and a head each; never below 2
			// per Window (256 entries here: 0.0078), which a reader stalled
			// long enough to take 16 datagrams in one batch would approach.
			want := map[dta.Primitive][2]float64{
				dta.KeyWrite: {2, 2}, dta.KeyIncrement: {2, 2}, dta.Postcard: {0.3, 0.6}, dta.Append: {0.005, 0.1},
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
	for _, s := range []string{"keywrite", "multi/recvmmsg", "dta", "baseline", "DTA/baseline", "receive-only", "DTA/receive-only", "baseline/receive-only"} {
		if !strings.Contains(tb.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, tb.String())
		}
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Results) != 3 || back.Machine.CPUs == 0 || back.Ratios[0].DTAOfCeiling == 0 {
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
	if strings.Contains(b.String(), "responder") {
		t.Errorf("remote sink columns without a remote sink:\n%s", b.String())
	}
}

func TestCombineKeepsTheRemoteSinksFigures(t *testing.T) {
	mk := func(ops float64) *Report {
		return &Report{Results: []Result{{Primitive: "keywrite", Mode: "multi/recvmmsg", Collector: DTA, Sink: "roce",
			Remote: &RemoteResult{ResponderOpsPerSec: ops, ResponderCPUPerMillion: 2 * ops / 1e6}}}}
	}
	c := Combine([]*Report{mk(1e6), mk(3e6), mk(2e6)})
	if len(c.Rows) != 1 || c.Rows[0].Remote == nil || c.Rows[0].Remote.ResponderOpsPerSec != (Stat{Median: 2e6, Min: 1e6, Max: 3e6}) {
		t.Fatalf("%+v", c.Rows)
	}
	var b bytes.Buffer
	if err := c.WriteTable(&b); err != nil || !strings.Contains(b.String(), "2.000 (1.000..3.000)") || !strings.Contains(b.String(), "4.000 (2.000..6.000)") {
		t.Errorf("table %v:\n%s", err, b.String())
	}
}

func TestCombinePrintsTheRespondersLineWithRanges(t *testing.T) {
	mk := func(resp, base, pkts float64) *Report {
		return &Report{
			Results: []Result{
				{Primitive: "keywrite", Mode: "single/recvmmsg", Collector: DTA, Sink: "roce",
					Remote: &RemoteResult{ResponderCPUPerMillion: resp, ResponderPacketsPerCPUSecond: pkts, ResponderWaitCPUPerMillion: resp / 4, ResponderSendCPUPerMillion: resp / 2}},
				{Primitive: "keywrite", Mode: "single/recvmmsg", Collector: Baseline, CPUPerMillion: base},
			},
			Ratios: []Ratio{{Primitive: "keywrite", Mode: "single/recvmmsg", Accepted: 1, PerCore: 1, ResponderOfBaseline: resp / base}},
		}
	}
	c := Combine([]*Report{mk(0.2, 1, 5e6), mk(0.3, 1, 4e6), mk(0.5, 1, 3e6)})
	var b bytes.Buffer
	if err := c.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	want := "keywrite single/recvmmsg responder: 0.300 (0.200..0.500) CPU s/M rep (of which waking up 0.075 (0.050..0.125), sending on its TX rings 0.150 (0.100..0.250)), 4.00 (3.00..5.00) M pkts/CPU s (goal >= 1); responder/baseline 0.30x (0.20x..0.50x) (goal <= 0.33x: met by the median)"
	if !strings.Contains(b.String(), want) {
		t.Errorf("table lacks\n%s\n%s", want, b.String())
	}
}

// checkedSink is a RoCE sink that, before it is released at the end of a
// run, looks at what reached the run's catalogue.
type checkedSink struct {
	Sink
	local *store.Catalog
	check func(local *store.Catalog)
}

func (s checkedSink) Close() error {
	s.check(s.local)
	return s.Sink.Close()
}

// sentValues decodes the datagrams of the workload a run of cfg sends, and
// returns the values sent under each key (Key-Write) or to each list
// (Append).
func sentValues(t *testing.T, cfg Config, p dta.Primitive) map[string]map[uint32]bool {
	t.Helper()
	w, err := NewWorkload(p, MaxPerDatagram(p), cfg.Keys, cfg.Pool)
	if err != nil {
		t.Fatal(err)
	}
	sent := map[string]map[uint32]bool{}
	var dg dta.Datagram
	var r dta.Report
	for i := range w.Datagrams() {
		if err := (dta.Decoder{}).Decode(w.Datagram(i), &dg); err != nil {
			t.Fatal(err)
		}
		for dg.Next(&r) == nil {
			k := string(r.Key)
			if p == dta.Append {
				k = strconv.Itoa(int(r.List))
			}
			if sent[k] == nil {
				sent[k] = map[uint32]bool{}
			}
			sent[k][binary.BigEndian.Uint32(r.Value)] = true
		}
	}
	return sent
}

func TestRunOverRoCE(t *testing.T) {
	for _, p := range []dta.Primitive{dta.KeyWrite, dta.Append} {
		t.Run(p.String()+" reports reach the stores through the responder", func(t *testing.T) {
			cfg := smallConfig(p)
			cfg.Baseline, cfg.Ceiling = false, false
			// Enough reports to send the pool (4096 reports over 1024 keys)
			// round twice; few enough for the responder under -race (~20k
			// ops/s) to absorb them in a second.
			cfg.Duration, cfg.Rate = 200*time.Millisecond, 40_000
			sent := sentValues(t, cfg, p)
			var found, wrong, entries, heads uint64
			var localOps uint64
			check := func(local *store.Catalog) {
				st := local.Stores()[0]
				localOps = local.Stats().Ops.Load()
				switch p {
				case dta.KeyWrite:
					var dst []byte
					for k, vals := range sent {
						key := keywrite.CompatKey(binary.BigEndian.Uint32([]byte(k)))
						r, err := st.KeyWrite.Query(key[:], Redundancy, 0, dst[:0])
						if err != nil {
							t.Error(err)
							return
						}
						if r.Status == keywrite.Found {
							found++
							if !vals[binary.BigEndian.Uint32(r.Value)] {
								wrong++
							}
						}
					}
				case dta.Append:
					for l := range uint32(AppendLists) {
						h, err := st.Append.Head(l)
						if err != nil {
							t.Error(err)
							return
						}
						heads += h
						pr, err := st.Append.Poll(l, 0, int(h), nil)
						if err != nil {
							t.Error(err)
							return
						}
						for i := range pr.Count {
							entries++
							if !sent[strconv.Itoa(int(l))][binary.BigEndian.Uint32(pr.Data[4*i:])] {
								wrong++
							}
						}
					}
				}
			}
			cfg.SinkName = "roce"
			cfg.NewSink = func(local *store.Catalog) (Sink, error) {
				s, err := NewRoCESink(local)
				if err != nil {
					return nil, err
				}
				return checkedSink{Sink: s, local: local, check: check}, nil
			}
			rep, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) != 1 {
				t.Fatalf("%d results, want 1", len(rep.Results))
			}
			r := rep.Results[0]
			if r.Remote != nil {
				t.Logf("accepted %d reports at %.0f/s; remote %+v", r.Stored, r.Accepted, *r.Remote)
			}
			if r.Sink != "roce" || r.Remote == nil || r.Accepted <= 0 || r.Stored == 0 || r.AppDrops != 0 {
				t.Fatalf("%+v", r)
			}
			// Drained: every report sent was accepted (its ops executed) or
			// dropped by the kernel.
			if r.Unaccounted != 0 {
				t.Errorf("%d reports sent, %d accepted, %d dropped by the kernel: %d unaccounted", r.Sent, r.Stored, r.KernelDrops, r.Unaccounted)
			}
			rr := r.Remote
			if rr.OpsSent == 0 || rr.OpsApplied != rr.OpsSent || rr.OpsLost != 0 || rr.ResponderOpsPerSec <= 0 {
				t.Errorf("the responder executed %d of the %d ops sent (%d lost, %.0f/s)", rr.OpsApplied, rr.OpsSent, rr.OpsLost, rr.ResponderOpsPerSec)
			}
			if localOps != 0 {
				t.Errorf("%d ops went through the local sink", localOps)
			}
			if rr.ResponderCPUSeconds <= 0 || rr.TranslatorCPUSeconds <= 0 || rr.ResponderCPUSeconds >= r.CPUSeconds {
				t.Errorf("CPU: responder %.4f s, translator %.4f s, both %.4f s", rr.ResponderCPUSeconds, rr.TranslatorCPUSeconds, r.CPUSeconds)
			}
			if rr.ResponderPacketsPerRead < 1 {
				t.Errorf("%.2f packets per responder receive call, want at least 1", rr.ResponderPacketsPerRead)
			}
			switch p {
			case dta.KeyWrite:
				// Every op is one 8-byte WRITE (4-byte value and checksum)
				// in one packet: exactly 2 per report over the whole run,
				// drained, sent and executed alike.
				if r.OpsPerReport != 2 || rr.OpsPerReport != 2 || rr.PacketsPerReport != 2 {
					t.Errorf("ops per report: executed %.3f, sent %.3f, packets %.3f; want 2", r.OpsPerReport, rr.OpsPerReport, rr.PacketsPerReport)
				}
				t.Logf("%d of %d keys found", found, len(sent))
				if found < uint64(len(sent))*9/10 || wrong != 0 {
					t.Errorf("%d of %d keys found, %d with a value never sent", found, len(sent), wrong)
				}
			case dta.Append:
				if heads != r.Stored || entries != heads || wrong != 0 {
					t.Errorf("%d entries published, %d read (%d never sent); %d reports accepted", heads, entries, wrong, r.Stored)
				}
			}
			var tb, js bytes.Buffer
			if err := rep.WriteTable(&tb); err != nil || !strings.Contains(tb.String(), "responder CPU s/M rep") {
				t.Errorf("table %v:\n%s", err, tb.String())
			}
			if err := rep.WriteJSON(&js); err != nil || !strings.Contains(js.String(), `"responder_cpu_s_per_million_reports"`) {
				t.Errorf("JSON %v:\n%s", err, js.String())
			}
		})
	}
}

func TestCombineKeepsTheCeilingRatios(t *testing.T) {
	mk := func(frac float64) *Report {
		return &Report{
			Results: []Result{
				{Primitive: "append", Mode: "multi/recvmmsg", Collector: DTA, Accepted: frac},
				{Primitive: "append", Mode: "multi/recvmmsg", Collector: ReceiveOnly, Accepted: 1},
			},
			Ratios: []Ratio{{Primitive: "append", Mode: "multi/recvmmsg", DTAOfCeiling: frac, DTAOfCeilingPerCore: frac / 2}},
		}
	}
	c := Combine([]*Report{mk(0.5), mk(0.25), mk(0.75)})
	q := c.Ratios[0]
	if q.DTAOfCeiling == nil || *q.DTAOfCeiling != (Stat{Median: 0.5, Min: 0.25, Max: 0.75}) || q.BaseOfCeiling != nil {
		t.Fatalf("ratios %+v: want DTA's fraction of the ceiling over the runs, and none for the baseline that did not run", q)
	}
	var b bytes.Buffer
	if err := c.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "DTA/receive-only") || !strings.Contains(out, "0.50x (0.25x..0.75x)") || strings.Contains(out, "DTA/baseline") {
		t.Errorf("table:\n%s", out)
	}
}

func TestRunOverRoCEWithTheResponderInAProcessOfItsOwn(t *testing.T) {
	for _, w := range []ResponderWait{{Kernel: true}, {Kernel: true, Poll: 20 * time.Microsecond}, {}} {
		t.Run(fmt.Sprintf("%+v", w), func(t *testing.T) {
			cfg := smallConfig(dta.KeyWrite)
			cfg.Baseline, cfg.Ceiling = false, false
			cfg.SinkName = "roce"
			cfg.Region.Prefault = true // in the responder process only: this one's copy is never written
			// This test binary, started again, is the responder (TestMain).
			cfg.NewSink, cfg.SinkOwnsStores = RoCEProcessSink([]string{os.Args[0]}, cfg.Region, w), true
			rep, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := rep.Results[0]
			rr := r.Remote
			if rr == nil || !rr.ResponderProcess || r.Stored == 0 || r.Unaccounted != 0 || r.AppDrops != 0 {
				t.Fatalf("%+v", r)
			}
			if rr.OpsSent == 0 || rr.OpsApplied != rr.OpsSent || rr.OpsLost != 0 || rr.OpsPerReport != 2 {
				t.Errorf("the responder process executed %d of the %d ops sent (%d lost, %.2f per report)", rr.OpsApplied, rr.OpsSent, rr.OpsLost, rr.OpsPerReport)
			}
			// Both sides did work in the window (how they add up to DTA's
			// CPU: TestTheCollectorsCPUHolds...).
			if rr.ResponderCPUSeconds <= 0 || rr.TranslatorCPUSeconds <= 0 {
				t.Errorf("CPU: responder %.4f s, translator %.4f s, DTA %.4f s", rr.ResponderCPUSeconds, rr.TranslatorCPUSeconds, r.CPUSeconds)
			}
			if rr.ResponderPacketsPerRead < 1 || rr.ResponderPacketsPerCPUSecond <= 0 {
				t.Errorf("%.2f packets per receive call, %.0f per CPU second", rr.ResponderPacketsPerRead, rr.ResponderPacketsPerCPUSecond)
			}
			// Its read loops waited between batches: each wake-up took
			// in packets, and costs what a timed wait costs here.
			if rr.ResponderWaitsPerMillion <= 0 || rr.ResponderPacketsPerWait <= 0 {
				t.Errorf("%.0f wake-ups per M reports, %.2f packets per wake-up", rr.ResponderWaitsPerMillion, rr.ResponderPacketsPerWait)
			}
			if runtime.GOOS == "linux" {
				if want := rr.ResponderWaitsPerMillion * rr.ResponderWaitCost / 1e6; rr.ResponderWaitCost <= 0 || math.Abs(rr.ResponderWaitCPUPerMillion-want) > 1e-9*want {
					t.Errorf("a wait costs %.2f µs of CPU, %.4f CPU s/M rep for %.0f wake-ups/M rep", rr.ResponderWaitCost, rr.ResponderWaitCPUPerMillion, rr.ResponderWaitsPerMillion)
				}
			}
			// The stores are resident in the responder process, not here.
			if r.RegionBytes != 0 || rr.ResponderRSS < cfg.Memory {
				t.Errorf("%d bytes of regions counted in the bench process, responder process RSS %d bytes (stores of %d)", r.RegionBytes, rr.ResponderRSS, cfg.Memory)
			}
		})
	}
}

// TestRunOverRoCEAcrossAVethToAResponderProcess runs the responder process
// in a network namespace of its own and the requests over a veth pair,
// through the kernel's UDP path (veth), through AF_XDP with the responses
// through the UDP socket (xdp-rx), and through AF_XDP both ways (xdp):
// every op is executed, with xdp and xdp-rx every request came through
// AF_XDP, and with xdp the responses left on the AF_XDP TX ring.
func TestRunOverRoCEAcrossAVethToAResponderProcess(t *testing.T) {
	if err := vethPrerequisites("this test"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI runs the veth tests: %v", err)
		}
		t.Skip(err)
	}
	for _, path := range []string{ResponderVeth, ResponderXDPRX, ResponderXDP} {
		t.Run(path, func(t *testing.T) {
			cfg := smallConfig(dta.KeyWrite)
			cfg.Baseline, cfg.Ceiling = false, false
			cfg.SinkName = "roce/" + path
			cfg.NewSink, cfg.SinkOwnsStores = RoCEProcessSinkOver([]string{os.Args[0]}, cfg.Region, ResponderWait{Kernel: true}, path), true
			rep, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := rep.Results[0]
			rr := r.Remote
			if rr == nil || r.Stored == 0 || r.Unaccounted != 0 {
				t.Fatalf("%+v", r)
			}
			if rr.OpsSent == 0 || rr.OpsApplied != rr.OpsSent || rr.OpsLost != 0 {
				t.Errorf("the responder process executed %d of the %d ops sent (%d lost)", rr.OpsApplied, rr.OpsSent, rr.OpsLost)
			}
			if xdpPath := path != ResponderVeth; (rr.XDPPackets >= rr.OpsSent) != xdpPath {
				t.Errorf("%d requests through AF_XDP for %d ops sent over %s", rr.XDPPackets, rr.OpsSent, path)
			}
			if txPath := path == ResponderXDP; (rr.XDPTXFrames > 0) != txPath {
				t.Errorf("%d responses on the AF_XDP TX ring over %s", rr.XDPTXFrames, path)
			}
		})
	}
	if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); err == nil && regexp.MustCompile(fmt.Sprintf(`(?m)^dtabench%d\b`, os.Getpid()%100000)).Match(out) {
		t.Errorf("the bench's namespace outlived its runs:\n%s", out)
	}
}

func TestTheRunsCatalogueIsResidentHereUnlessTheSinkKeepsItsOwnCopy(t *testing.T) {
	sink := func(*store.Catalog) (Sink, error) { return nil, nil }
	for _, tt := range []struct {
		name    string
		cfg     Config
		resides bool
	}{
		{"a local run writes it", Config{}, true},
		{"a responder thread serves it", Config{NewSink: sink}, true},
		{"a responder process keeps its own copy", Config{NewSink: sink, SinkOwnsStores: true}, false},
		{"a durable run still writes it", Config{NewSink: sink, SinkOwnsStores: true, DataDir: "d"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := (&bench{cfg: tt.cfg}).storesHere(); got != tt.resides {
				t.Errorf("storesHere = %v, want %v", got, tt.resides)
			}
		})
	}
}

func TestTheResponderProcessRefusesABadRequest(t *testing.T) {
	for _, tt := range []struct{ name, in string }{
		{"no request", ""},
		{"not JSON", "stats\n"},
		{"a store that does not validate", `{"descriptors":[{"Name":"x","ID":1,"Primitive":1}],"region":{}}` + "\n"},
		{"a poll without a kernel wait", `{"descriptors":[],"region":{},"poll_before_wait":1000}` + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := ServeResponder(strings.NewReader(tt.in), &out); err == nil {
				t.Fatalf("served %q (wrote %q)", tt.in, out.String())
			}
		})
	}
}

func TestTheCollectorsCPUHoldsAResponderProcessButNotAResponderThreadTwice(t *testing.T) {
	const proc, senders, remote = 10 * time.Second, 3 * time.Second, 2 * time.Second
	if got := collectorCPU(proc, senders, remote, true); got != 9*time.Second {
		t.Errorf("responder process: %v, want the process minus the senders plus the responder's 2 s", got)
	}
	if got := collectorCPU(proc, senders, remote, false); got != 7*time.Second {
		t.Errorf("responder thread: %v, want the process minus the senders (the thread is in it)", got)
	}
}

func TestAUserWithoutRootIsToldWhyOnceAndByFlag(t *testing.T) {
	old := geteuid
	geteuid = func() int { return 1000 }
	defer func() { geteuid = old }()
	cfg := smallConfig(dta.KeyWrite)
	cfg.Baseline, cfg.Ceiling = false, false
	cfg.SinkName = "roce/xdp"
	cfg.NewSink, cfg.SinkOwnsStores = RoCEProcessSinkOver([]string{os.Args[0]}, cfg.Region, ResponderWait{}, ResponderXDP), true
	_, err := Run(context.Background(), cfg)
	_, xerr := RunXDP(context.Background(), smallConfig(dta.KeyWrite))
	for _, c := range []struct {
		err  error
		flag string
	}{{err, "--responder-path xdp needs root"}, {xerr, "--transport xdp needs root"}} {
		if c.err == nil {
			t.Fatalf("no error, want %q", c.flag)
		}
		msg := c.err.Error()
		if !strings.HasPrefix(msg, "bench: ") || strings.Count(msg, "bench:") != 1 || !strings.Contains(msg, c.flag) {
			t.Errorf("error %q: want one \"bench: \" prefix and %q", msg, c.flag)
		}
	}
}
