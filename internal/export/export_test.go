package export

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/store/storetest"
	"github.com/dta-go/dta/internal/translator"
	"github.com/dta-go/dta/wire/dta"
)

const (
	topicAppend  = "dta.append"
	topicPaths   = "dta.paths"
	topicChanges = "dta.changes"
)

// fixture is a catalogue, a translator writing into it and a Kafka-protocol
// broker (kfake) in the test's process.
type fixture struct {
	cat     *store.Catalog
	tr      *translator.Translator
	w       *translator.Worker
	cluster *kfake.Cluster
	mu      sync.Mutex
	logger  *slog.Logger // the exporters' (nil: discarded)
}

func newFixture(t testing.TB, lists uint32, capacity uint64, opts ...kfake.Opt) *fixture {
	t.Helper()
	cfgs := []store.Config{
		{Name: "keywrite", ID: 1, Primitive: "keywrite", Default: true, Slots: 1024, ValueSize: 4, Redundancy: 2},
		{Name: "keyincrement", ID: 2, Primitive: "keyincrement", Default: true, Slots: 1024, Redundancy: 2},
		{Name: "postcard", ID: 3, Primitive: "postcard", Default: true, Chunks: 256, Hops: 5, Redundancy: 2},
		{Name: "append", ID: 4, Primitive: "append", Default: true, Lists: lists, Capacity: capacity, EntrySize: 4, Batch: 4},
	}
	cat := storetest.OpenConfigs(t, cfgs)
	tc := translator.DefaultConfig()
	tc.AppendFlushDelay = time.Millisecond
	tr, err := translator.New(tc, cat.Descriptors(), cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{cat: cat, tr: tr, w: tr.NewWorker()}
	if opts == nil {
		opts = []kfake.Opt{kfake.SeedTopics(3, topicAppend, topicPaths, topicChanges)}
	}
	f.cluster, err = kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.cluster.Close() })
	return f
}

// report sends one report through the translator, as a datagram would.
func (f *fixture) report(t *testing.T, r dta.Report) {
	t.Helper()
	b, err := dta.AppendDatagram(nil, dta.Header{Opcode: r.Opcode}, &r)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.w.Handle(b, netip.MustParseAddrPort("127.0.0.1:9"), time.Now().UnixNano())
}

func (f *fixture) flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tr.FlushAll()
}

func key32(k uint32) []byte { return binary.BigEndian.AppendUint32(nil, k) }

// start runs an exporter over the fixture until the test ends (or the
// returned stop is called) and returns it.
func (f *fixture) start(t *testing.T, cfg Config) (*Exporter, func()) {
	t.Helper()
	if cfg.Brokers == nil {
		cfg.Brokers = f.cluster.ListenAddrs()
	}
	if cfg.Topics == (Topics{}) {
		cfg.Topics = Topics{Append: topicAppend, Paths: topicPaths, Changes: topicChanges}
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 5 * time.Millisecond
	}
	if cfg.ChangesInterval == 0 {
		cfg.ChangesInterval = 50 * time.Millisecond
	}
	cfg.Collector = "test-collector"
	e, err := New(cfg, f.cat, f.logger)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(f.tr.Stores()))
	for i, d := range f.tr.Stores() {
		names[i] = d.Name
	}
	f.tr.PostcardCache().SetObserver(e.PathObserver(names))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return e, stop
}

// consume reads topic until want records arrived or the time runs out.
func consume(t *testing.T, brokers []string, topic string, want int, within time.Duration) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var out []*kgo.Record
	for len(out) < want && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

func header(r *kgo.Record, k string) string {
	for _, h := range r.Headers {
		if h.Key == k {
			return string(h.Value)
		}
	}
	return ""
}

func TestEveryAppendEntryReachesKafkaInOrderPerList(t *testing.T) {
	for _, format := range []Format{Protobuf, JSON} {
		t.Run(string(format), func(t *testing.T) {
			f := newFixture(t, 4, 4096)
			f.start(t, Config{Format: format, Topics: Topics{Append: topicAppend}})
			const n = 2000
			for i := range n {
				f.report(t, dta.Report{Opcode: dta.OpAppend, List: uint32(i % 4), Value: binary.BigEndian.AppendUint32(nil, uint32(i))})
			}
			f.flush()
			recs := consume(t, f.cluster.ListenAddrs(), topicAppend, n, 20*time.Second)
			if len(recs) != n {
				t.Fatalf("consumed %d records, want %d", len(recs), n)
			}
			next := map[uint32]uint64{}
			partition := map[string]int32{}
			for _, r := range recs {
				e := decodeAppend(t, format, r)
				if got := header(r, "dta-schema"); got != SchemaAppendEntry {
					t.Fatalf("dta-schema header %q", got)
				}
				if string(r.Key) != "append/"+strconv.Itoa(int(e.List)) {
					t.Fatalf("record key %q for list %d", r.Key, e.List)
				}
				if p, ok := partition[string(r.Key)]; ok && p != r.Partition {
					t.Fatalf("list %d in partitions %d and %d", e.List, p, r.Partition)
				}
				partition[string(r.Key)] = r.Partition
				if e.Index != next[e.List] {
					t.Fatalf("list %d: entry %d arrived where %d was due", e.List, e.Index, next[e.List])
				}
				next[e.List]++
				// Report i went to list i%4 as its (i/4)th entry.
				if want := uint32(e.Index)*4 + e.List; binary.BigEndian.Uint32(e.Data) != want {
					t.Fatalf("list %d entry %d holds %d, want %d", e.List, e.Index, binary.BigEndian.Uint32(e.Data), want)
				}
				if e.Collector != "test-collector" || e.Store != "append" {
					t.Fatalf("record names collector %q store %q", e.Collector, e.Store)
				}
			}
		})
	}
}

// decodeAppend decodes an AppendEntry with the schema file (protobuf) or
// encoding/json.
func decodeAppend(t *testing.T, format Format, r *kgo.Record) AppendEntry {
	t.Helper()
	var e AppendEntry
	if format == JSON {
		if err := json.Unmarshal(r.Value, &e); err != nil {
			t.Fatalf("record %q: %v", r.Value, err)
		}
		return e
	}
	m := schemaMessage(t, SchemaAppendEntry, r.Value)
	e.Collector, e.Store = m["collector"].(string), m["store"].(string)
	e.List, e.Index, e.Generation = uint32(asUint(m["list"])), asUint(m["index"]), asUint(m["generation"])
	e.Data, _ = m["data"].([]byte)
	return e
}

func asUint(v any) uint64 {
	switch x := v.(type) {
	case uint32:
		return uint64(x)
	case uint64:
		return x
	case int32:
		return uint64(x)
	}
	return 0
}

func TestCompletedPathsReachKafkaKeyedByFlow(t *testing.T) {
	f := newFixture(t, 4, 256)
	f.start(t, Config{Format: JSON})
	// Flow 7: five hops of a five-hop store, values 100+hop: complete.
	for hop := 1; hop <= 5; hop++ {
		f.report(t, dta.Report{Opcode: dta.OpPostcard, Key: key32(7), Hop: uint8(hop), Value: key32(uint32(100 + hop))})
	}
	// Flow 8: hops 1 and 3 only, written out partial at the flush.
	f.report(t, dta.Report{Opcode: dta.OpPostcard, Key: key32(8), Hop: 1, Value: key32(201)})
	f.report(t, dta.Report{Opcode: dta.OpPostcard, Key: key32(8), Hop: 3, Value: key32(203)})
	f.flush()
	recs := consume(t, f.cluster.ListenAddrs(), topicPaths, 2, 20*time.Second)
	if len(recs) != 2 {
		t.Fatalf("consumed %d paths, want 2", len(recs))
	}
	got := map[string]string{}
	for _, r := range recs {
		var p struct {
			Store string `json:"store"`
			Key   []byte `json:"key"`
			Hops  []Hop  `json:"hops"`
			Cause string `json:"cause"`
		}
		if err := json.Unmarshal(r.Value, &p); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("postcard/%x", p.Key); string(r.Key) != want {
			t.Errorf("record key %q, want %q", r.Key, want)
		}
		var hops []string
		for _, h := range p.Hops {
			hops = append(hops, fmt.Sprintf("%d:%d", h.Hop, h.Value))
		}
		got[fmt.Sprintf("%x", p.Key)] = p.Cause + " " + strings.Join(hops, ",")
	}
	want := map[string]string{
		"00000007": "PATH_CAUSE_COMPLETE 1:101,2:102,3:103,4:104,5:105",
		"00000008": "PATH_CAUSE_EXPIRED 1:201,3:203",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("path of flow %s: %q, want %q", k, got[k], v)
		}
	}
}

func TestChangedSlotsAreExportedOncePerInterval(t *testing.T) {
	f := newFixture(t, 4, 256)
	f.start(t, Config{Format: Protobuf, Topics: Topics{Changes: topicChanges}})
	// One Key-Write (N=2: two slots) and one counter (N=2: two counters,
	// incremented twice in the same interval: one change each, value 5).
	f.report(t, dta.Report{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: key32(1), Value: key32(42)})
	f.report(t, dta.Report{Opcode: dta.OpKeyIncrement, Redundancy: 2, Key: key32(2), Delta: 2})
	f.report(t, dta.Report{Opcode: dta.OpKeyIncrement, Redundancy: 2, Key: key32(2), Delta: 3})
	recs := consume(t, f.cluster.ListenAddrs(), topicChanges, 4, 20*time.Second)
	if len(recs) != 4 {
		t.Fatalf("consumed %d changes, want 4", len(recs))
	}
	kw, ki := 0, 0
	for _, r := range recs {
		m := schemaMessage(t, SchemaSlotChange, r.Value)
		slot := asUint(m["slot"])
		if want := fmt.Sprintf("%s/%d", m["store"], slot); string(r.Key) != want {
			t.Errorf("record key %q, want %q", r.Key, want)
		}
		switch m["store"] {
		case "keywrite":
			kw++
			if v, _ := m["value"].([]byte); string(v) != string(key32(42)) {
				t.Errorf("Key-Write slot %d value %x, want 0000002a", slot, v)
			}
		case "keyincrement":
			ki++
			if c := asUint(m["counter"]); c != 5 {
				t.Errorf("counter slot %d: %d, want 5 (both increments in one interval)", slot, c)
			}
		}
	}
	if kw != 2 || ki != 2 {
		t.Errorf("%d Key-Write and %d Key-Increment changes, want 2 and 2", kw, ki)
	}
	// Nothing more changes: the next intervals send nothing.
	time.Sleep(200 * time.Millisecond)
	if recs := consume(t, f.cluster.ListenAddrs(), topicChanges, 5, time.Second); len(recs) != 4 {
		t.Errorf("%d changes after idle intervals, want still 4", len(recs))
	}
}

func TestAKilledBrokerNeitherStopsIngestNorLosesWhatTheRingsHold(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(t, 4, 4096, kfake.DataDir(dir), kfake.SeedTopics(3, topicAppend))
	addrs := f.cluster.ListenAddrs()
	_, portStr, _ := strings.Cut(addrs[0], ":")
	port, _ := strconv.Atoi(portStr)
	e, _ := f.start(t, Config{Brokers: addrs, Topics: Topics{Append: topicAppend}})
	send := func(from, to int) {
		for i := from; i < to; i++ {
			f.report(t, dta.Report{Opcode: dta.OpAppend, List: uint32(i % 4), Value: binary.BigEndian.AppendUint32(nil, uint32(i))})
		}
		f.flush()
	}
	send(0, 400)
	if recs := consume(t, addrs, topicAppend, 400, 20*time.Second); len(recs) != 400 {
		t.Fatalf("before the kill: consumed %d records, want 400", len(recs))
	}
	f.cluster.Close()
	// With the broker gone the translator goes on at full speed: every
	// report lands in the store.
	send(400, 2000)
	st := f.cat.ByName("append").Append
	for l := range uint32(4) {
		if h, _ := st.Head(l); h != 500 {
			t.Fatalf("list %d head %d with the broker down, want 500", l, h)
		}
	}
	time.Sleep(300 * time.Millisecond) // the exporter meets the dead broker
	if lag := e.Stats().AppendLag.Load(); lag == 0 {
		t.Errorf("append lag 0 with the broker down and 1600 entries unsent")
	}
	var err error
	f.cluster, err = kfake.NewCluster(kfake.Ports(port), kfake.DataDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	recs := consume(t, addrs, topicAppend, 2000, 60*time.Second)
	seen := map[uint32]uint64{}
	dups := 0
	for _, r := range recs {
		m := schemaMessage(t, SchemaAppendEntry, r.Value)
		list, idx := uint32(asUint(m["list"])), asUint(m["index"])
		switch {
		case idx < seen[list]:
			dups++ // at least once: a resend after the broker came back
		case idx == seen[list]:
			seen[list]++
		default:
			t.Fatalf("list %d: entry %d arrived where %d was due", list, idx, seen[list])
		}
	}
	for l := range uint32(4) {
		if seen[l] != 500 {
			t.Errorf("list %d: %d entries consumed in order, want 500", l, seen[l])
		}
	}
	t.Logf("%d records consumed, %d resent duplicates; lapped %d", len(recs), dups, e.Stats().Dropped[StreamAppend][DropLapped].Load())
}

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
