package cli

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/dta-go/dta/wire/dta"
)

// slowThreshold is T in SELECT flowID, path WHERE SUM(latency) > T.
const slowThreshold = 2000

// ruleConfig is smallConfig with the paper's query as two rules over the
// default Postcarding store: the slow paths' keys and sums appended to the
// lists of slow-paths (spread by key), and counted per key in slow-count.
func ruleConfig(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(smallConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(b) + fmt.Sprintf(`  - {name: slow-paths, id: 10, primitive: append, lists: 4, capacity: 4096, entry_size: 22, batch: 4}
  - {name: slow-count, id: 11, primitive: keyincrement, slots: 4096, redundancy: 2}
rules:
  - name: slow
    source: postcard
    aggregate: sum
    op: ">"
    threshold: %d
    action: {type: append, store: slow-paths, list_by_key: true}
  - name: slow-count
    source: postcard
    op: gt
    threshold: %d
    action: {type: increment, store: slow-count}
`, slowThreshold, slowThreshold)
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// genPath is one generated flow's path.
type genPath struct {
	key    []byte // as the postcards carry it: 4 big-endian bytes (compat) or a 5-tuple
	compat bool
	vals   []uint32 // hop values, hop 1 first
}

func (p genPath) sum() uint64 {
	var s uint64
	for _, v := range p.vals {
		s += uint64(v)
	}
	return s
}

// genPaths draws n paths, about one in eight slow (hop values summing above
// slowThreshold), the others fast; two sit on the threshold's edges (a sum
// of exactly T is fast, T+1 slow). Half are compat 5-hop paths keyed by a
// 32-bit flow id, half extended paths of 2 to 5 hops keyed by a 5-tuple.
func genPaths(n int) []genPath {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]genPath, n)
	for i := range out {
		p := &out[i]
		hops := 5
		if i%2 == 0 {
			p.compat = true
			p.key = binary.BigEndian.AppendUint32(nil, uint32(i)*2654435761+1)
		} else {
			hops = 2 + rng.IntN(4)
			src := netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})
			ft := dta.FiveTuple{Src: src, Dst: netip.MustParseAddr("10.1.0.1"), SrcPort: uint16(1024 + i), DstPort: 443, Proto: 6}
			p.key = ft.AppendTo(nil)
		}
		var target uint32
		switch {
		case i == 3:
			target = slowThreshold // on the edge: fast
		case i == 4:
			target = slowThreshold + 1 // just over: slow
		case rng.IntN(8) == 0:
			target = slowThreshold + 1 + rng.Uint32N(5000)
		default:
			target = rng.Uint32N(slowThreshold + 1)
		}
		// Split target over the hops at random cut points.
		p.vals = make([]uint32, hops)
		left := target
		for h := range hops - 1 {
			v := rng.Uint32N(left + 1)
			p.vals[h], left = v, left-v
		}
		p.vals[hops-1] = left
	}
	return out
}

// sendPaths sends every path's postcards, one report per datagram, the hops
// of a path in a random order and the paths one after another (so that no
// path is written out early), paced for a loopback socket.
func sendPaths(t *testing.T, udpAddr string, paths []genPath) {
	t.Helper()
	conn, err := net.Dial("udp", udpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	var buf []byte
	sent := 0
	for _, p := range paths {
		for _, h := range rng.Perm(len(p.vals)) {
			r := dta.Report{Opcode: dta.OpPostcard, Key: p.key, Hop: uint8(h + 1), Value: binary.BigEndian.AppendUint32(nil, p.vals[h])}
			if !p.compat {
				r.Opcode, r.PathLen = dta.OpPostcardExt, uint8(len(p.vals))
			}
			if buf, err = dta.AppendDatagram(buf[:0], dta.Header{}, &r); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Write(buf); err != nil {
				t.Fatal(err)
			}
			if sent++; sent%64 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}
}

func TestARuleListsExactlyTheSlowPaths(t *testing.T) {
	cfg := ruleConfig(t)
	udpAddr, base := startUp(t, "--config", cfg)
	// startUp passes smallConfig first; the later --config wins.
	paths := genPaths(400)
	want := map[string]uint64{}
	var slowKey, fastKey string
	for _, p := range paths {
		k := "0x" + hex.EncodeToString(p.key)
		if p.sum() > slowThreshold {
			want[k] = p.sum()
			slowKey = k
		} else {
			fastKey = k
		}
	}
	if len(want) < 20 || len(want) > 100 {
		t.Fatalf("%d slow paths of %d: the generator is off", len(want), len(paths))
	}
	sendPaths(t, udpAddr, paths)

	eventually(t, "every path is evaluated", func() error {
		if n := metric(t, base, "", `dta_rule_evaluations_total{rule="slow",source="postcard"}`); n != float64(len(paths)) {
			return fmt.Errorf("%v paths evaluated, want %d (lost datagrams?)", n, len(paths))
		}
		return nil
	})
	query := func(args ...string) (string, error) {
		var out, errw strings.Builder
		if code := Run(t.Context(), append([]string{"query", "rule"}, append(args, "--server", base)...), nil, &out, &errw); code != 0 {
			return "", fmt.Errorf("exit %d: %s", code, errw.String())
		}
		return out.String(), nil
	}
	var got map[string]uint64
	var lines int
	eventually(t, "the rule's lists hold the slow paths", func() error {
		out, err := query("slow", "--config", cfg, "-o", "json")
		if err != nil {
			return err
		}
		got, lines = map[string]uint64{}, 0
		for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
			if line == "" {
				continue
			}
			var e ruleEntryJSON
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				return fmt.Errorf("%q: %v", line, err)
			}
			if e.Truncated {
				return fmt.Errorf("key %s truncated", e.Key)
			}
			got[e.Key] = e.Aggregate
			lines++
		}
		if len(got) < len(want) {
			return fmt.Errorf("%d entries so far, want %d", len(got), len(want))
		}
		return nil
	})
	if lines != len(got) {
		t.Errorf("%d entries for %d keys: a path was appended twice", lines, len(got))
	}
	for k, s := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("slow path %s (sum %d) is missing", k, s)
		} else if g != s {
			t.Errorf("path %s: aggregate %d, want its sum %d", k, g, s)
		}
	}
	for k, s := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("path %s (aggregate %d) is listed but not slow", k, s)
		}
	}
	if n := metric(t, base, "", `dta_rule_fires_total{rule="slow",source="postcard"}`); n != float64(len(want)) {
		t.Errorf("fires %v, want %d", n, len(want))
	}

	// The same answers in table form, one key's entries, and the counter rule.
	table, err := query("slow", "--config", cfg, "--key", slowKey)
	if err != nil {
		t.Fatal(err)
	}
	if rows := strings.Split(strings.TrimSpace(table), "\n"); len(rows) != 2 || !strings.HasPrefix(rows[0], "LIST") ||
		!strings.Contains(rows[1], slowKey) || !strings.HasSuffix(rows[1], fmt.Sprint(want[slowKey])) {
		t.Errorf("dta query rule slow --key %s:\n%s", slowKey, table)
	}
	for _, tc := range []struct {
		key  string
		want string
	}{{slowKey, `"count":1`}, {fastKey, `"count":0`}} {
		out, err := query("slow-count", "--config", cfg, "--key", tc.key, "-o", "json")
		if err != nil || !strings.Contains(out, tc.want) {
			t.Errorf("dta query rule slow-count --key %s: %s %v, want %s", tc.key, out, err, tc.want)
		}
	}
	// The rule only added to its own stores: the slow path is in the
	// Postcarding store as its postcards said.
	var pc struct {
		Complete bool `json:"complete"`
		Hops     []struct {
			Value uint32 `json:"value"`
		} `json:"hops"`
	}
	getJSON(t, base+"/v1/stores/postcard/postcard?key="+slowKey, &pc)
	var sum uint64
	for _, h := range pc.Hops {
		sum += uint64(h.Value)
	}
	if !pc.Complete || sum != want[slowKey] {
		t.Errorf("the slow path %s in the postcard store: %+v, want its hops summing to %d", slowKey, pc, want[slowKey])
	}
}

func TestQueryRuleExplainsWhatIsWrong(t *testing.T) {
	cfg := ruleConfig(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"an unknown rule names the rules there are", []string{"nope", "--config", cfg}, `rule "nope": not among the rules of ` + cfg + " (slow, slow-count)"},
		{"no rules at all says to give --config", []string{"slow"}, "has no rules (give --config"},
		{"a counter rule needs a key", []string{"slow-count", "--config", cfg, "--server", "http://127.0.0.1:1"}, "--key: rule slow-count counts per key"},
		{"a bad key is a usage error", []string{"slow", "--config", cfg, "--key", "zz"}, "--key:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errw strings.Builder
			code := Run(t.Context(), append([]string{"query", "rule"}, tc.args...), nil, io.Discard, &errw)
			if code == 0 || !strings.Contains(errw.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want an error containing %q", code, errw.String(), tc.want)
			}
		})
	}
}

func TestUpRefusesARuleOverAStoreItDoesNotHave(t *testing.T) {
	b, err := os.ReadFile(smallConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(cfg, append(b, []byte(`rules:
  - {name: slow, source: postcard, op: ">", threshold: 1, action: {type: append, store: append}}
`)...), 0o600)
	var errw strings.Builder
	code := Run(t.Context(), []string{"up", "--config", cfg, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"}, nil, io.Discard, &errw)
	if code == 0 || !strings.Contains(errw.String(), `rules[0].action.store: "append" has entry_size 4`) {
		t.Errorf("exit %d: %s", code, errw.String())
	}
}

func TestRulesAndTheKafkaExporterBothSeeEveryPath(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.SeedTopics(1, "dta.append", "dta.paths", "dta.changes"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	b, err := os.ReadFile(exportConfig(t, brokers))
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "export-rules.yaml")
	os.WriteFile(cfg, append(b, fmt.Sprintf(`  - {name: slow-paths, id: 10, primitive: append, lists: 4, capacity: 4096, entry_size: 22, batch: 4}
rules:
  - {name: slow, source: postcard, op: ">", threshold: %d, action: {type: append, store: slow-paths, list_by_key: true}}
`, slowThreshold)...), 0o600)
	m, stop := startCmd(t, upExportReady, "up", "--config", cfg, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	defer stop()
	paths := genPaths(50)
	sendPaths(t, m[1], paths)
	eventually(t, "the rule evaluates every path", func() error {
		if n := metric(t, m[2], "", `dta_rule_evaluations_total{rule="slow",source="postcard"}`); n != float64(len(paths)) {
			return fmt.Errorf("%v evaluated, want %d", n, len(paths))
		}
		return nil
	})
	if recs := kafkaRecords(t, brokers, "dta.paths", len(paths), 10*time.Second); len(recs) != len(paths) {
		t.Errorf("%d paths exported, want all %d: the rules took the exporter's place", len(recs), len(paths))
	}
}
