package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/analysis/sim"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/partition"
)

// dartConfig writes a collector configuration with one Key-Write store of
// slots 8-byte slots (4-byte values, crc32c, N up to 4).
func dartConfig(t *testing.T, slots int) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "dta.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `
collector:
  prefault: false
stores:
  - {name: keywrite, id: 1, primitive: keywrite, default: true, slots: %d, value_size: 4, redundancy: 4}
`, slots), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// dartPair starts two collectors as `dta collector` runs them and returns
// their RoCEv2 addresses and query base URLs.
func dartPair(t *testing.T, cfg string) (rdma, base [2]string) {
	t.Helper()
	for i := range 2 {
		m, _ := startCmd(t, collectorReady, "collector", "--config", cfg, "--rdma", "127.0.0.1:0", "--http", "127.0.0.1:0")
		rdma[i], base[i] = m[1], m[2]
	}
	return rdma, base
}

// runDTA runs a dta command to its end and returns its output.
func runDTA(t *testing.T, args ...string) string {
	t.Helper()
	var out, errw bytes.Buffer
	if code := Run(context.Background(), args, nil, &out, &errw); code != 0 {
		t.Fatalf("dta %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errw.String())
	}
	return out.String()
}

type kwAnswer struct {
	Key      string `json:"key"`
	Status   string `json:"status"`
	ValueU32 uint32 `json:"value_u32"`
	Votes    int    `json:"votes"`
}

// queryBatch looks keys up on a collector through the batch endpoint of
// the query API, 10 000 keys at a time.
func queryBatch(t *testing.T, base string, keys []uint32, n int) []kwAnswer {
	t.Helper()
	var out []kwAnswer
	for lo := 0; lo < len(keys); lo += 10000 {
		chunk := keys[lo:min(lo+10000, len(keys))]
		body, _ := json.Marshal(map[string]any{"keys": chunk, "n": n})
		resp, err := http.Post(base+"/v1/stores/keywrite/keywrite:batch", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var r struct{ Results []kwAnswer }
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || len(r.Results) != len(chunk) {
			t.Fatalf("batch query: status %d, %d results for %d keys, %v", resp.StatusCode, len(r.Results), len(chunk), err)
		}
		out = append(out, r.Results...)
	}
	return out
}

// owners returns, for keys first..first+count-1, the index (0 or 1) of the
// collector the partition function names among c1 and c2.
func owners(t *testing.T, first uint32, count int) []int {
	t.Helper()
	m, err := partition.New([]string{"c1", "c2"})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int, count)
	for i := range out {
		out[i] = m.Owner(binary.BigEndian.AppendUint32(nil, first+uint32(i)))
	}
	return out
}

// Every key lands on the collector the partition function names, and only
// there, whether copies are written or swapped in.
func TestDARTReporterWritesEveryKeyIntoItsOwnerOnly(t *testing.T) {
	cfg := dartConfig(t, 4096)
	for _, cas := range []bool{false, true} {
		t.Run(fmt.Sprintf("cas=%v", cas), func(t *testing.T) {
			rdma, base := dartPair(t, cfg)
			const first, count = 500, 64
			args := []string{"report", "keywrite", "--direct", "--collectors", "c1=" + rdma[0] + ",c2=" + rdma[1],
				"--key", strconv.Itoa(first), "--keys", strconv.Itoa(count), "--value", "7000", "--redundancy", "2"}
			if cas {
				args = append(args, "--cas")
			}
			out := runDTA(t, args...)
			if !strings.Contains(out, fmt.Sprintf("direct: %d keys written", count)) {
				t.Errorf("summary: %q", out)
			}
			own := owners(t, first, count)
			for i := range count {
				k := first + i
				for c := range 2 {
					var r kwAnswer
					getJSON(t, fmt.Sprintf("%s/v1/stores/keywrite/keywrite?key=%d&n=2", base[c], k), &r)
					switch {
					case c == own[i] && (r.Status != "found" || r.ValueU32 != uint32(7000+i) || r.Votes != 2):
						t.Errorf("key %d on its owner c%d: %+v", k, c+1, r)
					case c != own[i] && r.Status != "empty":
						t.Errorf("key %d found on c%d, which does not own it: %+v", k, c+1, r)
					}
				}
			}
		})
	}
	// One key, printed.
	rdma, base := dartPair(t, cfg)
	out := runDTA(t, "report", "keywrite", "--direct", "--collectors", rdma[0]+","+rdma[1], "--key", "42", "--value", "0x0000beef", "--cas")
	if !strings.Contains(out, "wrote 42 = 0x0000beef (2 copies) into collector 127.0.0.1:") {
		t.Errorf("output %q", out)
	}
	m, _ := partition.New([]string{rdma[0], rdma[1]})
	var r kwAnswer
	getJSON(t, base[m.Owner([]byte{0, 0, 0, 42})]+"/v1/stores/keywrite/keywrite?key=42", &r)
	if r.Status != "found" || r.ValueU32 != 0xbeef {
		t.Errorf("key 42 on its owner: %+v", r)
	}
}

// dartLoad is the load of the high-load check: keys per slot of each
// collector, with N = 2 (DART's 3 GB per 100 M flows is 0.745).
const dartLoad = 0.75

// envNumber returns the environment variable name as a number, or def.
func envNumber(t *testing.T, name string, def float64) float64 {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 {
		t.Fatalf("%s=%q: want a positive number", name, s)
	}
	return v
}

// At high load, DART's compare-and-swap variant answers more queries than
// plain writes, and both match the simulation of the same load and N
// (internal/analysis/sim over the production Key-Write code): measured over
// real sockets, with real collectors, the reporter's slots are the
// simulation's. DTA_DART_SLOTS (slots per collector) and DTA_DART_LOAD
// (keys per slot) change the scale and the load, for docs/REPRODUCTION.md.
func TestDARTCompareSwapBeatsPlainWritesAtHighLoadAsSimulated(t *testing.T) {
	slots := 4096
	if testing.Short() {
		slots = 2048
	}
	slots = int(envNumber(t, "DTA_DART_SLOTS", float64(slots)))
	load := envNumber(t, "DTA_DART_LOAD", dartLoad)
	cfg := dartConfig(t, slots)
	count := int(math.Round(2 * load * float64(slots)))
	const first = 1
	own := owners(t, first, count)
	measured := map[bool]float64{}
	for _, cas := range []bool{false, true} {
		rdma, base := dartPair(t, cfg)
		args := []string{"report", "keywrite", "--direct", "--collectors", "c1=" + rdma[0] + ",c2=" + rdma[1],
			"--key", strconv.Itoa(first), "--keys", strconv.Itoa(count), "--value", "1000000", "--redundancy", "2"}
		if cas {
			args = append(args, "--cas")
		}
		t.Log(strings.TrimSpace(runDTA(t, args...)))
		var keys [2][]uint32
		var values [2][]uint32
		for i := range count {
			keys[own[i]] = append(keys[own[i]], uint32(first+i))
			values[own[i]] = append(values[own[i]], uint32(1000000+i))
		}
		found := 0
		for c := range 2 {
			for i, r := range queryBatch(t, base[c], keys[c], 2) {
				if r.Status == "found" && r.ValueU32 == values[c][i] {
					found++
				}
			}
			// Not one key is found where it was not written.
			for _, r := range queryBatch(t, base[1-c], keys[c], 2) {
				if r.Status != "empty" {
					t.Errorf("key %s found on c%d, which does not own it", r.Key, 2-c)
				}
			}
		}
		measured[cas] = float64(found) / float64(count)
	}
	simulated := map[bool]float64{}
	for _, cas := range []bool{false, true} {
		c := sim.DefaultConfig()
		simSlots := max(1<<16, uint64(slots))
		c.Slots, c.Keys, c.N, c.IfEmpty = simSlots, uint64(math.Round(load*float64(simSlots))), 2, cas
		c.Hash, c.PerBin, c.HugePages = hashing.CRC32C, int(c.Keys), region.HugePagesOff
		res, err := sim.Run(context.Background(), c, nil)
		if err != nil {
			t.Fatal(err)
		}
		simulated[cas] = res.All.Success()
	}
	t.Logf("keys/slots %.4g, N = 2, %d slots per collector, %d keys: plain writes %.2f %% (simulated %.2f %%), compare-and-swap %.2f %% (simulated %.2f %%)",
		load, slots, count, 100*measured[false], 100*simulated[false], 100*measured[true], 100*simulated[true])
	if load >= 0.5 && measured[true] <= measured[false]+0.03 {
		t.Errorf("compare-and-swap %.2f %% is not clearly above plain writes %.2f %%", 100*measured[true], 100*measured[false])
	}
	for _, cas := range []bool{false, true} {
		if d := math.Abs(measured[cas] - simulated[cas]); d > 0.03 {
			t.Errorf("cas=%v: measured %.2f %% is %.1f points from the simulation's %.2f %%", cas, 100*measured[cas], 100*d, 100*simulated[cas])
		}
	}
}

func TestDirectFlagsAreCheckedAsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"report", "keywrite", "--direct", "--key", "1", "--value", "2"},                                                          // no collectors
		{"report", "keywrite", "--collectors", "127.0.0.1:4791", "--key", "1", "--value", "2"},                                    // collectors without --direct
		{"report", "keywrite", "--cas", "--key", "1", "--value", "2"},                                                             // cas without --direct
		{"report", "keywrite", "--direct", "--collectors", "127.0.0.1:4791", "--to", "127.0.0.1:1", "--key", "1", "--value", "2"}, // a translator address
		{"report", "keywrite", "--direct", "--collectors", "nope", "--key", "1", "--value", "2"},                                  // a bad list
		{"report", "keywrite", "--direct", "--collectors", "127.0.0.1:4791", "--key", "0x01", "--keys", "5", "--value", "2"},      // --keys needs a decimal key
	} {
		var out, errw bytes.Buffer
		if code := Run(context.Background(), args, nil, &out, &errw); code != 2 {
			t.Errorf("dta %s: exit %d, want 2 (usage)\n%s", strings.Join(args, " "), code, errw.String())
		}
	}
}
