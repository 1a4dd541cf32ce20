package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
)

// runPlanArgs runs dta with args and returns the exit code, stdout and stderr.
func runPlanArgs(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// planJSONOut is the part of dta plan's JSON the tests read.
type planJSONOut struct {
	Mode  string `json:"mode"`
	BestN *int   `json:"best_n"`
	Rows  []struct {
		N           int     `json:"n"`
		Slots       uint64  `json:"slots"`
		Memory      uint64  `json:"memory_bytes"`
		Age         uint64  `json:"age"`
		Alpha       float64 `json:"alpha"`
		NoAnswer    float64 `json:"no_answer"`
		Wrong       float64 `json:"wrong"`
		Success     float64 `json:"success"`
		MeetsTarget bool    `json:"meets_target"`
		Ages        []struct {
			Age      uint64  `json:"age"`
			Alpha    float64 `json:"alpha"`
			NoAnswer float64 `json:"no_answer"`
			Wrong    float64 `json:"wrong"`
			Success  float64 `json:"success"`
		} `json:"ages"`
	} `json:"rows"`
}

func runPlanJSON(t *testing.T, args ...string) planJSONOut {
	t.Helper()
	code, out, errs := runPlanArgs(t, append(args, "-o", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res planJSONOut
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	return res
}

func TestPlanPrintsThePaperWorkedExamples(t *testing.T) {
	kw := runPlanJSON(t, "plan", "--primitive", "keywrite", "--memory", "8000000", "--value-size", "4", "--age", "100K", "--n", "1,2,4")
	pc := runPlanJSON(t, "plan", "--primitive", "postcard", "--memory", "20000000", "--hops", "5", "--values", "2^18", "--age", "100K", "--n", "2")
	if kw.Mode != "capacity" || len(kw.Rows) != 3 || len(pc.Rows) != 1 {
		t.Fatalf("unexpected shape: %+v %+v", kw, pc)
	}
	for _, row := range append(kw.Rows, pc.Rows...) {
		if row.Slots != 1_000_000 || len(row.Ages) != 1 || row.Ages[0].Alpha != 0.1 || row.Ages[0].Age != 100_000 {
			t.Fatalf("N=%d: %d slots, ages %+v; the examples need α = 0.1", row.N, row.Slots, row.Ages)
		}
	}
	at := func(rows planJSONOut, i int) (no, wrong float64) {
		return rows.Rows[i].Ages[0].NoAnswer, rows.Rows[i].Ages[0].Wrong
	}
	for _, tt := range []struct {
		name string
		got  float64
		ok   bool
	}{
		{"Key-Write N=1 has no answer about 9.5 %", first(at(kw, 0)), math.Abs(first(at(kw, 0))-0.095) < 0.0005},
		{"Key-Write N=2 has no answer below 3.3 %", first(at(kw, 1)), first(at(kw, 1)) < 0.033},
		{"Key-Write N=2 is wrong at most 1.6e-11", second(at(kw, 1)), second(at(kw, 1)) <= 1.6e-11},
		{"Key-Write N=4 has no answer about 1.2 %", first(at(kw, 2)), math.Abs(first(at(kw, 2))-0.012) < 0.0005},
		{"Postcarding has no output at most 3.3 %", first(at(pc, 0)), first(at(pc, 0)) <= 0.033},
		{"Postcarding is wrong below 1e-22", second(at(pc, 0)), second(at(pc, 0)) < 1e-22},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.ok {
				t.Errorf("got %.4g", tt.got)
			}
		})
	}
}

func first(a, _ float64) float64  { return a }
func second(_, b float64) float64 { return b }

func TestPlanJSONGivesTheBestN(t *testing.T) {
	res := runPlanJSON(t, "plan", "--keys", "100M", "--value-size", "20", "--target", "0.99")
	if res.Mode != "plan" || res.BestN == nil || *res.BestN != 4 || len(res.Rows) != 4 {
		t.Fatalf("got %+v", res)
	}
	if r := res.Rows[0]; r.MeetsTarget || r.Memory != 0 {
		t.Errorf("N=1 would need more than 2^32 slots, got %+v", r)
	}
	for _, r := range res.Rows[1:] {
		// Slots of 4 + 20 bytes.
		if !r.MeetsTarget || r.Success < 0.99 || r.Memory != 24*r.Slots || r.Age != 100_000_000 {
			t.Errorf("N=%d: %+v", r.N, r)
		}
	}
}

// TestPlanHelpExamplesRun runs every example of dta plan --help and every
// dta plan command of docs/REPRODUCTION.md, so that neither drifts from the
// code.
func TestPlanHelpExamplesRun(t *testing.T) {
	cmds := planCommands(newPlanCmd().Example)
	doc, err := os.ReadFile("../../docs/REPRODUCTION.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds = append(cmds, planCommands(string(doc))...)
	if len(cmds) < 7 {
		t.Fatalf("found only %d dta plan commands", len(cmds))
	}
	for _, c := range cmds {
		t.Run(c, func(t *testing.T) {
			code, out, errs := runPlanArgs(t, strings.Fields(strings.TrimPrefix(c, "dta "))...)
			if code != 0 || out == "" {
				t.Errorf("exit %d: %s", code, errs)
			}
		})
	}
	t.Run("the table shows the worked examples' numbers", func(t *testing.T) {
		_, out, _ := runPlanArgs(t, "plan", "--primitive", "keywrite", "--memory", "8000000", "--value-size", "4", "--age", "100K", "--n", "1,2,4")
		_, pc, _ := runPlanArgs(t, "plan", "--primitive", "postcard", "--memory", "20000000", "--hops", "5", "--values", "2^18", "--age", "100K", "--n", "2")
		for _, want := range []string{"0.0952", "0.0329", "1.53e-11", "0.0118"} {
			if !strings.Contains(out, want) {
				t.Errorf("Key-Write table lacks %s:\n%s", want, out)
			}
		}
		for _, want := range []string{"0.0329", "5.57e-23"} {
			if !strings.Contains(pc, want) {
				t.Errorf("Postcarding table lacks %s:\n%s", want, pc)
			}
		}
	})
}

// planCommands returns the lines of text (trimmed, after any "$ ") that are
// dta plan commands.
func planCommands(text string) []string {
	var cmds []string
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "$ ")
		if strings.HasPrefix(line, "dta plan ") {
			cmds = append(cmds, line)
		}
	}
	return cmds
}

func TestPlanCount(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want uint64
	}{
		{"7", 7}, {"100K", 100_000}, {"100k", 100_000}, {"100M", 100_000_000}, {"1.5M", 1_500_000},
		{"3G", 3_000_000_000}, {"2T", 2_000_000_000_000}, {"2^18", 1 << 18}, {" 2^0 ", 1}, {"0", 0},
	} {
		t.Run("parses "+tt.in, func(t *testing.T) {
			if got, err := planCount(tt.in); err != nil || got != tt.want {
				t.Errorf("planCount(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
	for _, in := range []string{"", "M", "1.5", "-1", "-1K", "1.0000001K", "3^2", "2^64", "2^x", "1e6", "100MiB", "20000000000T"} {
		t.Run("rejects "+in, func(t *testing.T) {
			if got, err := planCount(in); err == nil {
				t.Errorf("planCount(%q) = %d", in, got)
			}
		})
	}
}

func TestPlanUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"append has nothing to plan", []string{"--primitive", "append", "--keys", "1M"}, "append"},
		{"an unknown primitive", []string{"--primitive", "bloom", "--keys", "1M"}, "--primitive"},
		{"planning without keys", []string{"--value-size", "4"}, "--keys"},
		{"zero keys", []string{"--keys", "0"}, "--keys"},
		{"a bad count", []string{"--keys", "lots"}, "--keys"},
		{"a target of 1", []string{"--keys", "1M", "--target", "1"}, "--target"},
		{"a target of 0", []string{"--keys", "1M", "--target", "0"}, "--target"},
		{"a target with --memory", []string{"--memory", "1GiB", "--keys", "1M", "--target", "0.9"}, "--target"},
		{"several ages when planning", []string{"--keys", "1M", "--age", "1K,2K"}, "--age"},
		{"an age for keyincrement", []string{"--primitive", "keyincrement", "--keys", "1M", "--age", "5"}, "age"},
		{"hops for keywrite", []string{"--keys", "1M", "--hops", "5"}, "postcard only"},
		{"a value size for postcard", []string{"--primitive", "postcard", "--keys", "1M", "--value-size", "8"}, "keywrite only"},
		{"checksum bits for keyincrement", []string{"--primitive", "keyincrement", "--keys", "1M", "--checksum-bits", "16"}, "checksum"},
		{"N of 9", []string{"--keys", "1M", "--n", "2,9"}, "n:"},
		{"a value set beyond 32 bits", []string{"--primitive", "postcard", "--keys", "1M", "--values", "2^32"}, "values"},
		{"a bad memory size", []string{"--memory", "1.5GiB", "--keys", "1M"}, "--memory"},
		{"a memory too small for two slots", []string{"--memory", "8", "--keys", "1M"}, "memory"},
		{"an unknown hash", []string{"--keys", "1M", "--hash", "md5"}, "--hash"},
		{"an unknown output", []string{"--keys", "1M", "-o", "yaml"}, "-o"},
		{"an argument", []string{"--keys", "1M", "extra"}, "unknown command"},
	} {
		t.Run("rejects "+tt.name, func(t *testing.T) {
			code, _, errs := runPlanArgs(t, append([]string{"plan"}, tt.args...)...)
			if code == 0 || !strings.Contains(errs, tt.want) {
				t.Errorf("exit %d, stderr %q; want a usage error naming %q", code, errs, tt.want)
			}
			if code != 2 && tt.name != "an argument" {
				t.Errorf("exit %d, want 2", code)
			}
		})
	}
}
