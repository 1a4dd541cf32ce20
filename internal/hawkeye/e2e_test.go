package hawkeye_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dta-go/dta/client"
	"github.com/dta-go/dta/internal/cli"
	"github.com/dta-go/dta/internal/cli/clitest"
	"github.com/dta-go/dta/internal/hawkeye"
	"github.com/dta-go/dta/internal/hawkeye/diagnose"
	"github.com/dta-go/dta/internal/hawkeye/netsim"
	"github.com/dta-go/dta/internal/hawkeye/record"
)

// startDTA runs dta up in this process with HAWKEYE's stores and returns a
// session connected to it and the query API's base URL.
func startDTA(t *testing.T) (*hawkeye.Session, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hawkeye.yaml")
	if err := os.WriteFile(path, []byte(record.ConfigYAML()), 0o644); err != nil {
		t.Fatal(err)
	}
	m := clitest.Start(t, clitest.UpReady, "up", "--config", path, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	s, err := hawkeye.Open(context.Background(), m[1], m[2])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, m[2]
}

// Seeds 7001..7004 are used by no other test, the documented runs or eval's
// defaults (seed-base 1000).
func TestEveryScenarioIsDiagnosedThroughDTAWithSeedsNotUsedElsewhere(t *testing.T) {
	s, _ := startDTA(t)
	ctx := context.Background()
	for _, k := range netsim.Kinds {
		t.Run(string(k), func(t *testing.T) {
			formed := 0
			for seed := uint64(7001); seed <= 7004; seed++ {
				res, err := hawkeye.Run(ctx, s, hawkeye.RunConfig{Kind: k, Seed: seed,
					Setting: hawkeye.Setting{EpochBits: hawkeye.DefaultRunEpochBits, Threshold: hawkeye.DefaultThreshold(k)}})
				if res != nil && !res.Trace.Formed {
					t.Logf("seed %d: the deadlock did not form", seed)
					continue
				}
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				formed++
				v := res.Verdicts[0]
				if !v.Correct {
					t.Errorf("seed %d: %s: %s", seed, v.Diagnosis, v.Why)
				}
			}
			if formed < 3 {
				t.Errorf("only %d of 4 traces formed the anomaly", formed)
			}
		})
	}
}

func TestVictimOnlyPollingMissesTheDeadlockHawkeyeFinds(t *testing.T) {
	s, _ := startDTA(t)
	res, err := hawkeye.Run(context.Background(), s, hawkeye.RunConfig{Kind: netsim.DeadlockOut, Seed: 7002,
		Setting: hawkeye.Setting{EpochBits: 17, Threshold: 500},
		Methods: []hawkeye.Method{hawkeye.MethodHawkeye, hawkeye.MethodFull, hawkeye.MethodVictimOnly}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[hawkeye.Method]hawkeye.Verdict{}
	for _, v := range res.Verdicts {
		got[v.Method] = v
	}
	h, f, v := got[hawkeye.MethodHawkeye], got[hawkeye.MethodFull], got[hawkeye.MethodVictimOnly]
	if !h.Correct || !f.Correct {
		t.Errorf("HAWKEYE: %s (%s); full: %s (%s); want both right", h.Diagnosis, h.Why, f.Diagnosis, f.Why)
	}
	if v.Correct || len(v.Diagnosis.Loop) != 0 {
		t.Errorf("victim-only found the loop: %s", v.Diagnosis)
	}
	if !(h.Cost.Switches < f.Cost.Switches && h.Cost.Switches > v.Cost.Switches) {
		t.Errorf("switches polled: HAWKEYE %d, full %d, victim-only %d; want victim-only < HAWKEYE < full",
			h.Cost.Switches, f.Cost.Switches, v.Cost.Switches)
	}
	if h.Coverage != 1 || v.Coverage >= 1 {
		t.Errorf("causal coverage: HAWKEYE %.2f, victim-only %.2f; want 1 and less", h.Coverage, v.Coverage)
	}
}

func TestTheTelemetryUsedStaysInTheCollector(t *testing.T) {
	s, base := startDTA(t)
	ctx := context.Background()
	res, err := hawkeye.Run(ctx, s, hawkeye.RunConfig{Kind: netsim.Incast, Seed: 7003,
		Setting: hawkeye.Setting{EpochBits: 17, Threshold: 500}})
	if err != nil {
		t.Fatal(err)
	}
	v := res.Verdicts[0]
	// dta query reads the poll's manifests back.
	var out bytes.Buffer
	if code := cli.Run(ctx, []string{"query", "append", "--store", record.PollStore, "--list", "0", "--server", base, "-o", "json"}, nil, &out, io.Discard); code != 0 {
		t.Fatalf("dta query exited with %d", code)
	}
	var ar client.AppendResult
	if err := json.Unmarshal(out.Bytes(), &ar); err != nil {
		t.Fatalf("dta query output: %v\n%s", err, out.String())
	}
	manifests := 0
	for _, e := range ar.Entries {
		var m record.Manifest
		if m.Decode(e.Value) == nil && m.Poll == v.Poll {
			manifests++
		}
	}
	if manifests != v.Cost.Switches {
		t.Errorf("the collector holds %d manifests of poll %d, want %d (one per switch polled)", manifests, v.Poll, v.Cost.Switches)
	}
	// Reading the poll again from a fresh reader gives the same records.
	c, err := client.New(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	flows := 0
	for l := range uint32(record.Lists) {
		r, err := c.Append(ctx, record.FlowStore, l, client.FromOldest, client.AppendOptions{Limit: 10000})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range r.Entries {
			var f record.Flow
			if f.Decode(e.Value) == nil && f.Poll == v.Poll {
				flows++
			}
		}
	}
	if flows != v.Cost.Flows {
		t.Errorf("the collector holds %d flow records of poll %d, want %d", flows, v.Poll, v.Cost.Flows)
	}
}

func TestEvalPrintsTheFiguresFromASmallGrid(t *testing.T) {
	s, _ := startDTA(t)
	settings := hawkeye.Grid([]uint{17}, []float64{200, 500})
	res, err := hawkeye.Eval(context.Background(), s, hawkeye.EvalConfig{Kinds: []netsim.Kind{netsim.Incast, netsim.DeadlockOut},
		Traces: 2, SeedBase: 7100, Settings: settings, Methods: hawkeye.Methods})
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * len(settings) * len(hawkeye.Methods); len(res.Rows) != want {
		t.Errorf("%d rows, want %d (kinds × settings × methods)", len(res.Rows), want)
	}
	for _, r := range res.Rows {
		if r.TP+r.FP+r.FN != r.Traces || r.Traces+r.Early+res.Unformed[r.Kind] != 2 {
			t.Errorf("row %+v does not add up", r)
		}
	}
	if b, ok := res.Best(netsim.DeadlockOut, hawkeye.MethodVictimOnly); ok && b.TP > 0 {
		t.Errorf("victim-only diagnosed a deadlock right: %+v", b)
	}
	var out bytes.Buffer
	if err := res.WriteTables(&out, settings); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Fig. 7", "Fig. 8", "Fig. 10", "Figs. 9, 11", "deadlock-out", "victim-only", "events/s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("tables lack %q:\n%s", want, out.String())
		}
	}
	if res.EventsPerSec <= 0 || res.ReportBytes == 0 {
		t.Errorf("simulator %v events/s, %d report bytes: want both measured", res.EventsPerSec, res.ReportBytes)
	}
}

func TestReadingAPollThatNeverCameFailsInTime(t *testing.T) {
	s, _ := startDTA(t)
	s.SetReadWait(300 * time.Millisecond)
	_, err := s.Read(context.Background(), 12345)
	if !errors.Is(err, diagnose.ErrIncomplete) {
		t.Errorf("Read of an unknown poll: %v, want %v", err, diagnose.ErrIncomplete)
	}
}
