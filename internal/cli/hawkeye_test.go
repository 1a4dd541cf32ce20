package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dta-go/dta/internal/config"
)

func runHawkeye(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), append([]string{"hawkeye"}, args...), nil, &out, &errb)
	return code, out.String(), errb.String()
}

func TestHawkeyeSimPrintsTheDiagnosisBesideTheTruth(t *testing.T) {
	code, out, errs := runHawkeye(t, "sim", "--scenario", "deadlock-in", "--seed", "7004", "--methods", "hawkeye,victim-only", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got hawkeyeJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.Truth.Kind != "deadlock-in" || len(got.Truth.Loop) != 4 || len(got.Diagnoses) != 2 {
		t.Fatalf("output %+v", got)
	}
	h := got.Diagnoses[0]
	if h.Method != "hawkeye" || !h.Correct || !h.Judged || h.Kind != "deadlock-in" || h.Initial != got.Truth.Initial || len(h.Loop) != 4 || len(h.RootFlows) == 0 {
		t.Errorf("HAWKEYE's diagnosis %+v, want the truth %+v", h, got.Truth)
	}
	if got.Sim.EventsPerSec <= 0 || got.Sim.Events == 0 {
		t.Errorf("simulator speed not reported: %+v", got.Sim)
	}
	// A trace the runner's rules leave out says so rather than right or wrong.
	code, out, _ = runHawkeye(t, "sim", "--scenario", "contention", "--seed", "47")
	if code != 0 || !strings.Contains(out, "verdict:   not judged (the victim does not cross the contended port") {
		t.Errorf("a left-out trace's verdict:\n%s", out)
	}
	code, out, errs = runHawkeye(t, "sim", "--scenario", "storm", "--seed", "7004")
	if code != 0 || !strings.Contains(out, "diagnosis: storm: host PFC injection") || !strings.Contains(out, "verdict:   right") ||
		!strings.Contains(out, "dta query append --store hk-polls") {
		t.Errorf("exit %d, table output:\n%s\n%s", code, out, errs)
	}
}

func TestHawkeyeGraphWritesAnSVG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.svg")
	code, out, errs := runHawkeye(t, "graph", "--scenario", "incast", "--seed", "7004", "--svg", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("<svg")) || !bytes.HasSuffix(bytes.TrimSpace(b), []byte("</svg>")) || !strings.Contains(out, "incast") {
		t.Errorf("SVG %.60q…, output %q", b, out)
	}
}

func TestHawkeyeEvalGivesTheTablesAsJSON(t *testing.T) {
	code, out, errs := runHawkeye(t, "eval", "--traces", "1", "--scenarios", "incast,storm", "--epochs", "131us", "--thresholds", "500", "--seed-base", "7200", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got struct {
		Result struct {
			Rows []struct {
				Kind   string `json:"kind"`
				Method string `json:"method"`
				Traces int    `json:"traces"`
			} `json:"rows"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got.Result.Rows) != 2*5 {
		t.Errorf("%d rows, want 10 (2 scenarios × 5 methods)", len(got.Result.Rows))
	}
	if !strings.Contains(errs, "hawkeye eval: 2/2 traces") {
		t.Errorf("no progress on stderr: %q", errs)
	}
}

func TestHawkeyeConfigIsAValidDTAConfiguration(t *testing.T) {
	code, out, _ := runHawkeye(t, "config")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	f, err := config.Parse([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Descriptors(); err != nil {
		t.Errorf("stores: %v", err)
	}
}

func TestHawkeyeRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"sim", "--scenario", "meltdown"},
		{"sim", "--scenario", "incast", "--threshold", "50"},
		{"sim", "--scenario", "incast", "--to", "127.0.0.1:1"},
		{"eval", "--traces", "0"},
		{"eval", "--epochs", "soon"},
		{"graph", "--scenario", "incast"},
	} {
		if code, _, _ := runHawkeye(t, args...); code != 2 {
			t.Errorf("dta hawkeye %s: exit %d, want 2", strings.Join(args, " "), code)
		}
	}
}
