package cli

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSimulateFigureTwelveAtATinyScale(t *testing.T) {
	plot := filepath.Join(t.TempDir(), "fig12.svg")
	code, out, errs := runPlanArgs(t, "simulate", "--figure", "12", "--slots", "2^12", "--bins", "4", "--per-bin", "500",
		"--huge-pages", "off", "--plot", plot, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep struct {
		Figure string   `json:"figure"`
		Notes  []string `json:"notes"`
		Runs   []struct {
			Label  string `json:"label"`
			Config struct {
				N     int    `json:"n"`
				Slots uint64 `json:"slots"`
				Keys  uint64 `json:"keys"`
			} `json:"config"`
			All struct {
				Queries uint64 `json:"queries"`
				Correct uint64 `json:"correct"`
			} `json:"all"`
			Bins []json.RawMessage `json:"bins"`
		} `json:"runs"`
		Machine string `json:"machine"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if rep.Figure != "12" || len(rep.Runs) != 4 || rep.Machine == "" || len(rep.Notes) == 0 {
		t.Fatalf("report = %+v", rep)
	}
	for i, r := range rep.Runs {
		if r.Config.N != i+1 || r.Config.Slots != 1<<12 || r.Config.Keys != 2<<12 || len(r.Bins) != 4 {
			t.Errorf("run %d = %+v", i, r)
		}
		if r.All.Queries != 2000 || r.All.Correct == 0 || r.All.Correct == r.All.Queries {
			t.Errorf("run %d: %d of %d correct", i, r.All.Correct, r.All.Queries)
		}
	}
	b, err := os.ReadFile(plot)
	if err != nil || !strings.Contains(string(b), "<svg") {
		t.Errorf("plot: %v, %.60q", err, b)
	}
}

func TestSimulateOneStoreAsCSV(t *testing.T) {
	code, out, errs := runPlanArgs(t, "simulate", "--primitive", "postcard", "--slots", "4096", "--keys", "6000",
		"--n", "1,2", "--bins", "3", "--ages", "1000", "--huge-pages", "off", "-o", "csv")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+2*4 { // header, then 2 runs × (3 bins + 1 probe)
		t.Fatalf("%d rows:\n%s", len(rows), out)
	}
	if rows[0][0] != "figure" || rows[1][2] != "postcard" || rows[4][9] != "true" {
		t.Errorf("unexpected rows:\n%s", out)
	}
}

func TestSimulateRejectsMisusedFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"an unknown figure", []string{"--figure", "14"}, "figure"},
		{"max memory outside figure 13", []string{"--figure", "12", "--max-memory", "1GiB"}, "--max-memory"},
		{"a single-run flag with a figure", []string{"--figure", "12", "--if-empty"}, "--if-empty"},
		{"one store without its size", []string{"--keys", "1000"}, "--slots"},
		{"an unknown output", []string{"--slots", "1024", "--keys", "100", "-o", "xml"}, "-o"},
		{"short checksums with crc32", []string{"--slots", "1024", "--keys", "100", "--hash", "crc32", "--checksum-bits", "8"}, "--checksum-bits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := runPlanArgs(t, append([]string{"simulate"}, tt.args...)...)
			if code != 2 || !strings.Contains(errs, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 naming %q", code, errs, tt.want)
			}
		})
	}
}
