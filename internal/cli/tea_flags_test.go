package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dta-go/dta/internal/tea"
)

// teaBareKey matches a library Config's key name where a flag's name is
// due: "cells: 0" rather than "--cells: 0".
var teaBareKey = regexp.MustCompile(`(^|[^-\w])(key_size|value_size|load_factor|max_tries|cache_size|buckets|servers|cells|entries|keys|loads|alphas|lookups):`)

// TestTeaFlagsAreRefusedNamingTheFlag runs every tea command with a flag
// value from outside that is out of range, meaningless or would crash the
// process (a panic, running out of memory, a hang): each must be refused
// before any work with exit code 2 and an error naming the flag.
func TestTeaFlagsAreRefusedNamingTheFlag(t *testing.T) {
	dir := t.TempDir()
	table := filepath.Join(dir, "t.tea")
	if code, _, errs := teaExec(t, "tea", "load", "--gen", "1K", "--out", table); code != 0 {
		t.Fatalf("tea load: exit %d: %s", code, errs)
	}
	long := filepath.Join(dir, "long.txt")
	if err := os.WriteFile(long, []byte(strings.Repeat("1", 100<<10)+" 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	key := "tcp,10.0.0.1:5000,10.0.0.2:80"
	nat := []string{"tea", "nf", "nat", "--in", "tin", "--out", "tout", "--entry", "udp,10.0.0.1:1,10.0.0.2:2=1.2.3.4:5"}
	for _, tc := range []struct {
		name string
		args []string
		want string // in stderr, besides "dta:"
	}{
		// Finding 1: a divide by zero, and exit 1.
		{"bench zero cells", []string{"tea", "bench", "--figure", "stash", "--cells", "0"}, "--cells"},
		{"bench negative cells", []string{"tea", "bench", "--figure", "stash", "--cells", "-1"}, "--cells"},
		{"bench too many cells", []string{"tea", "bench", "--figure", "stash", "--cells", "8,65"}, "--cells"},
		// Finding 2: makeslice panics.
		{"bench 2^62 entries", []string{"tea", "bench", "--figure", "stash", "--entries", "4611686018427387904"}, "--entries"},
		{"bench entries beyond memory", []string{"tea", "bench", "--figure", "stash", "--entries", "2^32"}, "--entries"},
		{"bench NaN load", []string{"tea", "bench", "--figure", "stash", "--loads", "NaN"}, "--loads"},
		{"bench NaN load among others", []string{"tea", "bench", "--figure", "stash", "--loads", "0.5,NaN,0.9"}, "--loads"},
		// Finding 3: makeslice panics in NewLocalMemory.
		{"load 2^40 buckets", []string{"tea", "load", "--gen", "1K", "--buckets", "1099511627776"}, "--buckets"},
		{"nf 2^40 buckets", append(nat, "--buckets", "1099511627776"), "--buckets"},
		{"nf one bucket", append(nat, "--buckets", "1"), "--buckets"},
		{"load one bucket", []string{"tea", "load", "--gen", "1K", "--buckets", "1"}, "--buckets"},
		// Finding 4: out of memory.
		{"load 2^39 buckets", []string{"tea", "load", "--gen", "1K", "--buckets", "2^39"}, "--buckets"},
		{"load 2^40 generated keys", []string{"tea", "load", "--gen", "2^40"}, "--gen"},
		{"plan 99999999999 servers", []string{"tea", "plan", "--servers", "99999999999"}, "--servers"},
		{"lookup 99999999999 servers", []string{"tea", "lookup", "--table", table, "--key", key, "--servers", "99999999999"}, "--servers"},
		{"lookup more servers than buckets", []string{"tea", "lookup", "--table", table, "--key", key, "--servers", "1000"}, "--servers"},
		{"lookup zero replicas", []string{"tea", "lookup", "--table", table, "--key", key, "--replicas", "0"}, "--replicas"},
		{"bench balance zero servers", []string{"tea", "bench", "--figure", "balance", "--servers", "0"}, "--servers"},
		{"bench balance 2^62 keys", []string{"tea", "bench", "--figure", "balance", "--keys", "2^62"}, "--keys"},
		// Finding 5.
		{"bench empty figure", []string{"tea", "bench", "--figure", ""}, "--figure"},
		{"bench NaN target", []string{"tea", "bench", "--figure", "stash", "--target", "NaN"}, "--target"},
		{"bench negative target", []string{"tea", "bench", "--figure", "stash", "--target", "-1"}, "--target"},
		{"bench target above 1", []string{"tea", "bench", "--figure", "stash", "--target", "2"}, "--target"},
		{"bench negative duration", []string{"tea", "bench", "--figure", "latency", "--duration", "-1s"}, "--duration"},
		{"bench negative window", []string{"tea", "bench", "--figure", "latency", "--window", "-1"}, "--window"},
		{"bench 2^62 lookups", []string{"tea", "bench", "--figure", "balance", "--lookups", "2^62"}, "--lookups"},
		{"bench 2^62 warm-up", []string{"tea", "bench", "--figure", "balance", "--warmup", "2^62"}, "--warmup"},
		{"bench NaN alpha", []string{"tea", "bench", "--figure", "balance", "--alphas", "NaN"}, "--alphas"},
		{"bench zero hot threshold", []string{"tea", "bench", "--figure", "balance", "--hot-threshold", "0"}, "--hot-threshold"},
		{"bench zero max tries", []string{"tea", "bench", "--figure", "stash", "--max-tries", "0"}, "--max-tries"},
		{"load zero max tries", []string{"tea", "load", "--gen", "1K", "--max-tries", "0"}, "--max-tries"},
		{"bench zero RDMA keys", []string{"tea", "bench", "--figure", "latency", "--rdma-keys", "0"}, "--rdma-keys"},
		{"bench zero scale servers", []string{"tea", "bench", "--figure", "scale", "--scale-servers", "0"}, "--scale-servers"},
		// Finding 6.
		{"nf negative duration", append(nat, "--duration", "-1s"), "--duration"},
		{"nf zero timeout", append(nat, "--rdma", "--timeout", "0"), "--timeout"},
		{"nf negative timeout", append(nat, "--rdma", "--timeout", "-1s"), "--timeout"},
		{"nf timeout without RDMA", append(nat, "--timeout", "1s"), "--timeout"},
		{"nf store without collector", append(nat, "--store", "x"), "--store"},
		{"nf buckets with a table file", append(nat, "--table", table, "--buckets", "64"), "--buckets"},
		// Finding 7.
		{"lookup table and collector", []string{"tea", "lookup", "--table", table, "--key", key, "--collector", "192.0.2.1"}, "mutually exclusive"},
		// Finding 8.
		{"load from a device", []string{"tea", "load", "--in", "/dev/zero"}, "--in"},
		{"load from a directory", []string{"tea", "load", "--in", dir}, "--in"},
		{"load a missing file", []string{"tea", "load", "--in", filepath.Join(dir, "missing")}, "--in"},
		{"load a line too long", []string{"tea", "load", "--in", long, "--key-size", "4", "--value-size", "1"}, "--in"},
		{"lookup in a device", []string{"tea", "lookup", "--table", "/dev/zero", "--key", key}, "--table"},
		{"lookup in a missing file", []string{"tea", "lookup", "--table", filepath.Join(dir, "missing"), "--key", key}, "--table"},
		{"nf table from a device", append(nat, "--table", "/dev/zero"), "--table"},
		// Finding 9: refused before the table is built.
		{"load out to a directory", []string{"tea", "load", "--gen", "1K", "--out", dir}, "--out"},
		// Finding 10: the library's key names.
		{"load zero key size", []string{"tea", "load", "--gen", "1K", "--key-size", "0"}, "--key-size"},
		{"load zero load factor", []string{"tea", "load", "--gen", "1K", "--load-factor", "0"}, "--load-factor"},
		{"load NaN load factor", []string{"tea", "load", "--gen", "1K", "--load-factor", "NaN"}, "--load-factor"},
		{"load tiny load factor", []string{"tea", "load", "--gen", "1K", "--load-factor", "1e-300"}, "--load-factor"},
		{"load zero cells", []string{"tea", "load", "--gen", "1K", "--cells", "0"}, "--cells"},
		{"load zero cells with buckets", []string{"tea", "load", "--gen", "1K", "--cells", "0", "--buckets", "64"}, "--cells"},
		{"load negative scratchpad", []string{"tea", "load", "--gen", "1K", "--scratchpad", "-1"}, "--scratchpad"},
		{"plan zero cells", []string{"tea", "plan", "--cells", "0"}, "--cells"},
		{"plan zero key size", []string{"tea", "plan", "--key-size", "0"}, "--key-size"},
		{"plan huge value", []string{"tea", "plan", "--value-size", "1025"}, "--value-size"},
		{"plan NaN load factor", []string{"tea", "plan", "--load-factor", "NaN"}, "--load-factor"},
		{"plan 2^62 entries", []string{"tea", "plan", "--entries", "2^62"}, "--entries"},
		{"plan zero entries", []string{"tea", "plan", "--entries", "0"}, "--entries"},
		{"plan more servers than buckets", []string{"tea", "plan", "--entries", "16", "--servers", "100"}, "--servers"},
		{"plan more replicas than servers", []string{"tea", "plan", "--servers", "2", "--replicas", "3"}, "--replicas"},
		{"plan sizes beside --nf", []string{"tea", "plan", "--nf", "nat", "--key-size", "13"}, "--key-size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := teaExec(t, tc.args...)
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Errorf("dta %s: exit %d, stderr %q; want exit 2 and an error naming %s", strings.Join(tc.args, " "), code, errs, tc.want)
			}
			if bare := teaBareKey.FindString(errs); bare != "" {
				t.Errorf("dta %s: stderr %q names the library's key %q, not the flag", strings.Join(tc.args, " "), errs, bare)
			}
		})
	}
	if _, err := os.Stat(dir + ".tmp"); err == nil {
		t.Errorf("%s.tmp left behind", dir)
	}
}

// TestTeaWriteTableRemovesItsTemporaryFile writes a table file over a
// directory: the rename fails, and the temporary file must not stay.
func TestTeaWriteTableRemovesItsTemporaryFile(t *testing.T) {
	spec := tea.Spec{Buckets: 16, Cells: 4, KeySize: 4, ValueSize: 2, Hash: tea.CRC64}
	tab, err := tea.NewTable(spec, tea.NewLocalMemory(spec.TableSize()), tea.DefaultTableConfig())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "adir")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	err = teaWriteTable(dir, tab)
	if err == nil || !strings.Contains(err.Error(), "--out") {
		t.Errorf("teaWriteTable over a directory: %v, want an error naming --out", err)
	}
	if _, err := os.Stat(dir + ".tmp"); err == nil {
		t.Errorf("%s.tmp left behind", dir)
	}
}
