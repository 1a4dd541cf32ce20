package cli

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dta-go/dta/wire/dta"
)

var upExportReady = regexp.MustCompile(`reports on udp (\S+), queries on (http://\S+) .*export to kafka`)

// exportConfig is smallConfig with a larger Append store and an export:
// section pointing at brokers.
func exportConfig(t *testing.T, brokers []string) string {
	t.Helper()
	cfg := fmt.Sprintf(`
collector:
  prefault: false
translator:
  readers: 1
  recv_buffer: 8MiB
export:
  brokers: [%s]
  format: json
  poll_interval: 10ms
  changes_interval: 100ms
  shutdown_timeout: 10s
stores:
  - {name: keywrite, id: 1, primitive: keywrite, default: true, slots: 4096, value_size: 4, redundancy: 2}
  - {name: keyincrement, id: 2, primitive: keyincrement, default: true, slots: 4096, redundancy: 2}
  - {name: postcard, id: 3, primitive: postcard, default: true, chunks: 1024, hops: 5, redundancy: 2}
  - {name: append, id: 4, primitive: append, default: true, lists: 4, capacity: 16384, entry_size: 4, batch: 4}
`, strings.Join(brokers, ", "))
	path := filepath.Join(t.TempDir(), "export.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// kafkaRecords reads topic from the start until want records arrived or
// no record came for quiet.
func kafkaRecords(t *testing.T, brokers []string, topic string, want int, quiet time.Duration) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	last := time.Now()
	for len(out) < want && time.Since(last) < quiet {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r); last = time.Now() })
	}
	return out
}

func TestUpExportsEveryAppendEntryInOrderAndEveryPathThroughABrokerKill(t *testing.T) {
	dir := t.TempDir()
	topics := []string{"dta.append", "dta.paths", "dta.changes"}
	cluster, err := kfake.NewCluster(kfake.DataDir(dir), kfake.SeedTopics(4, topics...))
	if err != nil {
		t.Fatal(err)
	}
	brokers := cluster.ListenAddrs()
	_, portStr, _ := strings.Cut(brokers[0], ":")
	port, _ := strconv.Atoi(portStr)
	defer func() { cluster.Close() }()

	m, stop := startCmd(t, upExportReady, "up", "--config", exportConfig(t, brokers), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	defer stop()
	udp, base := m[1], m[2]
	conn, err := net.Dial("udp", udp)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	send := func(r dta.Report) {
		b, err := dta.AppendDatagram(nil, dta.Header{Opcode: r.Opcode}, &r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	const perPhase = 3000
	sendAppends := func(from, to int) {
		for i := from; i < to; i++ {
			send(dta.Report{Opcode: dta.OpAppend, List: uint32(i % 4), Value: binary.BigEndian.AppendUint32(nil, uint32(i))})
			if i%200 == 0 {
				time.Sleep(time.Millisecond) // under load, not over the socket buffer
			}
		}
	}
	applied := func() float64 { return metric(t, base, "", `dta_translator_reports_total{primitive="append"}`) }
	sendAppends(0, perPhase)
	for flow := range uint32(10) {
		for hop := uint8(1); hop <= 5; hop++ {
			send(dta.Report{Opcode: dta.OpPostcard, Key: binary.BigEndian.AppendUint32(nil, 100+flow), Hop: hop,
				Value: binary.BigEndian.AppendUint32(nil, uint32(hop)*10)})
		}
	}
	eventually(t, "the first reports are applied", func() error {
		if n := applied(); n != perPhase {
			return fmt.Errorf("%v of %d applied", n, perPhase)
		}
		return nil
	})
	if recs := kafkaRecords(t, brokers, "dta.append", perPhase, 10*time.Second); len(recs) != perPhase {
		t.Fatalf("before the kill: %d Append records, want %d", len(recs), perPhase)
	}

	// The broker dies: ingest goes on, the exporter lags and retries.
	cluster.Close()
	sendAppends(perPhase, 2*perPhase)
	eventually(t, "reports are applied with the broker down", func() error {
		if n := applied(); n != 2*perPhase {
			return fmt.Errorf("%v of %d applied", n, 2*perPhase)
		}
		return nil
	})
	if lag := metric(t, base, "", "dta_export_append_lag_entries"); lag == 0 {
		t.Errorf("append lag 0 with the broker down")
	}
	if cluster, err = kfake.NewCluster(kfake.Ports(port), kfake.DataDir(dir)); err != nil {
		t.Fatal(err)
	}

	recs := kafkaRecords(t, brokers, "dta.append", 2*perPhase, 30*time.Second)
	next := map[string]uint64{}
	lastValue := map[string]int64{}
	for _, r := range recs {
		e := parseJSONRecord(t, r.Value)
		k := string(r.Key)
		idx, _ := strconv.ParseUint(e["index"], 10, 64)
		if idx < next[k] {
			continue // a resend (at least once)
		}
		if idx != next[k] {
			t.Fatalf("%s: entry %d arrived where %d was due", k, idx, next[k])
		}
		next[k]++
		v := int64(binary.BigEndian.Uint32(decodeB64(t, e["data"])))
		if old, ok := lastValue[k]; ok && v <= old {
			t.Fatalf("%s: value %d after %d: out of the order it was sent", k, v, old)
		}
		lastValue[k] = v
	}
	total := uint64(0)
	for _, n := range next {
		total += n
	}
	if total != 2*perPhase {
		t.Errorf("%d distinct Append entries consumed in order, want %d", total, 2*perPhase)
	}
	paths := kafkaRecords(t, brokers, "dta.paths", 10, 10*time.Second)
	flows := map[string]bool{}
	for _, r := range paths {
		e := parseJSONRecord(t, r.Value)
		if e["cause"] != "PATH_CAUSE_COMPLETE" || !strings.Contains(e["hops"], `"hop":5,"value":50`) {
			t.Errorf("path record %s", r.Value)
		}
		flows[string(r.Key)] = true
	}
	if len(flows) != 10 {
		t.Errorf("%d flows' paths consumed, want 10", len(flows))
	}
}

// parseJSONRecord decodes a JSON record's fields: strings unquoted, other
// values as their JSON text.
func parseJSONRecord(t *testing.T, b []byte) map[string]string {
	t.Helper()
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("record %s: %v", b, err)
	}
	out := map[string]string{}
	for k, v := range raw {
		var s string
		if json.Unmarshal(v, &s) == nil {
			out[k] = s
		} else {
			out[k] = string(v)
		}
	}
	return out
}

func decodeB64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != 4 {
		t.Fatalf("data %q: %v", s, err)
	}
	return b
}
