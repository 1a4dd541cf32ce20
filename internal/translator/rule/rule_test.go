package rule_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"math"
	"strings"
	"testing"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/translator/rule"
	"github.com/dta-go/dta/wire/dta"
)

// stores returns a store table with one store of each primitive, an Append
// store rule entries fit (hits, entry_size 22) and one they do not (narrow).
func stores(t *testing.T) []store.Descriptor {
	t.Helper()
	cfgs := append(store.DefaultConfigs(),
		store.Config{Name: "hits", ID: 21, Primitive: "append", Lists: 4, Capacity: 64, EntrySize: 22, Batch: 4},
		store.Config{Name: "narrow", ID: 11, Primitive: "append", Lists: 4, Capacity: 64, EntrySize: 12, Batch: 4},
		store.Config{Name: "counts", ID: 12, Primitive: "keyincrement", Slots: 1024},
	)
	ds, err := store.DescribeAll(cfgs)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// slowPaths is the paper's example: SELECT flowID, path WHERE SUM(latency) > 1000.
func slowPaths() rule.Config {
	return rule.Config{Name: "slow", Source: "postcard", Aggregate: "sum", Op: ">", Threshold: 1000,
		Action: rule.ActionConfig{Type: "append", Store: "hits", ListByKey: true}}
}

func TestCompileRefusesWhatCannotRunNamingTheKey(t *testing.T) {
	for _, tt := range []struct {
		name string
		mod  func(*rule.Config)
		want string
	}{
		{"an empty name is refused", func(c *rule.Config) { c.Name = "" }, "rules[0].name"},
		{"a name with spaces is refused", func(c *rule.Config) { c.Name = "slow paths" }, "rules[0].name"},
		{"an unknown source store is refused", func(c *rule.Config) { c.Source = "nope" }, `rules[0].source: no such store named "nope"`},
		{"an empty source is refused", func(c *rule.Config) { c.Source = "" }, "rules[0].source: empty"},
		{"an unknown aggregate is refused", func(c *rule.Config) { c.Aggregate = "avg" }, `rules[0].aggregate: "avg"`},
		{"an unknown operator is refused", func(c *rule.Config) { c.Op = "=>" }, `rules[0].op: "=>"`},
		{"a missing operator is refused", func(c *rule.Config) { c.Op = "" }, "rules[0].op: empty"},
		{"an unknown action type is refused", func(c *rule.Config) { c.Action.Type = "write" }, `rules[0].action.type: "write"`},
		{"a missing action type is refused", func(c *rule.Config) { c.Action.Type = "" }, "rules[0].action.type: empty"},
		{"an unknown action store is refused", func(c *rule.Config) { c.Action.Store = "nope" }, `rules[0].action.store: no such store named "nope"`},
		{"an append action to a Key-Write store is refused", func(c *rule.Config) { c.Action.Store = "keywrite" }, `rules[0].action.store: "keywrite" is a keywrite store`},
		{"an append action whose entry_size is too small is refused", func(c *rule.Config) { c.Action.Store = "narrow" }, `rules[0].action.store: "narrow" has entry_size 12; a rule entry needs at least 13`},
		{"an append action to a list beyond the store's is refused", func(c *rule.Config) { c.Action.ListByKey, c.Action.List = false, 4 }, "rules[0].action.list: 4 beyond the 4 lists"},
		{"a list together with list_by_key is refused", func(c *rule.Config) { c.Action.List = 1 }, "rules[0].action.list: 1 set together with list_by_key"},
		{"by on an append action is refused", func(c *rule.Config) { c.Action.By = "aggregate" }, "rules[0].action.by: only for action type increment"},
		{"an increment action to an Append store is refused", func(c *rule.Config) { c.Action = rule.ActionConfig{Type: "increment", Store: "hits"} }, `rules[0].action.store: "hits" is a append store; action type increment needs a keyincrement store`},
		{"an increment by something else is refused", func(c *rule.Config) { c.Action = rule.ActionConfig{Type: "increment", Store: "counts", By: "two"} }, `rules[0].action.by: "two"`},
		{"a list on an increment action is refused", func(c *rule.Config) { c.Action = rule.ActionConfig{Type: "increment", Store: "counts", List: 2} }, "rules[0].action.list: only for action type append"},
		{"an action on the rule's own source is refused", func(c *rule.Config) {
			c.Source, c.Action = "keyincrement", rule.ActionConfig{Type: "increment", Store: "keyincrement"}
		}, `rules[0].action.store: "keyincrement" is the rule's source`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := slowPaths()
			tt.mod(&c)
			_, err := rule.Compile([]rule.Config{c}, stores(t))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Compile: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestCompileNamesTheRuleByItsPosition(t *testing.T) {
	a, b := slowPaths(), slowPaths()
	b.Name = "other"
	b.Action.Store = "nope"
	_, err := rule.Compile([]rule.Config{a, b}, stores(t))
	if err == nil || !strings.HasPrefix(err.Error(), "rules[1].action.store") || !errors.Is(err, rule.ErrNoStore) {
		t.Fatalf("Compile: %v, want rules[1].action.store wrapping ErrNoStore", err)
	}
	b = slowPaths()
	if _, err := rule.Compile([]rule.Config{a, b}, stores(t)); err == nil || !strings.Contains(err.Error(), `rules[1].name: "slow" is also the name of rules[0]`) {
		t.Fatalf("two rules named slow: %v", err)
	}
}

func TestCompileIndexesRulesBySourceStore(t *testing.T) {
	ds := stores(t)
	ki := slowPaths()
	ki.Name, ki.Source, ki.Op = "big-increments", "keyincrement", "ge"
	ki.Action = rule.ActionConfig{Type: "increment", Store: "counts", By: "aggregate"}
	set, err := rule.Compile([]rule.Config{slowPaths(), ki}, ds)
	if err != nil {
		t.Fatal(err)
	}
	if set.Len() != 2 || set.Rules()[1].Name != "big-increments" || set.ByName("slow") != set.Rules()[0] {
		t.Fatalf("rules %v", set.Rules())
	}
	for i, d := range ds {
		got := set.For(uint16(i))
		switch d.Name {
		case "postcard":
			if len(got) != 1 || got[0].Name != "slow" || got[0].Primitive != dta.Postcard || got[0].Op != rule.GT {
				t.Errorf("rules of postcard: %v", got)
			}
		case "keyincrement":
			if len(got) != 1 || got[0].Op != rule.GE || !got[0].Action.ByAggregate || ds[got[0].Action.Store].Name != "counts" {
				t.Errorf("rules of keyincrement: %+v", got)
			}
		default:
			if got != nil {
				t.Errorf("rules of %s: %v, want none", d.Name, got)
			}
		}
	}
	if a := set.Rules()[0].Action; !a.ListByKey || a.Lists != 4 || a.EntrySize != 22 {
		t.Errorf("append action %+v", a)
	}
	var none *rule.Set
	if none.For(0) != nil || none.Len() != 0 || none.Rules() != nil {
		t.Error("a nil Set is not empty")
	}
}

func TestComparisons(t *testing.T) {
	for _, tt := range []struct {
		op               string
		below, at, above bool
	}{
		{">", false, false, true}, {"gt", false, false, true},
		{">=", false, true, true}, {"ge", false, true, true},
		{"<", true, false, false}, {"lt", true, false, false},
		{"<=", true, true, false}, {"le", true, true, false},
		{"==", false, true, false}, {"eq", false, true, false},
		{"!=", true, false, true}, {"ne", true, false, true},
	} {
		t.Run(tt.op+" holds as written", func(t *testing.T) {
			c := slowPaths()
			c.Op = tt.op
			set, err := rule.Compile([]rule.Config{c}, stores(t))
			if err != nil {
				t.Fatal(err)
			}
			r := set.Rules()[0]
			if got := [3]bool{r.Holds(999), r.Holds(1000), r.Holds(1001)}; got != [3]bool{tt.below, tt.at, tt.above} {
				t.Errorf("999, 1000, 1001 %s 1000: %v, want %v", tt.op, got, [3]bool{tt.below, tt.at, tt.above})
			}
		})
	}
}

func TestPathAggregatesSeeOnlyTheHopsPresent(t *testing.T) {
	vals := [hashing.MaxHops]uint32{100, 7, 300, math.MaxUint32, 50, 9, 9, 9}
	for _, tt := range []struct {
		name    string
		agg     string
		present uint8
		want    uint64
	}{
		{"sum adds the hops present", "sum", 0b11111, 100 + 7 + 300 + math.MaxUint32 + 50},
		{"sum skips a missing hop", "sum", 0b10101, 100 + 300 + 50},
		{"max is the largest hop present", "max", 0b11111, math.MaxUint32},
		{"max skips a missing hop", "max", 0b00011, 100},
		{"min is the smallest hop present", "min", 0b11111, 7},
		{"min skips a missing hop", "min", 0b10101, 50},
		{"count counts the hops present", "count", 0b10101, 3},
		{"every aggregate of no hops is 0 (sum)", "sum", 0, 0},
		{"every aggregate of no hops is 0 (min)", "min", 0, 0},
		{"an 8-hop path is summed whole", "sum", 0xFF, 100 + 7 + 300 + math.MaxUint32 + 50 + 27},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := slowPaths()
			c.Aggregate = tt.agg
			set, err := rule.Compile([]rule.Config{c}, stores(t))
			if err != nil {
				t.Fatal(err)
			}
			if got := set.Rules()[0].PathAggregate(&vals, tt.present); got != tt.want {
				t.Errorf("%s over %08b = %d, want %d", tt.agg, tt.present, got, tt.want)
			}
		})
	}
}

func TestAReportsAggregateIsItsValue(t *testing.T) {
	for _, tt := range []struct {
		name  string
		value []byte
		want  uint64
	}{
		{"a 4-byte value is big-endian", []byte{0, 0, 1, 2}, 258},
		{"a 1-byte value is itself", []byte{200}, 200},
		{"an 8-byte value is a uint64", []byte{1, 0, 0, 0, 0, 0, 0, 0}, 1 << 56},
		{"a longer value with zero leading bytes is its last 8", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 5}, 5},
		{"a longer value that does not fit saturates", []byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 5}, math.MaxUint64},
		{"an empty value is 0", nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := rule.ReportValue(tt.value); got != tt.want {
				t.Errorf("ReportValue(%x) = %d, want %d", tt.value, got, tt.want)
			}
		})
	}
	c := slowPaths()
	c.Aggregate = "count"
	set, _ := rule.Compile([]rule.Config{c}, stores(t))
	if got := set.Rules()[0].ReportAggregate(77); got != 1 {
		t.Errorf("count of one report = %d, want 1", got)
	}
}

func TestRuleEntriesHaveTheDocumentedLayout(t *testing.T) {
	for _, tt := range []struct {
		name string
		size int
		key  string // hex
		agg  uint64
		want string // hex, as docs/PROTOCOL.md shows it
	}{
		{"a 4-byte key is zero-padded", 16, "0000002a", 1234,
			"04" + "0000002a000000" + "00000000000004d2"},
		{"a 13-byte 5-tuple fills a 22-byte entry", 22, "0a0000010a00000213880050" + "06", 1 << 40,
			"0d" + "0a0000010a0000021388005006" + "0000010000000000"},
		{"a longer key is truncated but its length kept", 13, "0a0000010a00000213880050" + "06", 7,
			"0d" + "0a000001" + "0000000000000007"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			key, _ := hex.DecodeString(tt.key)
			b := bytes.Repeat([]byte{0xEE}, tt.size) // stale bytes must not survive
			rule.PutEntry(b, key, tt.agg)
			if got := hex.EncodeToString(b); got != tt.want {
				t.Fatalf("entry %s, want %s", got, tt.want)
			}
			e, err := rule.ParseEntry(b)
			if err != nil {
				t.Fatal(err)
			}
			trunc := len(key) > tt.size-9
			if e.KeyLen != len(key) || e.Truncated != trunc || e.Aggregate != tt.agg || !bytes.HasPrefix(key, e.Key) || (!trunc && !bytes.Equal(e.Key, key)) {
				t.Errorf("ParseEntry = %+v, want key %x (truncated %v), aggregate %d", e, key, trunc, tt.agg)
			}
		})
	}
	for _, bad := range [][]byte{make([]byte, 12), make([]byte, 16), append([]byte{65}, make([]byte, 15)...)} {
		if _, err := rule.ParseEntry(bad); !errors.Is(err, rule.ErrEntry) {
			t.Errorf("ParseEntry(%x): %v, want ErrEntry", bad, err)
		}
	}
}

func TestListForIsCRC32COfTheKeyModLists(t *testing.T) {
	tab := crc32.MakeTable(crc32.Castagnoli)
	for _, k := range []string{"0000002a", "0a0000010a0000021388005006", "ff"} {
		key, _ := hex.DecodeString(k)
		for _, lists := range []uint32{1, 4, 7, 1 << 20} {
			if got, want := rule.ListFor(key, lists), crc32.Checksum(key, tab)%lists; got != want {
				t.Errorf("ListFor(%s, %d) = %d, want %d", k, lists, got, want)
			}
		}
	}
}

func TestAReportsKeyIsItsWireKeyOrItsList(t *testing.T) {
	var buf [4]byte
	kw := dta.Report{Opcode: dta.OpKeyWrite, Key: []byte{0, 0, 0, 42}}
	if got := rule.Key(&kw, &buf); !bytes.Equal(got, []byte{0, 0, 0, 42}) {
		t.Errorf("compat key %x", got)
	}
	al := dta.Report{Opcode: dta.OpAppendExt, List: 0x01020304}
	if got := rule.Key(&al, &buf); !bytes.Equal(got, []byte{1, 2, 3, 4}) {
		t.Errorf("append key %x, want its list", got)
	}
}
