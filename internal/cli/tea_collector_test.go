package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// teaCollectorConfig writes a collector configuration with a Key-Write store
// and a TEA table store "flows" of 512 buckets × 4 cells of 13-byte keys and
// 6-byte values.
func teaCollectorConfig(t *testing.T) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "dta.yaml")
	if err := os.WriteFile(cfg, []byte(`
collector:
  prefault: false
stores:
  - {name: keywrite, id: 1, primitive: keywrite, default: true, slots: 1024, value_size: 4, redundancy: 2}
  - {name: flows, id: 7, primitive: teatable, buckets: 512, cells: 4, key_size: 13, value_size: 6}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// teaFlowKey is the i-th 5-tuple key of the tests.
func teaFlowKey(i int) string {
	return fmt.Sprintf("tcp,10.0.%d.%d:%d,10.1.0.1:80", i/250, i%250+1, 1000+i)
}

func TestATeaTableInACollectorIsLoadedOverRDMAAndLookedUpWithOneReadEach(t *testing.T) {
	cfg := teaCollectorConfig(t)
	col, _ := startCmd(t, collectorReady, "collector", "--config", cfg, "--rdma", "127.0.0.1:0", "--http", "127.0.0.1:0")
	rdmaAddr, base := col[1], col[2]

	// The collector advertises the table with its geometry, on /v1/stores
	// and in dta query stores.
	var stores struct {
		Stores []struct {
			Name      string
			Primitive string
			Geometry  struct {
				Buckets   uint64 `json:"buckets"`
				Cells     int    `json:"cells"`
				KeySize   int    `json:"key_size"`
				ValueSize int    `json:"value_size"`
				Hash      string `json:"hash"`
			}
			RegionBytes uint64 `json:"region_bytes"`
		}
	}
	getJSON(t, base+"/v1/stores", &stores)
	found := false
	for _, s := range stores.Stores {
		if s.Name == "flows" {
			found = true
			g := s.Geometry
			// A row: 2 buckets of 4 cells of 1+13+6 bytes = 160 bytes.
			if s.Primitive != "teatable" || g.Buckets != 512 || g.Cells != 4 || g.KeySize != 13 || g.ValueSize != 6 || g.Hash != "crc64" || s.RegionBytes != 512*160 {
				t.Errorf("/v1/stores shows flows as %+v", s)
			}
		}
	}
	if !found {
		t.Fatalf("/v1/stores has no store flows: %+v", stores)
	}
	if out := runDTA(t, "query", "stores", "--server", base); !strings.Contains(out, "512 buckets × 4 cells, keys 13 B, values 6 B, crc64") {
		t.Errorf("dta query stores does not show the table's geometry:\n%s", out)
	}

	// Load 300 entries from a file: value = 1000 + i.
	const n = 300
	var entries strings.Builder
	for i := range n {
		fmt.Fprintf(&entries, "%s %d\n", teaFlowKey(i), 1000+i)
	}
	file := filepath.Join(t.TempDir(), "flows.txt")
	if err := os.WriteFile(file, []byte(entries.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var load struct {
		Inserted  uint64 `json:"inserted"`
		InMemory  uint64 `json:"in_memory"`
		Stashed   int    `json:"stashed"`
		Collector string `json:"collector"`
		Store     string `json:"store"`
	}
	teaRun(t, &load, "tea", "load", "--collector", rdmaAddr, "--store", "flows", "--file", file)
	if load.Inserted != n || load.InMemory+uint64(load.Stashed) != n || load.Store != "flows" {
		t.Fatalf("load: %+v", load)
	}
	// At a load factor of 0.15 nothing should need the stash; an entry there
	// would be invisible to another process's lookups.
	if load.Stashed != 0 {
		t.Fatalf("%d entries went to the stash at a load factor of 0.15", load.Stashed)
	}
	// Loading a table that holds entries again is refused without --clear.
	if code, _, errs := teaExec(t, "tea", "load", "--collector", rdmaAddr, "--store", "flows", "--file", file); code == 0 || !strings.Contains(errs, "--clear") {
		t.Errorf("a second load into a full table: exit %d, %s", code, errs)
	}

	reads := func() float64 { return metric(t, base, "", "dta_rdma_responder_reads_total") }
	before := reads()
	if before < 0 {
		t.Fatal("the collector's /metrics has no dta_rdma_responder_reads_total")
	}
	picked := []int{0, 7, 123, 250, 299}
	args := []string{"tea", "lookup", "--collector", rdmaAddr, "--store", "flows"}
	for _, i := range picked {
		args = append(args, "--key", teaFlowKey(i))
	}
	absent := "tcp,192.0.2.1:1,192.0.2.2:2"
	args = append(args, "--key", absent)
	out := runDTA(t, args...)
	t.Logf("dta tea lookup:\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(picked)+1 {
		t.Fatalf("%d lines for %d keys:\n%s", len(lines), len(picked)+1, out)
	}
	where := regexp.MustCompile(`^(\S+): (0x[0-9a-f]+) from memory on \S+ store flows, bucket (\d+) cell (\d+) \(home (\d+)\), 1 read$`)
	for j, i := range picked {
		m := where.FindStringSubmatch(lines[j])
		if m == nil {
			t.Errorf("key %d: %q is not a value found in memory with 1 read", i, lines[j])
			continue
		}
		if want := fmt.Sprintf("0x%012x", 1000+i); m[1] != teaFlowKey(i) || m[2] != want {
			t.Errorf("key %d: %s → %s, want %s → %s", i, m[1], m[2], teaFlowKey(i), want)
		}
		if b, h := mustAtoi(t, m[3]), mustAtoi(t, m[5]); b != h && b != (h+1)%512 {
			t.Errorf("key %d: found in bucket %s, neither its home %s nor the next", i, m[3], m[5])
		}
	}
	if l := lines[len(lines)-1]; !strings.HasPrefix(l, absent+": not found") || !strings.Contains(l, "1 read") {
		t.Errorf("an absent key: %q", l)
	}
	// Every lookup was one RDMA READ executed by the collector's responder.
	if got := reads() - before; got != float64(len(picked)+1) {
		t.Errorf("the collector executed %v READs for %d lookups from memory", got, len(picked)+1)
	}

	// JSON says the same.
	var rows []teaLookupRow
	teaRun(t, &rows, "tea", "lookup", "--collector", rdmaAddr, "--store", "flows", "--key", teaFlowKey(42))
	if len(rows) != 1 || !rows[0].Found || rows[0].Value != fmt.Sprintf("0x%012x", 1042) || rows[0].Reads != 1 || rows[0].Source != "memory" {
		t.Errorf("JSON lookup: %+v", rows)
	}

	// --clear zeroes the table: then nothing is found.
	runDTA(t, "tea", "load", "--collector", rdmaAddr, "--store", "flows", "--clear", "--in", file)
	if out := runDTA(t, "tea", "lookup", "--collector", rdmaAddr, "--key", teaFlowKey(1), "--store", "flows"); !strings.Contains(out, "0x0000000003e9") {
		t.Errorf("after a reload with --clear: %s", out)
	}

	// Filled to 0.95 of its 2048 cells, the table stashes some entries; the
	// load says how many, and that they stay in the loading process.
	out = runDTA(t, "tea", "load", "--collector", rdmaAddr, "--store", "flows", "--clear", "--gen", "1946")
	m := regexp.MustCompile(`inserted 1946 entries .*: (\d+) in memory .*, (\d+) in the SRAM stash`).FindStringSubmatch(out)
	if m == nil || mustAtoi(t, m[1])+mustAtoi(t, m[2]) != 1946 || mustAtoi(t, m[2]) == 0 {
		t.Errorf("a load to 0.95 does not report its stash:\n%s", out)
	}
	if !strings.Contains(out, "stay in this process") {
		t.Errorf("the load does not say where the stash lives:\n%s", out)
	}
}

func TestTeaCommandsOverACollectorRefuseWhatTheyCannotDo(t *testing.T) {
	cfg := teaCollectorConfig(t)
	col, _ := startCmd(t, collectorReady, "collector", "--config", cfg, "--rdma", "127.0.0.1:0", "--http", "127.0.0.1:0")
	rdmaAddr := col[1]
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a store that is not a TEA table", []string{"tea", "lookup", "--collector", rdmaAddr, "--store", "keywrite", "--key", teaFlowKey(1)}, "no teatable store"},
		{"no default TEA table store", []string{"tea", "lookup", "--collector", rdmaAddr, "--key", teaFlowKey(1)}, "no default teatable store"},
		{"a key of the wrong size", []string{"tea", "lookup", "--collector", rdmaAddr, "--store", "flows", "--key", "7"}, "13"},
		{"a geometry flag with --collector", []string{"tea", "load", "--collector", rdmaAddr, "--store", "flows", "--gen", "10", "--buckets", "64"}, "--buckets"},
		{"both --table and --collector", []string{"tea", "lookup", "--collector", rdmaAddr, "--table", "x.tea", "--key", "7"}, "--table and --collector are mutually exclusive"},
	} {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			code, _, errs := teaExec(t, tc.args...)
			if code == 0 || !strings.Contains(errs, tc.want) {
				t.Fatalf("exit %d, stderr %q, want it to mention %q", code, errs, tc.want)
			}
		})
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	v, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
