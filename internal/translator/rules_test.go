package translator

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/store/storetest"
	"github.com/dta-go/dta/internal/translator/rule"
	"github.com/dta-go/dta/wire/dta"
)

// ruleCatalog opens the small default stores plus two stores for rules to
// write to: hits (Append, 4 lists of 22-byte entries, batches of 4) and
// counts (Key-Increment, N = 2).
func ruleCatalog(t testing.TB) *store.Catalog {
	t.Helper()
	cfgs := append(storetest.Configs(),
		store.Config{Name: "hits", ID: 21, Primitive: "append", Lists: 4, Capacity: 1024, EntrySize: 22, Batch: 4},
		store.Config{Name: "counts", ID: 11, Primitive: "keyincrement", Slots: 4096, Redundancy: 2},
	)
	cat := storetest.OpenConfigs(t, cfgs)
	return cat
}

// newRuleTranslator returns a translator over cat (its sink, unless sink is
// set) running rules.
func newRuleTranslator(t testing.TB, cat *store.Catalog, sink memop.Sink, mod func(*Config), rules ...rule.Config) *Translator {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Rules = rules
	if mod != nil {
		mod(&cfg)
	}
	if sink == nil {
		sink = cat
	}
	tr, err := New(cfg, cat.Descriptors(), sink, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// slowRule is the paper's SELECT flowID, path WHERE SUM(latency) > 1000,
// its answers spread over the lists of hits by key.
var slowRule = rule.Config{Name: "slow", Source: "postcard", Aggregate: "sum", Op: ">", Threshold: 1000,
	Action: rule.ActionConfig{Type: "append", Store: "hits", ListByKey: true}}

// pathDatagram returns one batch datagram holding the compat postcards of
// key's path, one hop per value.
func pathDatagram(t testing.TB, key uint32, vals ...uint32) []byte {
	t.Helper()
	var bw dta.BatchWriter
	bw.Reset(make([]byte, 0, 256), dta.Header{})
	for i, v := range vals {
		if err := bw.Add(&dta.Report{Opcode: dta.OpPostcard, Key: be32(key), Hop: uint8(i + 1), Value: be32(v)}); err != nil {
			t.Fatal(err)
		}
	}
	return bytes.Clone(bw.Bytes())
}

// datagram encodes one report.
func datagram(t testing.TB, r *dta.Report) []byte {
	t.Helper()
	b, err := dta.AppendDatagram(nil, dta.Header{}, r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ruleEntries reads every entry of the Append store name, checks that each
// is a rule entry in the list its key maps to (when byKey), and returns
// them as key (hex) → aggregate; a key found twice is an error.
func ruleEntries(t *testing.T, cat *store.Catalog, name string, byKey bool) map[string]uint64 {
	t.Helper()
	st := cat.ByName(name).Append
	spec := st.Spec()
	out := map[string]uint64{}
	for l := range spec.Lists {
		p, err := st.Poll(l, 0, int(spec.Capacity), nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range p.Count {
			e, err := rule.ParseEntry(p.Data[i*spec.EntrySize : (i+1)*spec.EntrySize])
			if err != nil {
				t.Fatalf("list %d entry %d: %v", l, p.First+uint64(i), err)
			}
			k := hex.EncodeToString(e.Key)
			if _, dup := out[k]; dup {
				t.Errorf("key %s appended twice", k)
			}
			if byKey && rule.ListFor(e.Key, spec.Lists) != l {
				t.Errorf("key %s in list %d, want list %d", k, l, rule.ListFor(e.Key, spec.Lists))
			}
			out[k] = e.Aggregate
		}
	}
	return out
}

// count reads key's count-min estimate in the Key-Increment store name.
func count(t *testing.T, cat *store.Catalog, name string, key []byte) uint64 {
	t.Helper()
	n, err := cat.ByName(name).KeyIncrement.Query(key, 0)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// hopsSumming splits sum over 5 hops.
func hopsSumming(sum uint32) []uint32 {
	v := []uint32{sum / 5, sum / 5, sum / 5, sum / 5, sum / 5}
	v[0] += sum % 5
	return v
}

func TestAPathRuleAppendsExactlyThePathsAboveItsThreshold(t *testing.T) {
	cat := ruleCatalog(t)
	tr := newRuleTranslator(t, cat, nil, nil, slowRule)
	w := tr.NewWorker()
	want := map[string]uint64{}
	const paths = 60
	for k := uint32(1); k <= paths; k++ {
		var sum uint32
		switch k % 5 {
		case 0:
			sum = 1000 // at the threshold: not slow
		case 1:
			sum = 1001 // just above
		case 2:
			sum = 5000 + k
		default:
			sum = 7 * k % 900
		}
		if sum > 1000 {
			want[hex.EncodeToString(be32(k))] = uint64(sum)
		}
		w.Handle(pathDatagram(t, k, hopsSumming(sum)...), reporter, int64(k))
	}
	tr.FlushAll() // the last partial batches of hits
	got := ruleEntries(t, cat, "hits", true)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the rule's lists hold\n%v\nwant exactly the slow paths\n%v", got, want)
	}
	st := tr.Rules()[0].Stats()
	if st.Evaluations.Load() != paths || st.Fires.Load() != uint64(len(want)) || st.Errors.Load() != 0 {
		t.Errorf("evaluations %d, fires %d, errors %d; want %d, %d, 0", st.Evaluations.Load(), st.Fires.Load(), st.Errors.Load(), paths, len(want))
	}
	// The paths themselves are written as without the rule.
	res, err := cat.ByName("postcard").Postcard.Query(be32(2), nil)
	if err != nil || !res.Complete || len(res.Hops) != 5 || res.Hops[0].Value != 1002 || res.Hops[4].Value != 1000 {
		t.Errorf("path of key 2: %+v %v, want the complete path 1002, 1000, 1000, 1000, 1000", res, err)
	}
}

func TestAPathRuleSeesPathsWrittenOutEarly(t *testing.T) {
	for _, tt := range []struct {
		name string
		mod  func(*Config)
		run  func(tr *Translator, w *Worker)
	}{
		{"an expired partial path is evaluated over its hops present", nil, func(tr *Translator, w *Worker) {
			w.Handle(pathDatagram(t, 7, 400, 400, 400), reporter, 1)
			tr.Tick(1 + int64(DefaultConfig().PostcardMaxAge))
		}},
		{"an evicted partial path is evaluated over its hops present", func(c *Config) { c.PostcardCacheEntries = 1 }, func(tr *Translator, w *Worker) {
			w.Handle(pathDatagram(t, 7, 400, 400, 400), reporter, 1)
			w.Handle(pathDatagram(t, 8, 1), reporter, 2) // takes the only entry
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cat := ruleCatalog(t)
			tr := newRuleTranslator(t, cat, nil, tt.mod, slowRule)
			w := tr.NewWorker()
			tt.run(tr, w)
			tr.FlushAll()
			got := ruleEntries(t, cat, "hits", true)
			if len(got) != 1 || got[hex.EncodeToString(be32(7))] != 1200 {
				t.Errorf("entries %v, want key 7 with the sum of its 3 hops, 1200", got)
			}
		})
	}
}

func TestAPathRuleIncrementsACounterPerKey(t *testing.T) {
	cat := ruleCatalog(t)
	byMax := rule.Config{Name: "max-latency", Source: "postcard", Aggregate: "max", Op: "ge", Threshold: 600,
		Action: rule.ActionConfig{Type: "increment", Store: "counts", By: "aggregate"}}
	full := rule.Config{Name: "full-paths", Source: "postcard", Aggregate: "count", Op: "==", Threshold: 5,
		Action: rule.ActionConfig{Type: "increment", Store: "counts"}}
	tr := newRuleTranslator(t, cat, nil, nil, byMax, full)
	w := tr.NewWorker()
	w.Handle(pathDatagram(t, 7, 1, 600, 2, 3, 4), reporter, 1)
	w.Handle(pathDatagram(t, 7, 700, 1, 2, 3, 4), reporter, 2)
	w.Handle(pathDatagram(t, 7, 599, 1, 2, 3, 4), reporter, 3) // max 599: no increment
	w.Handle(pathDatagram(t, 9, 1, 2, 3), reporter, 4)         // 3 hops, expires
	tr.FlushAll()
	// Both rules add to key 7's counters: 600 + 700 by max-latency, 3 by
	// full-paths; key 9's partial path matches neither.
	if n := count(t, cat, "counts", be32(7)); n != 1303 {
		t.Errorf("count of key 7 = %d, want 600 + 700 + 3 full paths", n)
	}
	if n := count(t, cat, "counts", be32(9)); n != 0 {
		t.Errorf("count of key 9 = %d, want 0", n)
	}
}

func TestReportRulesFireOnTheReportsOfTheirStore(t *testing.T) {
	ext := []byte("tcp-flow-key")
	for _, tt := range []struct {
		name    string
		rule    rule.Config
		reports []dta.Report
		check   func(t *testing.T, cat *store.Catalog)
	}{
		{
			name: "a Key-Increment rule appends the deltas above its threshold",
			rule: rule.Config{Name: "big", Source: "keyincrement", Op: ">=", Threshold: 100, Action: rule.ActionConfig{Type: "append", Store: "hits", List: 2}},
			reports: []dta.Report{
				{Opcode: dta.OpKeyIncrement, Redundancy: 1, Key: be32(1), Delta: 50},
				{Opcode: dta.OpKeyIncrement, Redundancy: 1, Key: be32(2), Delta: 100},
				{Opcode: dta.OpKeyIncrementExt, Redundancy: 1, Key: ext, Delta: 150},
			},
			check: func(t *testing.T, cat *store.Catalog) {
				got := ruleEntries(t, cat, "hits", false)
				want := map[string]uint64{"00000002": 100, hex.EncodeToString(ext): 150}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("entries %v, want %v", got, want)
				}
				if h, _ := cat.ByName("hits").Append.Head(2); h != 2 {
					t.Errorf("list 2 holds %d entries, want 2", h)
				}
			},
		},
		{
			name: "a Key-Write rule counts the values above its threshold",
			rule: rule.Config{Name: "high", Source: "keywrite", Op: "gt", Threshold: 0xFF, Action: rule.ActionConfig{Type: "increment", Store: "counts"}},
			reports: []dta.Report{
				{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: be32(9), Value: be32(0x10)},
				{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: be32(9), Value: be32(0x100)},
				{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: be32(9), Value: be32(0x200)},
			},
			check: func(t *testing.T, cat *store.Catalog) {
				if n := count(t, cat, "counts", be32(9)); n != 2 {
					t.Errorf("count of key 9 = %d, want 2", n)
				}
			},
		},
		{
			name: "an Append rule adds its matching entries' values under their list",
			rule: rule.Config{Name: "sevens", Source: "append", Op: "eq", Threshold: 7, Action: rule.ActionConfig{Type: "increment", Store: "counts", By: "aggregate"}},
			reports: []dta.Report{
				{Opcode: dta.OpAppend, List: 3, Value: be32(7)},
				{Opcode: dta.OpAppend, List: 3, Value: be32(8)},
				{Opcode: dta.OpAppend, List: 3, Value: be32(7)},
				{Opcode: dta.OpAppend, List: 1, Value: be32(7)},
			},
			check: func(t *testing.T, cat *store.Catalog) {
				if n := count(t, cat, "counts", be32(3)); n != 14 {
					t.Errorf("count of list 3 = %d, want 7 + 7", n)
				}
				if n := count(t, cat, "counts", be32(1)); n != 7 {
					t.Errorf("count of list 1 = %d, want 7", n)
				}
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cat := ruleCatalog(t)
			tr := newRuleTranslator(t, cat, nil, nil, tt.rule)
			w := tr.NewWorker()
			for i := range tt.reports {
				w.Handle(datagram(t, &tt.reports[i]), reporter, int64(i))
			}
			tr.FlushAll()
			tt.check(t, cat)
			st := tr.Rules()[0].Stats()
			if st.Evaluations.Load() != uint64(len(tt.reports)) || st.Errors.Load() != 0 {
				t.Errorf("evaluations %d, errors %d; want %d, 0", st.Evaluations.Load(), st.Errors.Load(), len(tt.reports))
			}
			if s := tr.Stats(); s.Dropped() != 0 {
				t.Errorf("drops %v", s.Drops)
			}
		})
	}
}

// mixedStream is datagrams of every primitive, some of which fire rules.
func mixedStream(t testing.TB) [][]byte {
	var out [][]byte
	for k := uint32(1); k <= 40; k++ {
		out = append(out,
			pathDatagram(t, k, hopsSumming(k*50)...),
			datagram(t, &dta.Report{Opcode: dta.OpKeyIncrement, Redundancy: 2, Key: be32(k), Delta: uint64(k * 10)}),
			datagram(t, &dta.Report{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: be32(k), Value: be32(k * 1000)}),
			datagram(t, &dta.Report{Opcode: dta.OpAppend, List: k % 16, Value: be32(k)}),
		)
	}
	return out
}

// everyKindOfRule is one rule per source primitive and action.
var everyKindOfRule = []rule.Config{
	slowRule,
	{Name: "path-max", Source: "postcard", Aggregate: "max", Op: ">", Threshold: 300, Action: rule.ActionConfig{Type: "increment", Store: "counts", By: "aggregate"}},
	{Name: "big-deltas", Source: "keyincrement", Op: ">", Threshold: 200, Action: rule.ActionConfig{Type: "append", Store: "hits", List: 1}},
	{Name: "high-values", Source: "keywrite", Op: "<", Threshold: 9000, Action: rule.ActionConfig{Type: "increment", Store: "counts"}},
	{Name: "append-odd", Source: "append", Op: "!=", Threshold: 4, Action: rule.ActionConfig{Type: "append", Store: "hits", ListByKey: true}},
}

func TestRulesOnlyAddOpsToTheirTargetStores(t *testing.T) {
	run := func(rules []rule.Config) *store.Catalog {
		cat := ruleCatalog(t)
		tr := newRuleTranslator(t, cat, nil, nil, rules...)
		w := tr.NewWorker()
		for i, dg := range mixedStream(t) {
			w.Handle(dg, reporter, int64(i))
		}
		tr.FlushAll()
		return cat
	}
	with, without := run(everyKindOfRule), run(nil)
	for i, s := range with.Stores() {
		a, _ := s.Region.Slice(0, s.Region.Size())
		b, _ := without.Stores()[i].Region.Slice(0, s.Region.Size())
		target := s.Name == "hits" || s.Name == "counts"
		switch {
		case !target && !bytes.Equal(a, b):
			t.Errorf("store %s differs with the rules: a rule changed what its primitive writes", s.Name)
		case target && bytes.Equal(a, b):
			t.Errorf("store %s is the same with the rules: they wrote nothing", s.Name)
		case target && !bytes.Equal(b, make([]byte, len(b))):
			t.Errorf("store %s was written without rules", s.Name)
		}
	}
}

func TestPathObserversSeeEveryPathAfterTheRules(t *testing.T) {
	cat := ruleCatalog(t)
	tr := newRuleTranslator(t, cat, nil, nil, slowRule)
	fires := tr.Rules()[0].Stats()
	var seen []string
	tr.AddPathObserver(func(p postcard.Path) {
		// The rule has already been evaluated on the path this observer sees.
		seen = append(seen, fmt.Sprintf("first %x fires=%d", p.Key, fires.Fires.Load()))
	})
	tr.AddPathObserver(func(p postcard.Path) { seen = append(seen, fmt.Sprintf("second %x", p.Key)) })
	tr.AddPathObserver(nil)
	w := tr.NewWorker()
	w.Handle(pathDatagram(t, 1, 200, 200, 200, 200, 201), reporter, 1) // 1001: fires
	w.Handle(pathDatagram(t, 2, 1, 1, 1, 1, 1), reporter, 2)
	want := "first 00000001 fires=1,second 00000001,first 00000002 fires=1,second 00000002"
	if got := strings.Join(seen, ","); got != want {
		t.Errorf("observers saw %s\nwant %s", got, want)
	}
}

func TestRulesAllocateNothingPerReportOrPath(t *testing.T) {
	cat := ruleCatalog(t)
	tr := newRuleTranslator(t, cat, nil, nil, everyKindOfRule...)
	w := tr.NewWorker()
	stream := mixedStream(t)
	for i, dg := range stream { // warm up: batches and buffers at their size
		w.Handle(dg, reporter, int64(i))
	}
	i := 0
	if n := testing.AllocsPerRun(500, func() {
		w.Handle(stream[i%len(stream)], reporter, int64(i))
		i++
	}); n != 0 {
		t.Errorf("%v allocations per datagram with rules firing", n)
	}
	if tr.Rules()[0].Stats().Fires.Load() == 0 || tr.Rules()[2].Stats().Fires.Load() == 0 || tr.Rules()[4].Stats().Fires.Load() == 0 {
		t.Error("the rules never fired: the test measured nothing")
	}
	if n := testing.AllocsPerRun(100, func() { tr.Tick(int64(i) << 30); i++ }); n != 0 {
		t.Errorf("%v allocations per Tick", n)
	}
}

// refusingSink refuses every call that holds a fetch-and-add on store.
type refusingSink struct {
	next  memop.Sink
	store uint16
}

func (s refusingSink) Apply(ops []memop.Op) error {
	for _, op := range ops {
		if op.Kind == memop.FetchAdd && op.Store == s.store {
			return errors.New("refused")
		}
	}
	return s.next.Apply(ops)
}

func TestAFailedActionIsCountedAgainstItsRule(t *testing.T) {
	cat := ruleCatalog(t)
	counts := uint16(cat.ByName("counts").Index)
	high := rule.Config{Name: "high", Source: "keywrite", Op: ">", Threshold: 0, Action: rule.ActionConfig{Type: "increment", Store: "counts"}}
	pathMax := rule.Config{Name: "path-max", Source: "postcard", Aggregate: "max", Op: ">", Threshold: 0, Action: rule.ActionConfig{Type: "increment", Store: "counts"}}
	tr := newRuleTranslator(t, cat, refusingSink{cat, counts}, nil, high, pathMax)
	w := tr.NewWorker()
	w.Handle(datagram(t, &dta.Report{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: be32(1), Value: be32(5)}), reporter, 1)
	w.Handle(pathDatagram(t, 1, 5, 5, 5, 5, 5), reporter, 2)
	for i, r := range tr.Rules() {
		st := r.Stats()
		if st.Fires.Load() != 1 || st.Errors.Load() != 1 {
			t.Errorf("rule %d: fires %d, errors %d; want 1, 1", i, st.Fires.Load(), st.Errors.Load())
		}
	}
	// The Key-Write report rode in the refused sink call: dropped, once.
	if s := tr.Stats(); s.Drops[ReasonSink] != 1 || s.Reports[dta.KeyWrite] != 0 {
		t.Errorf("drops %v, Key-Write reports %d; want 1 sink drop", s.Drops, s.Reports[dta.KeyWrite])
	}
}

func TestRuleCounterOpsAreNotCountedAsReportOps(t *testing.T) {
	cat := ruleCatalog(t)
	tr := newRuleTranslator(t, cat, nil, nil, rule.Config{Name: "all", Source: "keyincrement", Op: ">=", Threshold: 0,
		Action: rule.ActionConfig{Type: "increment", Store: "counts"}})
	w := tr.NewWorker()
	w.Handle(datagram(t, &dta.Report{Opcode: dta.OpKeyIncrement, Redundancy: 4, Key: be32(3), Delta: 5}), reporter, 1)
	if s := tr.Stats(); s.Ops != 4 {
		t.Errorf("ops %d, want the report's 4 (the store's N), not the rule's", s.Ops)
	}
	if n := count(t, cat, "counts", be32(3)); n != 1 {
		t.Errorf("count %d, want 1", n)
	}
}

func TestWorkersTickerAndRulesRunConcurrently(t *testing.T) {
	cat := ruleCatalog(t)
	// A small cache: paths of different workers evict each other, so rules
	// fire from inside Add on every worker and from Flush on the ticker.
	tr := newRuleTranslator(t, cat, nil, func(c *Config) { c.PostcardCacheEntries = 16 }, everyKindOfRule...)
	var wg sync.WaitGroup
	const workers, paths = 4, 300
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := tr.NewWorker()
			for k := range uint32(paths) {
				key := uint32(g)<<16 | k
				vals := hopsSumming(k * 7)
				// Half the hops now, half later: paths stay in the cache a while.
				w.Handle(pathDatagram(t, key, vals[:3]...), reporter, int64(k))
				w.Handle(datagram(t, &dta.Report{Opcode: dta.OpKeyIncrement, Redundancy: 2, Key: be32(key), Delta: uint64(k)}), reporter, int64(k))
			}
		}()
	}
	stop := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		for now := int64(0); ; now += int64(time.Millisecond) {
			select {
			case <-stop:
				return
			default:
				tr.Tick(now)
			}
		}
	}()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("workers did not finish: deadlock?")
	}
	close(stop)
	<-ticked
	tr.FlushAll()
	pc := tr.PostcardCache().Stats()
	written := pc.Complete.Load() + pc.Evicted.Load() + pc.Expired.Load()
	slow := tr.Rules()[0].Stats()
	if slow.Evaluations.Load() != written {
		t.Errorf("the slow rule evaluated %d paths, the cache wrote %d", slow.Evaluations.Load(), written)
	}
	if slow.Errors.Load() != 0 {
		t.Errorf("%d failed actions", slow.Errors.Load())
	}
	// Every fire of the two Append rules is one entry in hits.
	var entries uint64
	hits := cat.ByName("hits").Append
	for l := range hits.Spec().Lists {
		h, _ := hits.Head(l)
		entries += h
	}
	fires := slow.Fires.Load() + tr.Rules()[2].Stats().Fires.Load() + tr.Rules()[4].Stats().Fires.Load()
	if entries != fires {
		t.Errorf("hits holds %d entries, the append rules fired %d times", entries, fires)
	}
	if big := tr.Rules()[2].Stats(); big.Evaluations.Load() != workers*paths {
		t.Errorf("big-deltas evaluated %d reports, want %d", big.Evaluations.Load(), workers*paths)
	}
}

func TestNewRefusesRulesItCannotRun(t *testing.T) {
	cat := ruleCatalog(t)
	bad := slowRule
	bad.Action.Store = "append" // 4-byte entries
	cfg := DefaultConfig()
	cfg.Rules = []rule.Config{bad}
	_, err := New(cfg, cat.Descriptors(), cat, nil)
	if err == nil || !strings.Contains(err.Error(), `rules[0].action.store: "append" has entry_size 4`) {
		t.Fatalf("New: %v", err)
	}
	cfg.Rules[0].Op = "=>"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "rules[0].op") {
		t.Fatalf("Validate: %v", err)
	}
}

func TestAnAppendReportsKeyIsItsList(t *testing.T) {
	if got := binary.BigEndian.Uint32(rule.Key(&dta.Report{Opcode: dta.OpAppend, List: 3}, new([4]byte))); got != 3 {
		t.Errorf("key %d", got)
	}
}

func TestARulesAppendEntryKeepsItsPlaceAmongTheListsReportEntries(t *testing.T) {
	cat := ruleCatalog(t)
	tr := newRuleTranslator(t, cat, nil, nil,
		rule.Config{Name: "mark", Source: "keywrite", Op: ">=", Threshold: 0, Action: rule.ActionConfig{Type: "append", Store: "hits", List: 2}})
	entry := func(b byte) []byte { return bytes.Repeat([]byte{b}, 22) }
	// One datagram: two entries of hits' list 2, a Key-Write report whose rule
	// appends to list 2, two more entries.
	var bw dta.BatchWriter
	bw.Reset(make([]byte, 0, 512), dta.Header{})
	for _, r := range []dta.Report{
		{Opcode: dta.OpAppendExt, Store: 21, List: 2, Value: entry(0xA1)},
		{Opcode: dta.OpAppendExt, Store: 21, List: 2, Value: entry(0xA2)},
		{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: be32(9), Value: be32(5)},
		{Opcode: dta.OpAppendExt, Store: 21, List: 2, Value: entry(0xA3)},
		{Opcode: dta.OpAppendExt, Store: 21, List: 2, Value: entry(0xA4)},
	} {
		if err := bw.Add(&r); err != nil {
			t.Fatal(err)
		}
	}
	w := tr.NewWorker()
	w.Handle(bytes.Clone(bw.Bytes()), reporter, 1)
	tr.FlushAll()
	if s := tr.Stats(); s.Dropped() != 0 {
		t.Fatalf("drops %v", s.Drops)
	}
	p, err := cat.ByName("hits").Append.Poll(2, 0, 16, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range p.Count {
		e := p.Data[i*22 : (i+1)*22]
		if e[0] == 4 { // a rule entry: key length 4, then the report's key
			re, err := rule.ParseEntry(e)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, "rule:"+hex.EncodeToString(re.Key))
			continue
		}
		got = append(got, fmt.Sprintf("%X", e[0]))
	}
	if want := "[A1 A2 rule:00000009 A3 A4]"; fmt.Sprint(got) != want {
		t.Errorf("list 2 holds %v, want %s", got, want)
	}
}
