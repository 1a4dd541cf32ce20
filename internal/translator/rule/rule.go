package rule

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/wire/dta"
)

// MaxRules bounds the rules of one translator.
const MaxRules = 256

// Config is one rule as configured (YAML keys in the tags, under the
// top-level rules: list). Check and Compile name the offending key in every
// error, as rules[i].field.
type Config struct {
	// Name identifies the rule in metrics and in `dta query rule NAME`.
	Name string `yaml:"name"`
	// Source is the store whose paths (Postcarding) or reports (Key-Write,
	// Key-Increment, Append) the rule evaluates.
	Source string `yaml:"source"`
	// Aggregate is sum (the default), max, min or count: over the hop values
	// present in a path; for a report the aggregate is its value (count: 1).
	Aggregate string `yaml:"aggregate,omitempty"`
	// Op compares the aggregate with Threshold: >, >=, <, <=, ==, != (or
	// gt, ge, lt, le, eq, ne, which need no quotes in YAML).
	Op        string `yaml:"op"`
	Threshold uint64 `yaml:"threshold"`
	// Action is what the rule does when the comparison holds.
	Action ActionConfig `yaml:"action"`
}

// ActionConfig is a rule's action.
type ActionConfig struct {
	// Type is append (an entry to an Append store's list) or increment (a
	// Key-Increment store's counter under the key).
	Type string `yaml:"type"`
	// Store is the Append or Key-Increment store; not the rule's source.
	Store string `yaml:"store"`
	// List is the list entries go to (type append), unless ListByKey.
	List uint32 `yaml:"list"`
	// ListByKey spreads entries over the store's lists by their key
	// (ListFor): list = CRC-32C(key) mod lists.
	ListByKey bool `yaml:"list_by_key"`
	// By is what a counter is incremented by (type increment): one (the
	// default) or aggregate.
	By string `yaml:"by,omitempty"`
}

// Aggregate is how a rule reduces a path's hop values to one number.
type Aggregate uint8

// The aggregates.
const (
	Sum Aggregate = iota + 1
	Max
	Min
	Count
)

// String returns the aggregate's configuration name.
func (a Aggregate) String() string {
	switch a {
	case Sum:
		return "sum"
	case Max:
		return "max"
	case Min:
		return "min"
	case Count:
		return "count"
	}
	return "invalid"
}

// Op is a comparison of an aggregate with a threshold.
type Op uint8

// The comparisons.
const (
	GT Op = iota + 1
	GE
	LT
	LE
	EQ
	NE
)

// String returns the operator's symbol.
func (o Op) String() string {
	switch o {
	case GT:
		return ">"
	case GE:
		return ">="
	case LT:
		return "<"
	case LE:
		return "<="
	case EQ:
		return "=="
	case NE:
		return "!="
	}
	return "invalid"
}

// ActionType is what a rule does when it fires.
type ActionType uint8

// The actions.
const (
	AppendEntry ActionType = iota + 1 // an Entry to an Append store's list
	Increment                         // a Key-Increment counter under the key
)

// String returns the action's configuration name.
func (t ActionType) String() string {
	switch t {
	case AppendEntry:
		return "append"
	case Increment:
		return "increment"
	}
	return "invalid"
}

// Action is a compiled action: the target store's index in the
// translator's store table and what to write there.
type Action struct {
	Type      ActionType
	Store     uint16 // index of the target store
	StoreName string
	// AppendEntry.
	List      uint32 // the list, unless ListByKey
	ListByKey bool   // list = ListFor(key, Lists)
	Lists     uint32 // the target store's lists
	EntrySize int    // the target store's entry size
	// Increment: by the aggregate rather than by 1.
	ByAggregate bool
}

// ListOf returns the list an entry of key goes to.
func (a *Action) ListOf(key []byte) uint32 {
	if a.ListByKey {
		return ListFor(key, a.Lists)
	}
	return a.List
}

// Delta returns what a counter is incremented by for aggregate agg.
func (a *Action) Delta(agg uint64) uint64 {
	if a.ByAggregate {
		return agg
	}
	return 1
}

// Stats counts what a rule did. Fields are updated atomically.
type Stats struct {
	Evaluations atomic.Uint64 // paths or reports the rule was evaluated on
	Fires       atomic.Uint64 // evaluations whose comparison held
	Errors      atomic.Uint64 // fired actions whose ops the sink refused
}

// Rule is a compiled rule.
type Rule struct {
	Name      string
	Index     int           // position in the configured rules list
	Source    uint16        // index of the source store
	Primitive dta.Primitive // the source store's primitive
	Aggregate Aggregate
	Op        Op
	Threshold uint64
	Action    Action

	stats Stats
}

// Stats returns the rule's counters.
func (r *Rule) Stats() *Stats { return &r.stats }

// Holds reports whether aggregate v satisfies the rule's comparison.
func (r *Rule) Holds(v uint64) bool {
	t := r.Threshold
	switch r.Op {
	case GT:
		return v > t
	case GE:
		return v >= t
	case LT:
		return v < t
	case LE:
		return v <= t
	case EQ:
		return v == t
	case NE:
		return v != t
	}
	return false
}

// String renders the rule as the paper writes a query.
func (r *Rule) String() string {
	return fmt.Sprintf("%s: %s(%s) %s %d → %s %s", r.Name, strings.ToUpper(r.Aggregate.String()), r.Primitive, r.Op, r.Threshold, r.Action.Type, r.Action.StoreName)
}

// Set is the compiled rules of a translator.
type Set struct {
	rules    []*Rule   // in configuration order
	bySource [][]*Rule // by source store index
}

// Rules returns the rules in configuration order.
func (s *Set) Rules() []*Rule {
	if s == nil {
		return nil
	}
	return s.rules
}

// Len is the number of rules.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.rules)
}

// For returns the rules whose source is the store at index i (nil if none).
func (s *Set) For(i uint16) []*Rule {
	if s == nil || int(i) >= len(s.bySource) {
		return nil
	}
	return s.bySource[i]
}

// ByName returns the rule named name, or nil.
func (s *Set) ByName(name string) *Rule {
	for _, r := range s.Rules() {
		if r.Name == name {
			return r
		}
	}
	return nil
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// parsed is what Check reads from one Config.
type parsed struct {
	agg         Aggregate
	op          Op
	action      ActionType
	byAggregate bool
}

// Check validates what can be checked without the stores: names, operators,
// aggregates, action types and the fields each action allows. Compile does
// the rest. Errors name the key, as rules[i].field.
func Check(cfgs []Config) error {
	_, err := check(cfgs)
	return err
}

func check(cfgs []Config) ([]parsed, error) {
	if len(cfgs) > MaxRules {
		return nil, fmt.Errorf("rules: %d configured, at most %d", len(cfgs), MaxRules)
	}
	out := make([]parsed, len(cfgs))
	seen := make(map[string]int, len(cfgs))
	for i := range cfgs {
		c := &cfgs[i]
		p := &out[i]
		key := func(field string) string { return fmt.Sprintf("rules[%d].%s", i, field) }
		if !nameRE.MatchString(c.Name) {
			return nil, fmt.Errorf("%s: %q: want 1 to 63 of a-z, 0-9, _, ., - (starting with a letter or digit)", key("name"), c.Name)
		}
		if j, dup := seen[c.Name]; dup {
			return nil, fmt.Errorf("%s: %q is also the name of rules[%d]", key("name"), c.Name, j)
		}
		seen[c.Name] = i
		if c.Source == "" {
			return nil, fmt.Errorf("%s: empty: name the store whose paths or reports the rule evaluates", key("source"))
		}
		switch strings.ToLower(c.Aggregate) {
		case "", "sum":
			p.agg = Sum
		case "max":
			p.agg = Max
		case "min":
			p.agg = Min
		case "count":
			p.agg = Count
		default:
			return nil, fmt.Errorf("%s: %q is not one of sum, max, min, count", key("aggregate"), c.Aggregate)
		}
		switch strings.ToLower(strings.TrimSpace(c.Op)) {
		case ">", "gt":
			p.op = GT
		case ">=", "ge":
			p.op = GE
		case "<", "lt":
			p.op = LT
		case "<=", "le":
			p.op = LE
		case "==", "eq":
			p.op = EQ
		case "!=", "ne":
			p.op = NE
		case "":
			return nil, fmt.Errorf("%s: empty: want >, >=, <, <=, ==, != (quoted in YAML) or gt, ge, lt, le, eq, ne", key("op"))
		default:
			return nil, fmt.Errorf("%s: %q is not one of >, >=, <, <=, ==, != (quoted in YAML) or gt, ge, lt, le, eq, ne", key("op"), c.Op)
		}
		a := &c.Action
		if a.Store == "" {
			return nil, fmt.Errorf("%s: empty: name the Append or Key-Increment store the action writes to", key("action.store"))
		}
		switch a.Type {
		case "append":
			p.action = AppendEntry
			if a.By != "" {
				return nil, fmt.Errorf("%s: only for action type increment", key("action.by"))
			}
			if a.ListByKey && a.List != 0 {
				return nil, fmt.Errorf("%s: %d set together with list_by_key: give one of them", key("action.list"), a.List)
			}
		case "increment":
			p.action = Increment
			switch a.By {
			case "", "one":
			case "aggregate":
				p.byAggregate = true
			default:
				return nil, fmt.Errorf("%s: %q is not one or aggregate", key("action.by"), a.By)
			}
			if a.List != 0 {
				return nil, fmt.Errorf("%s: only for action type append", key("action.list"))
			}
			if a.ListByKey {
				return nil, fmt.Errorf("%s: only for action type append", key("action.list_by_key"))
			}
		case "":
			return nil, fmt.Errorf("%s: empty: want append or increment", key("action.type"))
		default:
			return nil, fmt.Errorf("%s: %q is not append or increment", key("action.type"), a.Type)
		}
	}
	return out, nil
}

// ErrNoStore is wrapped by the errors of rules naming a store that does not
// exist.
var ErrNoStore = errors.New("no such store")

// Compile checks cfgs against the translator's stores (their Index is their
// position in the slice) and compiles them. Errors name the key, as
// rules[i].field. It returns an empty Set for no rules.
func Compile(cfgs []Config, stores []store.Descriptor) (*Set, error) {
	ps, err := check(cfgs)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]int, len(stores))
	for i := range stores {
		byName[stores[i].Name] = i
	}
	find := func(i int, field, name string) (int, error) {
		j, ok := byName[name]
		if !ok {
			names := make([]string, 0, len(stores))
			for k := range byName {
				names = append(names, k)
			}
			sort.Strings(names)
			return 0, fmt.Errorf("rules[%d].%s: %w named %q (the stores are %s)", i, field, ErrNoStore, name, strings.Join(names, ", "))
		}
		return j, nil
	}
	s := &Set{rules: make([]*Rule, len(cfgs)), bySource: make([][]*Rule, len(stores))}
	for i := range cfgs {
		c, p := &cfgs[i], ps[i]
		src, err := find(i, "source", c.Source)
		if err != nil {
			return nil, err
		}
		dst, err := find(i, "action.store", c.Action.Store)
		if err != nil {
			return nil, err
		}
		if dst == src {
			return nil, fmt.Errorf("rules[%d].action.store: %q is the rule's source: an action adds to another store, never to what it reads", i, c.Action.Store)
		}
		d := &stores[dst]
		r := &Rule{
			Name: c.Name, Index: i, Source: uint16(src), Primitive: stores[src].Primitive,
			Aggregate: p.agg, Op: p.op, Threshold: c.Threshold,
			Action: Action{Type: p.action, Store: uint16(dst), StoreName: d.Name, ByAggregate: p.byAggregate},
		}
		switch p.action {
		case AppendEntry:
			if d.Primitive != dta.Append {
				return nil, fmt.Errorf("rules[%d].action.store: %q is a %v store; action type append needs an append store", i, d.Name, d.Primitive)
			}
			if d.Append.EntrySize < MinEntrySize {
				return nil, fmt.Errorf("rules[%d].action.store: %q has entry_size %d; a rule entry needs at least %d (key length 1 + key %d + aggregate 8)",
					i, d.Name, d.Append.EntrySize, MinEntrySize, MinEntrySize-entryOverhead)
			}
			if !c.Action.ListByKey && c.Action.List >= d.Append.Lists {
				return nil, fmt.Errorf("rules[%d].action.list: %d beyond the %d lists of store %q", i, c.Action.List, d.Append.Lists, d.Name)
			}
			r.Action.List, r.Action.ListByKey = c.Action.List, c.Action.ListByKey
			r.Action.Lists, r.Action.EntrySize = d.Append.Lists, d.Append.EntrySize
		case Increment:
			if d.Primitive != dta.KeyIncrement {
				return nil, fmt.Errorf("rules[%d].action.store: %q is a %v store; action type increment needs a keyincrement store", i, d.Name, d.Primitive)
			}
		}
		s.rules[i] = r
		s.bySource[src] = append(s.bySource[src], r)
	}
	return s, nil
}
