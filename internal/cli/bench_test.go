package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runBenchArgs(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), append([]string{"bench"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestBenchRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--duration", "0s"},
		{"--duration", "61s"},
		{"--mode", "multi"},
		{"--primitive", "sketch"},
		{"--sink", "roce"},
		{"--repeat", "0"},
		{"--memory", "lots"},
		{"-o", "yaml"},
	} {
		if code, _, errs := runBenchArgs(t, args...); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, errs)
		}
	}
}

func TestBenchRunsAndWritesJSON(t *testing.T) {
	small := []string{"--primitive", "keywrite", "--mode", "multi/recvmmsg", "--duration", "100ms", "--warmup", "10ms",
		"--memory", "1MiB", "--keys", "1024", "--hugepages", "off", "--recv-buffer", "4MiB", "--rate", "100000", "-q"}
	file := filepath.Join(t.TempDir(), "bench.json")
	code, out, errs := runBenchArgs(t, append(small, "--json", file)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, s := range []string{"keywrite", "multi/recvmmsg", "baseline", "DTA/baseline"} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Results []struct {
			Collector string  `json:"collector"`
			Accepted  float64 `json:"accepted_per_s"`
		} `json:"results"`
		Ratios []struct {
			PerCore float64 `json:"per_cpu_second"`
		} `json:"ratios"`
	}
	if err := json.Unmarshal(b, &rep); err != nil || len(rep.Results) != 2 || len(rep.Ratios) != 1 || rep.Results[0].Accepted <= 0 {
		t.Errorf("JSON %v: %s", err, b)
	}
}
