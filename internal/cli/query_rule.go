package cli

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/client"
	"github.com/dta-go/dta/internal/translator/rule"
	"github.com/dta-go/dta/wire/dta"
)

// ruleEntryJSON is one entry of an Append rule as `dta query rule -o json`
// prints it.
type ruleEntryJSON struct {
	List      uint32 `json:"list"`
	Index     uint64 `json:"index"`
	Key       string `json:"key"` // hex, 0x-prefixed: the stored key bytes
	KeyLen    int    `json:"key_len"`
	Truncated bool   `json:"truncated,omitempty"`
	Aggregate uint64 `json:"aggregate"`
}

// ruleCountJSON is a counter rule's answer for one key.
type ruleCountJSON struct {
	Key   string `json:"key"`
	Count uint64 `json:"count"`
}

func newQueryRuleCmd(o *queryOptions) *cobra.Command {
	var (
		configPath string
		keys       []string
		limit      int
	)
	cmd := &cobra.Command{
		Use:   "rule NAME",
		Short: "What a translator rule found: its Append entries, or a key's count",
		Long: `rule reads the results of a translator rule (the rules: list of the
configuration; docs/API.md, "Rules") from the collector's stores.

The rule is looked up by name in --config, the file dta up or dta translator
runs with: its action says where the results are.

  append     the entries of the rule's list (or lists, when it spreads its
             entries by key), oldest first: the key that fired (as hex bytes;
             for a compat report its 4 big-endian wire bytes) and the
             aggregate (docs/PROTOCOL.md, "Rule result entries"). --key
             keeps only that key's entries (and reads only its list).
  increment  the count under each --key: the number of fires, or the sum of
             their aggregates (by: aggregate); a count-min estimate, never
             below the true one.

Keys are given as on every dta command line (42, 0x0a0b, a 5-tuple); a rule
over an Append store files each report under its list id (--key 3).`,
		Example: `  dta query rule slow-paths --config dta.yaml
  dta query rule slow-paths --config dta.yaml -o json
  dta query rule slow-paths --config dta.yaml --key tcp,10.0.0.1:5000,10.0.0.2:80
  dta query rule slow-count --config dta.yaml --key 42`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 0 {
				return usageError("--limit must not be negative")
			}
			f, err := loadConfig(configPath)
			if err != nil {
				return err
			}
			i := slices.IndexFunc(f.Rules, func(r rule.Config) bool { return r.Name == args[0] })
			if i < 0 {
				where := "the embedded defaults"
				if configPath != "" {
					where = configPath
				}
				names := make([]string, len(f.Rules))
				for j, r := range f.Rules {
					names[j] = r.Name
				}
				if len(names) == 0 {
					return usageError("rule %q: %s has no rules (give --config, the file dta up or dta translator runs with)", args[0], where)
				}
				return usageError("rule %q: not among the rules of %s (%s)", args[0], where, strings.Join(names, ", "))
			}
			rc := f.Rules[i]
			if rc.Action.Type == "increment" && len(keys) == 0 {
				return usageError("--key: rule %s counts per key: give the key(s) to read", rc.Name)
			}
			keyBytes := make([][]byte, len(keys))
			for j, k := range keys {
				pk, err := dta.ParseKey(k)
				if err != nil {
					return usageError("--key: %v", err)
				}
				keyBytes[j] = pk.Bytes
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			st, err := c.Store(ctx, rc.Action.Store)
			if err != nil {
				return o.fail(err)
			}
			out := cmd.OutOrStdout()
			switch rc.Action.Type {
			case "append":
				if st.Primitive != "append" {
					return fmt.Errorf("rule %s appends to %s, which the collector has as a %s store", rc.Name, st.Name, st.Primitive)
				}
				return queryRuleEntries(ctx, c, o, rc, st, keyBytes, limit, out, cmd.ErrOrStderr())
			case "increment":
				if st.Primitive != "keyincrement" {
					return fmt.Errorf("rule %s increments counters in %s, which the collector has as a %s store", rc.Name, st.Name, st.Primitive)
				}
				return queryRuleCounts(ctx, c, o, rc, keys, keyBytes, out)
			}
			return fmt.Errorf("rule %s: unknown action type %q", rc.Name, rc.Action.Type)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&configPath, "config", "c", "", "the configuration `file` that declares the rule (dta up --config, dta translator --config)")
	fl.StringArrayVar(&keys, "key", nil, "a `key`: its count (increment rules), or only its entries (append rules); repeat for several")
	fl.IntVar(&limit, "limit", 0, "most entries read per list, oldest first (0: every entry the list holds)")
	return cmd
}

// queryRuleEntries prints the entries of an Append rule's list(s): every
// readable entry from the oldest, page by page, those of keys only when
// keys are given.
func queryRuleEntries(ctx context.Context, c *client.Client, o *queryOptions, rc rule.Config, st client.Store, keys [][]byte, limit int, out, errw io.Writer) error {
	g := st.Geometry
	if g.EntrySize < rule.MinEntrySize {
		return fmt.Errorf("store %s has %d-byte entries, too small for rule entries (at least %d)", st.Name, g.EntrySize, rule.MinEntrySize)
	}
	var lists []uint32
	switch {
	case !rc.Action.ListByKey:
		lists = []uint32{rc.Action.List}
	case len(keys) > 0:
		for _, k := range keys {
			if l := rule.ListFor(k, g.Lists); !slices.Contains(lists, l) {
				lists = append(lists, l)
			}
		}
		slices.Sort(lists)
	default:
		for l := range g.Lists {
			lists = append(lists, l)
		}
	}
	var res []ruleEntryJSON
	var lost uint64
	for _, l := range lists {
		cur, read := client.FromOldest, 0
		for limit == 0 || read < limit {
			page := 1000
			if limit > 0 {
				page = min(page, limit-read)
			}
			r, err := c.Append(ctx, st.Name, l, cur, client.AppendOptions{Limit: page})
			if err != nil {
				return o.fail(err)
			}
			lost += r.Lost
			for _, e := range r.Entries {
				re, err := rule.ParseEntry(e.Value)
				if err != nil {
					return fmt.Errorf("store %s list %d entry %d: %w (does another writer share the list?)", st.Name, l, e.Index, err)
				}
				if len(keys) > 0 && !slices.ContainsFunc(keys, func(k []byte) bool {
					return len(k) == re.KeyLen && bytes.HasPrefix(k, re.Key)
				}) {
					continue
				}
				res = append(res, ruleEntryJSON{List: l, Index: e.Index, Key: "0x" + hex.EncodeToString(re.Key), KeyLen: re.KeyLen,
					Truncated: re.Truncated, Aggregate: re.Aggregate})
			}
			read += len(r.Entries)
			if len(r.Entries) == 0 || r.NextCursor >= r.Head {
				break
			}
			cur = client.CursorAt(r.NextCursor)
		}
	}
	if lost > 0 {
		fmt.Fprintf(errw, "dta: %d entries of rule %s were overwritten before they could be read (store %s holds the last %d per list)\n", lost, rc.Name, st.Name, g.Capacity)
	}
	if o.output == "json" {
		return queryJSONLines(out, res)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LIST\tINDEX\tKEY\tAGGREGATE")
	for _, e := range res {
		k := e.Key
		if e.Truncated {
			k += fmt.Sprintf("… (%d bytes)", e.KeyLen)
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%d\n", e.List, e.Index, k, e.Aggregate)
	}
	return tw.Flush()
}

// queryRuleCounts prints a counter rule's count under each key: the counter
// of the key's bytes (a compat key's 4 big-endian wire bytes), which is
// where the translator incremented it.
func queryRuleCounts(ctx context.Context, c *client.Client, o *queryOptions, rc rule.Config, keys []string, keyBytes [][]byte, out io.Writer) error {
	hexKeys := make([]string, len(keyBytes))
	for i, k := range keyBytes {
		hexKeys[i] = "0x" + hex.EncodeToString(k)
	}
	rs, err := c.KeyIncrementBatch(ctx, rc.Action.Store, hexKeys, 0)
	if err != nil {
		return o.fail(err)
	}
	res := make([]ruleCountJSON, len(rs))
	for i, r := range rs {
		res[i] = ruleCountJSON{Key: keys[i], Count: r.Count}
	}
	if o.output == "json" {
		return queryJSONLines(out, res)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tCOUNT")
	for _, r := range res {
		fmt.Fprintf(tw, "%s\t%d\n", r.Key, r.Count)
	}
	return tw.Flush()
}
