package export

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/store/storetest"
	"github.com/dta-go/dta/wire/dta"
)

// logBuffer collects log lines (JSON), safe for the exporter's goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the lines whose msg starts with prefix, decoded.
func (l *logBuffer) lines(prefix string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(l.b.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && strings.HasPrefix(m["msg"].(string), prefix) {
			out = append(out, m)
		}
	}
	return out
}

// eventually waits up to d for cond.
func eventually(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// sendPath makes the translator write out one complete five-hop path.
func (f *fixture) sendPath(t *testing.T, flow uint32) {
	t.Helper()
	for hop := 1; hop <= 5; hop++ {
		f.report(t, dta.Report{Opcode: dta.OpPostcard, Key: key32(flow), Hop: uint8(hop), Value: key32(uint32(100 + hop))})
	}
}

func TestAPathTheBrokersRefuseIsQueuedAgainOrCountedAsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before prepares the paths topic; after runs once the first send
		// failed.
		before, after      func(t *testing.T, c *kfake.Cluster)
		delivered, refused uint64
		then               string // what the log line says happens
	}{
		{"a topic that is missing, then created: queued again and delivered", nil, func(t *testing.T, c *kfake.Cluster) {
			if err := c.CreateTopic(topicPaths, 1, nil); err != nil {
				t.Fatal(err)
			}
		}, 1, 0, "queued again"},
		{"a record the topic will never take: dropped as refused", func(t *testing.T, c *kfake.Cluster) {
			if err := c.CreateTopic(topicPaths, 1, map[string]string{"max.message.bytes": "16"}); err != nil {
				t.Fatal(err)
			}
		}, nil, 0, 1, `reason="refused"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 2, 64, kfake.SeedTopics(1, topicAppend))
			logs := &logBuffer{}
			f.logger = slog.New(slog.NewJSONHandler(logs, nil))
			if tc.before != nil {
				tc.before(t, f.cluster)
			}
			e, _ := f.start(t, Config{Topics: Topics{Paths: topicPaths}})
			f.sendPath(t, 7)
			st := e.Stats()
			if !eventually(20*time.Second, func() bool { return st.Errors[StreamPaths].Load() > 0 }) {
				t.Fatal("the brokers never refused the path")
			}
			if tc.after != nil {
				tc.after(t, f.cluster)
			}
			ok := eventually(20*time.Second, func() bool {
				return st.Records[StreamPaths].Load() == tc.delivered && st.Dropped[StreamPaths][DropRefused].Load() == tc.refused &&
					st.PathQueue.Load() == 0 && st.InFlight.Load() == 0
			})
			if !ok {
				t.Errorf("%d paths delivered, %d dropped as refused, %d queued, %d in flight: want %d, %d, 0 and 0",
					st.Records[StreamPaths].Load(), st.Dropped[StreamPaths][DropRefused].Load(), st.PathQueue.Load(), st.InFlight.Load(),
					tc.delivered, tc.refused)
			}
			if n := st.Dropped[StreamPaths][DropQueueFull].Load(); n != 0 {
				t.Errorf("%d paths dropped as queue_full", n)
			}
			if tc.delivered > 0 {
				if recs := consume(t, f.cluster.ListenAddrs(), topicPaths, 2, 2*time.Second); len(recs) != 1 {
					t.Errorf("consumed %d paths, want 1", len(recs))
				}
			}
			lines := logs.lines("kafka did not take records")
			if len(lines) == 0 || lines[0]["stream"] != "paths" || !strings.Contains(lines[0]["then"].(string), tc.then) {
				t.Errorf("log lines %v, want one for stream paths saying %q", lines, tc.then)
			}
		})
	}
}

func TestAnUnreachableBrokerOrAWrongPasswordIsCountedAndLoggedWithNothingToSend(t *testing.T) {
	closedPort := func(t *testing.T) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return addr
	}
	srvTLS, _ := selfSigned(t)
	for _, tc := range []struct {
		name   string
		opts   []kfake.Opt
		cfg    func(t *testing.T) Config
		kill   bool // kill the broker once a record went through
		reason BrokerError
	}{
		{"a host that does not resolve", nil, func(t *testing.T) Config {
			return Config{Brokers: []string{"no-such-broker.invalid:9092"}}
		}, false, BrokerConnect},
		{"a closed port", nil, func(t *testing.T) Config {
			return Config{Brokers: []string{closedPort(t)}}
		}, false, BrokerConnect},
		{"a broker killed after a record went through", nil, func(t *testing.T) Config {
			return Config{}
		}, true, BrokerConnect},
		{"a certificate the exporter does not trust", []kfake.Opt{kfake.TLS(srvTLS)}, func(t *testing.T) Config {
			return Config{TLS: TLSConfig{Enabled: true}}
		}, false, BrokerTLS},
		{"a wrong SASL password", []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("PLAIN", "dta", "right")}, func(t *testing.T) Config {
			return Config{SASL: SASLConfig{Mechanism: "PLAIN", Username: "dta", PasswordFile: passwordFile(t, "wrong", 0o600)}}
		}, false, BrokerAuth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(d time.Duration) { probeEvery = d }(probeEvery)
			probeEvery = 50 * time.Millisecond
			f := newFixture(t, 2, 64, append(tc.opts, kfake.SeedTopics(1, topicAppend))...)
			logs := &logBuffer{}
			f.logger = slog.New(slog.NewJSONHandler(logs, nil))
			cfg := tc.cfg(t)
			cfg.Topics, cfg.ShutdownTimeout = Topics{Append: topicAppend}, 100*time.Millisecond
			e, stop := f.start(t, cfg)
			defer stop()
			st := e.Stats()
			if tc.kill {
				f.appendValues(t, 1)
				if !eventually(10*time.Second, func() bool { return st.LastAck.Load() != 0 }) {
					t.Fatal("the record never went through")
				}
				f.cluster.Close()
			}
			// Nothing (more) to send: the probe finds the broker gone.
			if !eventually(10*time.Second, func() bool { return st.BrokerErrors[tc.reason].Load() >= 3 }) {
				t.Fatalf("broker errors %v, want at least 3 %s", brokerErrors(st), tc.reason)
			}
			for r := range NumBrokerErrors {
				if r != tc.reason && r != BrokerRequest && st.BrokerErrors[r].Load() != 0 {
					t.Errorf("broker errors %v: %s counted too (%v)", brokerErrors(st), r, logs.lines("kafka"))
				}
			}
			// Failed several times, logged once (rate limited), naming the
			// broker and the reason.
			var ours []map[string]any
			for _, l := range logs.lines("kafka broker") {
				if l["reason"] == tc.reason.String() {
					ours = append(ours, l)
				}
			}
			if len(ours) != 1 || ours[0]["level"] != "WARN" || ours[0]["broker"] == "" || ours[0]["err"] == "" {
				t.Errorf("log lines %v, want one WARN naming the broker, the reason %s and the error", ours, tc.reason)
			}
		})
	}
}

func brokerErrors(st *Stats) map[string]uint64 {
	m := map[string]uint64{}
	for r := range NumBrokerErrors {
		m[r.String()] = st.BrokerErrors[r].Load()
	}
	return m
}

func TestExportStoresRefusesAStoreNoStreamCarries(t *testing.T) {
	cat := storetest.OpenConfigs(t, []store.Config{
		{Name: "append", ID: 1, Primitive: "append", Default: true, Lists: 2, Capacity: 64, EntrySize: 4, Batch: 4},
		{Name: "sketch", ID: 2, Primitive: "sketchmerge", Default: true, Rows: 3, Columns: 256, Epochs: 3},
	})
	for _, tc := range []struct {
		name   string
		stores []string
		want   string // "" = accepted
	}{
		{"an Append store is accepted", []string{"append"}, ""},
		{"a Sketch-Merge store is refused by name", []string{"append", "sketch"}, `stores: "sketch" is a Sketch-Merge store`},
		{"a store that does not exist is refused by name", []string{"nope"}, `stores: "nope" is not a configured store`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(Config{Brokers: []string{"127.0.0.1:9"}, Topics: Topics{Append: topicAppend}, Stores: tc.stores}, cat, nil)
			if e != nil {
				e.cl.Close()
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "export")):
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestChangedSlotsCoalesceWhileTheBrokersAreGone(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(t, 2, 64, kfake.DataDir(dir), kfake.SeedTopics(1, topicChanges))
	addrs := f.cluster.ListenAddrs()
	_, portStr, _ := strings.Cut(addrs[0], ":")
	port, _ := strconv.Atoi(portStr)
	e, _ := f.start(t, Config{Brokers: addrs, Topics: Topics{Changes: topicChanges}, ChangesInterval: 20 * time.Millisecond})
	incr := func() {
		f.report(t, dta.Report{Opcode: dta.OpKeyIncrement, Redundancy: 2, Key: key32(2), Delta: 1})
	}
	incr()
	if recs := consume(t, addrs, topicChanges, 2, 20*time.Second); len(recs) != 2 {
		t.Fatalf("consumed %d changes before the broker went, want 2 (one per counter)", len(recs))
	}
	f.cluster.Close()
	// Ten increments, each in its own interval, with the broker gone and
	// max_in_flight far from full.
	for range 10 {
		incr()
		time.Sleep(60 * time.Millisecond)
	}
	var err error
	if f.cluster, err = kfake.NewCluster(kfake.Ports(port), kfake.DataDir(dir)); err != nil {
		t.Fatal(err)
	}
	// 2 before, then per counter the change in flight when the broker
	// went and the newest: 6, and nothing more after a while.
	consume(t, addrs, topicChanges, 6, 40*time.Second)
	time.Sleep(200 * time.Millisecond)
	recs := consume(t, addrs, topicChanges, 100, time.Second)
	perSlot := map[uint64][]uint64{}
	for _, r := range recs[2:] {
		m := schemaMessage(t, SchemaSlotChange, r.Value)
		perSlot[asUint(m["slot"])] = append(perSlot[asUint(m["slot"])], asUint(m["counter"]))
	}
	if len(perSlot) != 2 {
		t.Fatalf("changes of %d slots after the broker came back, want 2: %v", len(perSlot), perSlot)
	}
	for slot, vals := range perSlot {
		if len(vals) > 2 || vals[len(vals)-1] != 11 {
			t.Errorf("slot %d: changes %v, want at most 2 (the one in flight when the broker went, then the newest) ending with 11", slot, vals)
		}
	}
	t.Logf("changes after the broker came back: %v (%d intervals run in all)", perSlot, e.Stats().Intervals.Load())
}
