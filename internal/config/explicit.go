package config

import (
	"encoding"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/dta-go/dta/internal/store"
)

// The checks of this file read the file's YAML node tree beside File's
// type before it is decoded: the tree knows which keys the file sets, and on
// which line, which the decoded File no longer does.

// maxCheckedNodes bounds the nodes checkNodes visits (it follows aliases, so
// a small file could name many); the rest is left to the decoder and its
// own alias limits.
const maxCheckedNodes = 1 << 20

// checkNodes checks what the decoder would not name or would take silently:
// a value its type's own parser refuses (a size) or that is no duration, with
// its key and line; and an explicit zero or empty value of a key in
// zeroRefused (a key whose zero would silently mean the same as leaving it
// out). It returns nil for what it cannot read: the decoder reports that.
func checkNodes(src []byte) error {
	var doc yaml.Node
	if yaml.Unmarshal(src, &doc) != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	w := nodeWalker{budget: maxCheckedNodes}
	return w.walk(doc.Content[0], reflect.TypeFor[File](), "", "")
}

type nodeWalker struct{ budget int }

var (
	durationType        = reflect.TypeFor[time.Duration]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	yamlUnmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
)

// walk checks n, a value of type t at key (as errors name it:
// stores[2].slots) and pattern (the key without indices: stores[].slots).
func (w *nodeWalker) walk(n *yaml.Node, t reflect.Type, key, pattern string) error {
	if w.budget--; w.budget < 0 {
		return nil
	}
	line := n.Line
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return nil
		}
		n = n.Alias
	}
	if t.Kind() == reflect.Pointer {
		// A pointer's null is "unset", as leaving the key out.
		if n.ShortTag() == "!!null" {
			return nil
		}
		t = t.Elem()
	} else if tail, ok := zeroRefused[pattern]; ok {
		if what := zeroOrEmpty(n, t); what != "" {
			if tail == "" {
				tail = "the default, " + defaultAt(pattern)
			}
			return fmt.Errorf("%s (line %d): %s is refused: omit the key for %s", key, line, what, tail)
		}
	}
	if reflect.PointerTo(t).Implements(yamlUnmarshalerType) {
		return nil
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return checkScalar(n, t, key, line)
	case yaml.MappingNode:
		if t.Kind() == reflect.Struct {
			return w.mapping(n, t, key, pattern, nil)
		}
	case yaml.SequenceNode:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for i, c := range n.Content {
				if err := w.walk(c, t.Elem(), key+"["+strconv.Itoa(i)+"]", pattern+"[]"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// mapping checks the keys of the mapping n, a t, except those in skip (the
// keys of a mapping that merges n with <<, which override n's).
func (w *nodeWalker) mapping(n *yaml.Node, t reflect.Type, key, pattern string, skip map[string]bool) error {
	fields := yamlFields(t)
	set := map[string]bool{}
	for k := range skip {
		set[k] = true
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		set[n.Content[i].Value] = true
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.ShortTag() == "!!merge" {
			ms := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				ms = v.Content
			}
			for _, m := range ms {
				if m.Kind == yaml.AliasNode && m.Alias != nil {
					m = m.Alias
				}
				if w.budget--; m.Kind != yaml.MappingNode || w.budget < 0 {
					continue
				}
				if err := w.mapping(m, t, key, pattern, set); err != nil {
					return err
				}
			}
			continue
		}
		ft, ok := fields[k.Value]
		if !ok || skip[k.Value] {
			continue // an unknown key: the decoder names it
		}
		if err := w.walk(v, ft, join(key, k.Value), join(pattern, k.Value)); err != nil {
			return err
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// yamlFields maps the YAML keys of struct type t, inline structs' included,
// to their types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case !f.IsExported() || name == "-":
		case strings.Contains(opts, "inline") && f.Type.Kind() == reflect.Struct:
			for k, v := range yamlFields(f.Type) {
				out[k] = v
			}
		case name == "":
			out[strings.ToLower(f.Name)] = f.Type
		default:
			out[name] = f.Type
		}
	}
	return out
}

// checkScalar checks a scalar n of type t that the decoder would refuse
// without naming its key (a size its parser refuses) or without saying what
// it wants (a duration).
func checkScalar(n *yaml.Node, t reflect.Type, key string, line int) error {
	if n.ShortTag() == "!!null" {
		return nil
	}
	switch {
	case isInteger(t.Kind()) && n.ShortTag() == "!!float":
		// The decoder would cut 2.7 to 2: a count is a whole number.
		if f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64); err != nil || f != math.Trunc(f) {
			return fmt.Errorf("%s (line %d): %s is not a whole number", key, line, n.Value)
		}
	case t == durationType:
		var d time.Duration
		if n.Decode(&d) != nil {
			return fmt.Errorf("%s (line %d): duration %q: want a number with a unit (ns, us, ms, s, m or h), as 500ms, 10s or 0s", key, line, n.Value)
		}
	case reflect.PointerTo(t).Implements(textUnmarshalerType):
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			return fmt.Errorf("%s (line %d): %w", key, line, err)
		}
	}
	return nil
}

// isInteger reports whether k is an integer kind.
func isInteger(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Uint64
}

// zeroOrEmpty describes n ("0", `""`, "an empty value", "an empty list")
// when it decodes to t's zero or to an empty list, and returns "" otherwise
// (a value the decoder refuses included: the decoder names it).
func zeroOrEmpty(n *yaml.Node, t reflect.Type) string {
	switch {
	case n.ShortTag() == "!!null":
		return "an empty value"
	case n.Kind == yaml.SequenceNode:
		if len(n.Content) == 0 {
			return "an empty list"
		}
		return ""
	case n.Kind != yaml.ScalarNode:
		return ""
	}
	v := reflect.New(t)
	if n.Decode(v.Interface()) != nil || !v.Elem().IsZero() {
		return ""
	}
	if n.Value == "" {
		return `""`
	}
	return n.Value
}

// defaultAt returns the value default.yaml gives the key at pattern (a
// section's key: no indices), as written there.
func defaultAt(pattern string) string {
	var doc yaml.Node
	if yaml.Unmarshal(defaultYAML, &doc) != nil || len(doc.Content) == 0 {
		return "?"
	}
	n := doc.Content[0]
	for _, k := range strings.Split(pattern, ".") {
		var next *yaml.Node
		for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return "?"
		}
		n = next
	}
	if n.Kind == yaml.SequenceNode {
		vs := make([]string, len(n.Content))
		for i, c := range n.Content {
			vs[i] = c.Value
		}
		return "[" + strings.Join(vs, ", ") + "]"
	}
	return n.Value
}

// zeroRefused lists the keys whose explicit zero or empty value would
// silently mean what leaving the key out means: a file that writes one is
// refused and told what leaving it out gives (the text after "omit the key
// for "; "" for default.yaml's value). Keys where 0 or "" means something
// of its own are not listed: translator.readers (one per CPU),
// recv_buffer (the kernel's buffer), ack_port (the report's source port),
// source_rate (no limit), source_burst (source_rate), the xdp sections'
// queues (all) and tx_frames (the UDP socket), coalesce and coalesce_max
// (no pause), collector.pause and pause_max, history_max_age and
// history_max_bytes (no bound), export.changes_interval (the checkpoint
// interval), name, data_dir, int_listen, collector, rdma_local, fallback,
// int's stores and dscp keys, a store's scratchpad (none), min_value and
// max_value, http.max_streams (no streams), and lists such as
// allow_sources, open_paths, udp_ports, brokers.
var zeroRefused = func() map[string]string {
	m := map[string]string{
		"translator.batch_size": "",
		"int.initial_ttls":      "",
		"stores":                "the default stores (dta up --print-config lists them), or list the stores",
		"stores[].memory":       "a store sized by its count (slots, chunks, capacity, columns or buckets, or their default)",
		"stores[].hash":         "the default, crc32c (crc64 in a teatable store)",
		"stores[].kind":         "the default, countmin (sketchmerge stores)",
		"rules[].aggregate":     "the default, sum",
		"rules[].action.by":     "the default, one",
	}
	for _, s := range []string{"collector", "translator"} {
		for _, k := range []string{"transport", "xdp.frame_size", "xdp.frames", "xdp.rx_ring", "xdp.attach_mode", "xdp.bind_mode"} {
			m[s+"."+k] = ""
		}
	}
	for _, k := range []string{"client_id", "format", "compression", "max_in_flight", "path_queue", "poll_interval", "max_shadow_bytes", "linger", "shutdown_timeout"} {
		m["export."+k] = ""
	}
	const orMemory = "; or give memory"
	for k, v := range map[string]string{
		"slots":      fmt.Sprintf("%d (keywrite and keyincrement stores%s)", store.DefaultSlots, orMemory),
		"value_size": fmt.Sprintf("%d bytes (%d in a teatable store)", store.DefaultValueSize, store.DefaultTeaValueSize),
		"redundancy": fmt.Sprint(store.DefaultRedundancy),
		"chunks":     fmt.Sprintf("%d (postcard stores%s)", store.DefaultChunks, orMemory),
		"hops":       fmt.Sprintf("%d (postcard stores)", store.DefaultHops),
		"lists":      fmt.Sprintf("%d (append stores)", store.DefaultLists),
		"capacity":   fmt.Sprintf("%d (append stores%s)", store.DefaultCapacity, orMemory),
		"entry_size": fmt.Sprintf("%d bytes (append stores)", store.DefaultValueSize),
		"batch":      fmt.Sprintf("%d (append stores)", store.DefaultBatch),
		"rows":       fmt.Sprintf("%d (sketchmerge stores)", store.DefaultRows),
		"columns":    fmt.Sprintf("%d (sketchmerge stores%s)", store.DefaultColumns, orMemory),
		"epochs":     fmt.Sprintf("%d (sketchmerge stores)", store.DefaultEpochs),
		"buckets":    fmt.Sprintf("%d (teatable stores%s)", store.DefaultBuckets, orMemory),
		"cells":      fmt.Sprintf("%d (teatable stores)", store.DefaultCells),
		"key_size":   fmt.Sprintf("%d bytes (teatable stores)", store.DefaultKeySize),
	} {
		m["stores[]."+k] = "the default, " + v
	}
	return m
}()
