package cli

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dta-go/dta/partition"
	"github.com/dta-go/dta/wire/dta"
)

// keyWriteStatus asks the collector at base for compat key k and returns
// the status ("found", "empty") and value.
func keyWriteStatus(t *testing.T, base string, k uint32) (string, uint32) {
	t.Helper()
	var r struct {
		Status   string  `json:"status"`
		ValueU32 *uint32 `json:"value_u32"`
	}
	if code := getJSON(t, fmt.Sprintf("%s/v1/stores/keywrite/keywrite?key=%d", base, k), &r); code != http.StatusOK {
		return fmt.Sprintf("HTTP %d", code), 0
	}
	if r.ValueU32 == nil {
		return r.Status, 0
	}
	return r.Status, *r.ValueU32
}

// sendKeyWrites sends compat Key-Write reports key → key+1 for keys [from, to).
func sendKeyWrites(t *testing.T, udp string, from, to uint32) {
	t.Helper()
	conn, err := net.Dial("udp", udp)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for k := from; k < to; k++ {
		r := dta.Report{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: binary.BigEndian.AppendUint32(nil, k), Value: binary.BigEndian.AppendUint32(nil, k+1)}
		b, _ := dta.AppendDatagram(nil, dta.Header{}, &r)
		conn.Write(b)
		if k%100 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

func TestThreeCollectorsTwoTranslatorsOneKilledAndRestartedUnderLoad(t *testing.T) {
	bin := buildDTA(t)
	// Key-Write stores large enough that no sampled key is overwritten by
	// another (with 4096 slots, ~1 % of keys would be).
	cfg := filepath.Join(t.TempDir(), "multi.yaml")
	if err := os.WriteFile(cfg, []byte(`
collector:
  prefault: false
translator:
  readers: 2
  recv_buffer: 4MiB
stores:
  - {name: keywrite, id: 1, primitive: keywrite, default: true, slots: 262144, value_size: 4, redundancy: 2}
  - {name: append, id: 4, primitive: append, default: true, lists: 4, capacity: 64, entry_size: 4, batch: 4}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	type col struct {
		rdma, base string
		p          *process
	}
	start := func(rdma string) col {
		m, p := startProcess(t, bin, collectorReady, "collector", "--config", cfg, "--rdma", rdma, "--http", "127.0.0.1:0")
		return col{m[1], m[2], p}
	}
	cols := []col{start("127.0.0.1:0"), start("127.0.0.1:0"), start("127.0.0.1:0")}
	names := []string{cols[0].rdma, cols[1].rdma, cols[2].rdma}
	pm, err := partition.New(names)
	if err != nil {
		t.Fatal(err)
	}
	list := strings.Join(names, ",")
	var trs [2]string
	var trHTTP [2]string
	for i := range trs {
		m, _ := startProcess(t, bin, regexp.MustCompile(`reports on udp (\S+), RoCEv2 to .* metrics on (http://\S+)`), "translator", "--config", cfg,
			"--collector", list, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
		trs[i], trHTTP[i] = m[1], m[2]
	}
	owner := func(k uint32) int { return pm.Owner(binary.BigEndian.AppendUint32(nil, k)) }

	// Phase 1: 600 keys, half through each translator, each on its owner only.
	sendKeyWrites(t, trs[0], 1, 301)
	sendKeyWrites(t, trs[1], 301, 601)
	perOwner := [3]int{}
	eventually(t, "every key is on the collector the partition function names", func() error {
		perOwner = [3]int{}
		for k := uint32(1); k <= 600; k += 7 {
			o := owner(k)
			if st, v := keyWriteStatus(t, cols[o].base, k); st != "found" || v != k+1 {
				return fmt.Errorf("key %d on its owner %s: %s %d", k, names[o], st, v)
			}
			perOwner[o]++
		}
		return nil
	})
	for k := uint32(1); k <= 600; k += 37 {
		for c := range cols {
			if c == owner(k) {
				continue
			}
			if st, _ := keyWriteStatus(t, cols[c].base, k); st == "found" {
				t.Errorf("key %d found on %s, which does not own it", k, names[c])
			}
		}
	}
	t.Logf("sampled keys per collector: %v", perOwner)
	// dta query with the three collectors finds every key.
	// Named members: the set routes without asking a member that is down
	// its name.
	servers := names[0] + "=" + cols[0].base + "," + names[1] + "=" + cols[1].base + "," + names[2] + "=" + cols[2].base
	queryOK := func(k uint32) bool {
		var out strings.Builder
		code := Run(t.Context(), []string{"query", "keywrite", "--server", servers, "--key", strconv.Itoa(int(k)), "-o", "json"}, nil, &out, &strings.Builder{})
		return code == 0 && strings.Contains(out.String(), `"value_u32":`+strconv.Itoa(int(k+1)))
	}
	for k := uint32(1); k <= 600; k += 53 {
		if !queryOK(k) {
			t.Errorf("dta query --server A,B,C --key %d did not find it", k)
		}
	}

	// Phase 2: collector 2 is killed; reports keep coming; the others go on.
	cols[2].p.cmd.Process.Signal(syscall.SIGKILL)
	<-cols[2].p.done
	cols[2].p.exited = true
	sendKeyWrites(t, trs[0], 1001, 1601)
	eventually(t, "the collectors still up receive their keys while one is down", func() error {
		for k := uint32(1001); k < 1601; k += 11 {
			if o := owner(k); o != 2 {
				if st, v := keyWriteStatus(t, cols[o].base, k); st != "found" || v != k+1 {
					return fmt.Errorf("key %d on %s: %s", k, names[o], st)
				}
			}
		}
		return nil
	})
	eventually(t, "the translator sees the killed collector down", func() error {
		if up := metric(t, trHTTP[0], "", `dta_fanout_collector_up{collector="`+names[2]+`"}`); up != 0 {
			sendKeyWrites(t, trs[0], 1601, 1611) // traffic to notice the loss with
			return fmt.Errorf("collector_up = %v", up)
		}
		return nil
	})
	// Queries through the set still answer the keys whose owner is up.
	for k := uint32(1001); k < 1601; k += 29 {
		if owner(k) != 2 && !queryOK(k) {
			t.Errorf("with one collector down, key %d (owner up) was not found", k)
		}
	}

	// Phase 3: it comes back on the same RoCEv2 address; the translators
	// reconnect and its keys flow again.
	cols[2] = start(names[2])
	servers = names[0] + "=" + cols[0].base + "," + names[1] + "=" + cols[1].base + "," + names[2] + "=" + cols[2].base
	eventually(t, "the restarted collector receives its keys again", func() error {
		sendKeyWrites(t, trs[1], 2001, 2201)
		for k := uint32(2001); k < 2201; k++ {
			if owner(k) == 2 {
				if st, _ := keyWriteStatus(t, cols[2].base, k); st != "found" {
					return fmt.Errorf("key %d: %s", k, st)
				}
			}
		}
		return nil
	})
	for k := uint32(2001); k < 2201; k += 13 {
		if !queryOK(k) {
			t.Errorf("after the restart, key %d was not found through the set", k)
		}
	}
}
