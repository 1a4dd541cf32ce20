package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// teaExec runs dta with args and returns the exit code, stdout and stderr.
func teaExec(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// teaRun runs dta with args and decodes its JSON output into v.
func teaRun(t *testing.T, v any, args ...string) {
	t.Helper()
	code, out, errs := teaExec(t, append(args, "-o", "json")...)
	if code != 0 {
		t.Fatalf("dta %s: exit %d: %s", strings.Join(args, " "), code, errs)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
}

func TestTeaPlanMatchesThePapersTable2(t *testing.T) {
	var rows []struct {
		NF       string  `json:"nf"`
		PaperMiB float64 `json:"paper_mib"`
		Raw      uint64  `json:"raw_bytes"`
		Buckets  uint64  `json:"bucket_bytes"`
		Shadow   uint64  `json:"shadow_bytes"`
		Table    uint64  `json:"table_bytes"`
	}
	teaRun(t, &rows, "tea", "plan", "--nf", "table2")
	if len(rows) != 4 {
		t.Fatalf("%d rows, want the paper's 4 network functions", len(rows))
	}
	for _, r := range rows {
		if got := float64(r.Raw) / (1 << 20); math.Abs(got-r.PaperMiB) > 0.5 {
			t.Errorf("%s: %.1f MiB of entries, the paper says %.0f", r.NF, got, r.PaperMiB)
		}
		if r.Shadow != r.Buckets || r.Table < r.Buckets+r.Shadow || r.Buckets < r.Raw {
			t.Errorf("%s: buckets %d, shadows %d, table %d, raw %d", r.NF, r.Buckets, r.Shadow, r.Table, r.Raw)
		}
	}
}

func TestTeaPlanSplitsTheTableOverServers(t *testing.T) {
	var rows []struct {
		Table   uint64   `json:"table_bytes"`
		Servers []uint64 `json:"server_bytes"`
	}
	teaRun(t, &rows, "tea", "plan", "--entries", "1M", "--key-size", "13", "--value-size", "6", "--scratchpad", "1500", "--servers", "4", "--replicas", "2")
	var sum uint64
	for _, b := range rows[0].Servers {
		sum += b
	}
	if len(rows[0].Servers) != 4 || sum != 2*rows[0].Table {
		t.Errorf("servers hold %v, %d in all; want 4 servers holding two copies of %d", rows[0].Servers, sum, rows[0].Table)
	}
}

func TestTeaCommandsRefuseBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"tea", "plan", "--nf", "dns"},
		{"tea", "plan", "--load-factor", "1.5"},
		{"tea", "plan", "--entries", "many"},
		{"tea", "bench", "--figure", "fig7"},
		{"tea", "bench", "--figure", "stash", "--loads", "0.9,0.5"},
		{"tea", "load"},
		{"tea", "load", "--gen", "10", "--in", "x"},
		{"tea", "lookup", "--table", "x"},
		{"tea", "plan", "-o", "yaml"},
	} {
		if code, _, _ := teaExec(t, args...); code != 2 {
			t.Errorf("dta %s: exit %d, want 2", strings.Join(args, " "), code)
		}
	}
}

func TestTeaBenchRunsEveryFigureSmall(t *testing.T) {
	var rep struct {
		Stash struct {
			Rows []struct {
				Cells    int     `json:"cells"`
				Fraction float64 `json:"stash_fraction"`
				Min      float64 `json:"min_stash_fraction"`
			} `json:"rows"`
			MaxLoad map[string]struct {
				Load float64 `json:"load_factor"`
			} `json:"max_load_within_target"`
		} `json:"stash"`
		Balance []struct {
			Cache      bool    `json:"cache"`
			Imbalance  float64 `json:"imbalance"`
			CacheShare float64 `json:"cache_share"`
		} `json:"balance"`
		Failover []struct {
			Unavailable uint64 `json:"unavailable"`
			MaxReads    int    `json:"max_reads_per_lookup"`
		} `json:"failover"`
	}
	teaRun(t, &rep, "tea", "bench", "--entries", "2^12", "--cells", "4,8", "--loads", "0.5,0.7",
		"--keys", "10K", "--lookups", "50K", "--warmup", "20K", "--alphas", "0.99", "--cache-size", "32", "--hot-threshold", "8")
	if len(rep.Stash.Rows) != 4 || rep.Stash.MaxLoad["8"].Load == 0 {
		t.Errorf("stash: %+v", rep.Stash)
	}
	if len(rep.Balance) != 2 || rep.Balance[1].CacheShare < 0.2 || rep.Balance[1].Imbalance >= rep.Balance[0].Imbalance {
		t.Errorf("balance: %+v", rep.Balance)
	}
	if len(rep.Failover) != 30 {
		t.Fatalf("failover: %d windows", len(rep.Failover))
	}
	for _, w := range rep.Failover {
		if w.Unavailable != 0 || w.MaxReads != 1 {
			t.Errorf("failover window %+v", w)
		}
	}
}

func TestTeaLoadThenLookupFindsEveryKeyWhereItWasPut(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "nat.tea")
	in := filepath.Join(dir, "nat.txt")
	entries := "# a NAT table\n" +
		"tcp,10.0.0.1:5000,10.0.0.2:80 0x0a0000630050\n" +
		"udp,10.0.0.2:53,10.0.0.3:53 42   # decimal value\n"
	if err := os.WriteFile(in, []byte(entries), 0o644); err != nil {
		t.Fatal(err)
	}
	var load struct {
		Inserted uint64 `json:"inserted"`
		File     string `json:"file"`
	}
	teaRun(t, &load, "tea", "load", "--in", in, "--out", file)
	if load.Inserted != 2 || load.File != file {
		t.Fatalf("load: %+v", load)
	}
	var rows []struct {
		Key    string `json:"key"`
		Found  bool   `json:"found"`
		Value  string `json:"value"`
		Source string `json:"source"`
		Reads  int    `json:"reads"`
		Bucket uint64 `json:"bucket"`
		Home   uint64 `json:"home"`
	}
	teaRun(t, &rows, "tea", "lookup", "--table", file, "--servers", "2", "--replicas", "2",
		"--key", "tcp,10.0.0.1:5000,10.0.0.2:80", "--key", "udp,10.0.0.2:53,10.0.0.3:53", "--key", "tcp,10.9.9.9:1,10.0.0.2:80")
	want := []struct {
		found bool
		value string
	}{{true, "0x0a0000630050"}, {true, "0x00000000002a"}, {false, ""}}
	for i, r := range rows {
		if r.Found != want[i].found || r.Value != want[i].value || r.Source != "memory" || r.Reads != 1 {
			t.Errorf("lookup %s: %+v", r.Key, r)
		}
	}

	t.Run("a generated table finds its sample key", func(t *testing.T) {
		var gen struct {
			Sample  string `json:"sample_key"`
			Stashed int    `json:"stashed"`
		}
		teaRun(t, &gen, "tea", "load", "--gen", "20K", "--load-factor", "0.95", "--out", file)
		var got []struct {
			Found bool `json:"found"`
			Reads int  `json:"reads"`
		}
		teaRun(t, &got, "tea", "lookup", "--table", file, "--key", gen.Sample)
		if gen.Stashed == 0 || !got[0].Found || got[0].Reads > 1 {
			t.Errorf("load %+v, lookup %+v", gen, got)
		}
	})
	t.Run("a bad entry line is a usage error naming the line", func(t *testing.T) {
		if err := os.WriteFile(in, []byte("tcp,10.0.0.1:5000,10.0.0.2:80 0x0102\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errs := teaExec(t, "tea", "load", "--in", in)
		if code != 2 || !strings.Contains(errs, "nat.txt:1") {
			t.Errorf("exit %d: %s", code, errs)
		}
	})
	t.Run("a damaged table file is refused", func(t *testing.T) {
		b, _ := os.ReadFile(file)
		b[len(b)/2] ^= 0xFF
		_ = os.WriteFile(file, b, 0o644)
		if code, _, errs := teaExec(t, "tea", "lookup", "--table", file, "--key", "tcp,10.0.0.1:5000,10.0.0.2:80"); code != 1 || !strings.Contains(errs, "not a valid table file") {
			t.Errorf("exit %d: %s", code, errs)
		}
	})
}

func FuzzTeaParseEntries(f *testing.F) {
	f.Add("tcp,10.0.0.1:5000,10.0.0.2:80 0x0a0000630050\n# c\n\n", 13, 6)
	f.Add("0x0102 7\n3 0x01", 2, 1)
	f.Add("4294967295 18446744073709551616", 4, 8)
	f.Fuzz(func(t *testing.T, in string, ks, vs int) {
		ks, vs = 1+abs(ks)%64, abs(vs)%32
		keys, values, err := teaParseEntries(strings.NewReader(in), "in", ks, vs)
		if err != nil {
			return
		}
		if len(keys)%ks != 0 || vs > 0 && len(values)/vs != len(keys)/ks || vs == 0 && len(values) != 0 {
			t.Fatalf("%d key bytes, %d value bytes for sizes %d and %d", len(keys), len(values), ks, vs)
		}
	})
}

func abs(x int) int {
	if x < 0 {
		return -(x + 1)
	}
	return x
}

func TestTeaBenchRunsTheRDMAFiguresSmall(t *testing.T) {
	var rep struct {
		Latency []struct {
			Size        int     `json:"packet_bytes"`
			LookupsPerS float64 `json:"lookups_per_s"`
			Lookup      struct {
				Median int64 `json:"median_ns"`
			} `json:"lookup"`
			Failed uint64 `json:"failed"`
		} `json:"latency"`
		Scale struct {
			Rows []struct {
				Servers     int     `json:"servers"`
				LookupsPerS float64 `json:"lookups_per_s"`
			} `json:"measured"`
			Model []float64 `json:"model_lookups_per_s"`
		} `json:"scale"`
	}
	teaRun(t, &rep, "tea", "bench", "--figure", "latency,scale", "--sizes", "64,1500", "--scale-servers", "1,2",
		"--model-servers", "4", "--rdma-keys", "2000", "--duration", "50ms", "--window", "16")
	if len(rep.Latency) != 2 || rep.Latency[1].Size != 1500 {
		t.Fatalf("latency: %+v", rep.Latency)
	}
	for _, r := range rep.Latency {
		if r.Failed != 0 || r.LookupsPerS <= 0 || r.Lookup.Median <= 0 {
			t.Errorf("latency: %+v", r)
		}
	}
	if len(rep.Scale.Rows) != 2 || rep.Scale.Rows[1].Servers != 2 || len(rep.Scale.Model) != 4 ||
		rep.Scale.Model[3] != 4*rep.Scale.Rows[0].LookupsPerS {
		t.Errorf("scale: %+v", rep.Scale)
	}
	if code, _, _ := teaExec(t, "tea", "bench", "--figure", "latency", "--sizes", "9001"); code != 2 {
		t.Errorf("--sizes 9001: exit %d, want 2", code)
	}
}
