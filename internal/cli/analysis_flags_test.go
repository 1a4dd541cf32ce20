package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAnalysisFlagsAreRefusedNamingTheFlag runs dta hawkeye, plan and
// simulate with bad flag values: each must be refused before any work
// starts (quickly), with exit code 2 and an error naming the flag.
func TestAnalysisFlagsAreRefusedNamingTheFlag(t *testing.T) {
	dir := t.TempDir()
	badPlot := filepath.Join(dir, "x.garbage")
	sketch := []string{"plan", "--primitive", "sketchmerge", "--rows", "4", "--columns", "65536"}
	sketchSim := append(append([]string(nil), sketch...), "--simulate")
	store := []string{"simulate", "--slots", "4096", "--keys", "1K", "--progress", "never"}
	with := func(base []string, args ...string) []string { return append(append([]string(nil), base...), args...) }
	for _, tt := range []struct {
		args []string
		want string // in stderr
	}{
		// hawkeye (findings 1, 3, 7)
		{[]string{"hawkeye", "sim", "--scenario", "incast", "--threshold", "NaN"}, "--threshold:"},
		{[]string{"hawkeye", "graph", "--scenario", "incast", "--threshold", "NaN", "--svg", filepath.Join(dir, "g.svg")}, "--threshold:"},
		{[]string{"hawkeye", "sim", "--scenario", "incast", "--load", "NaN"}, "--load:"},
		{[]string{"hawkeye", "graph", "--scenario", "incast", "--load", "NaN", "--svg", filepath.Join(dir, "g.svg")}, "--load:"},
		{[]string{"hawkeye", "sim", "--scenario", "incast", "--methods", ""}, "--methods:"},
		{[]string{"hawkeye", "eval", "--load", "NaN"}, "--load:"},
		{[]string{"hawkeye", "eval", "--thresholds", "NaN"}, "--thresholds:"},
		{[]string{"hawkeye", "eval", "--epochs", ""}, "--epochs:"},
		{[]string{"hawkeye", "eval", "--methods", ""}, "--methods:"},
		{[]string{"hawkeye", "eval", "--scenarios", ""}, "--scenarios:"},
		{[]string{"hawkeye", "eval", "--workers", "-1"}, "--workers:"},
		{[]string{"hawkeye", "eval", "--workers", "99999999999"}, "--workers:"},
		// plan --primitive sketchmerge (findings 2, 3, 4, 5)
		{with(sketchSim, "--sim-keys", "4611686018427387904"), "--sim-keys:"},
		{with(sketchSim, "--sim-reporters", "99999999999"), "--sim-reporters:"},
		{with(sketchSim, "--sim-zipf", "NaN"), "--sim-zipf:"},
		{with(sketchSim, "--sim-zipf", "Inf"), "--sim-zipf:"},
		{with(sketchSim, "--sim-zipf", "1"), "--sim-zipf:"},
		{with(sketchSim, "--sim-packets", "4611686018427387904"), "--sim-packets:"},
		{with(sketchSim, "--rows", "16", "--columns", "4294967296"), "--simulate:"},
		{with(sketch, "--sim-zipf", "2"), "--sim-zipf:"},
		{with(sketch, "--keys", "5"), "--keys:"},
		{[]string{"plan", "--primitive", "sketchmerge", "--epsilon", "0.001", "--epochs", "-1"}, "--epochs:"},
		{[]string{"plan", "--primitive", "sketchmerge", "--epsilon", "0.001", "--epochs", "0"}, "--epochs:"},
		{[]string{"plan", "--primitive", "sketchmerge", "--epsilon", "0.001", "--epochs", "99999999999"}, "--epochs:"},
		{[]string{"plan", "--primitive", "sketchmerge", "--epsilon", "NaN"}, "--epsilon:"},
		{[]string{"plan", "--primitive", "sketchmerge", "--epsilon", "0.001", "--delta", "NaN"}, "--delta:"},
		{[]string{"plan", "--primitive", "sketchmerge", "--rows", "4"}, "--columns:"},
		// plan: flags, not the analysis' field names (finding 8)
		{[]string{"plan", "--memory", "0"}, "--memory:"},
		{[]string{"plan", "--memory", "1GiB", "--n", "0", "--age", "1K"}, "--n:"},
		{[]string{"plan", "--keys", "1M", "--n", "2,2"}, "--n:"},
		{[]string{"plan", "--keys", "1M", "--value-size", "99999"}, "--value-size:"},
		{[]string{"plan", "--primitive", "postcard", "--keys", "1M", "--values", "2^32"}, "--values:"},
		{[]string{"plan", "--primitive", "postcard", "--keys", "1M", "--hops", "99"}, "--hops:"},
		{[]string{"plan", "--primitive", "keyincrement", "--keys", "1M", "--age", "5"}, "--age:"},
		{[]string{"plan", "--keys", "1M", "--rows", "4"}, "--rows:"},
		// simulate (findings 3, 6, 8)
		{with(store, "--workers", "99999999999"), "--workers:"},
		{with(store, "--workers", "-1"), "--workers:"},
		{with(store, "--bins", "-1"), "--bins:"},
		{with(store, "--progress", "garbage"), "--progress:"},
		{with(store, "--plot", badPlot), "--plot:"},
		{with(store, "--plot", filepath.Join(dir, "none", "x.svg")), "--plot:"},
		{with(store, "--n", "0"), "--n:"},
		{with(store, "--value-size", "0"), "--value-size:"},
		{with(store, "--ages", "5K"), "--ages:"},
		{with(store, "--primitive", "postcard", "--hops", "99"), "--hops:"},
		{[]string{"simulate", "--slots", "1", "--keys", "1K"}, "--slots:"},
		{[]string{"simulate", "--slots", "2^32", "--keys", "1K", "--value-size", "1024"}, "--slots:"},
		{[]string{"simulate", "--figure", "13", "--max-memory", "0"}, "--max-memory:"},
		{[]string{"simulate", "--figure", "13", "--max-memory", "99999TiB"}, "--max-memory:"},
		{[]string{"simulate", "--figure", "12", "--checksum-bits", "8,9"}, "--checksum-bits:"},
	} {
		name := strings.Join(tt.args, " ")
		t.Run(name, func(t *testing.T) {
			var out, errb bytes.Buffer
			done := make(chan int, 1)
			go func() { done <- Run(context.Background(), tt.args, nil, &out, &errb) }()
			var code int
			select {
			case code = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("dta %s: still running after 10 s; want a usage error before any work", name)
			}
			if code != 2 || !strings.Contains(errb.String(), tt.want) {
				t.Errorf("dta %s: exit %d, stderr %q; want exit 2 naming %q", name, code, errb.String(), tt.want)
			}
		})
	}
	if _, err := os.Stat(badPlot); err == nil {
		t.Errorf("--plot %s was refused but the file was created", badPlot)
	}
}
