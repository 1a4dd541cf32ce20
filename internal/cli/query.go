package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/client"
	"github.com/dta-go/dta/internal/snapshot"
	"github.com/dta-go/dta/wire/dta"
)

// queryOptions are the flags every query subcommand shares.
type queryOptions struct {
	server   string
	output   string
	at       string
	replicas int
	queryAuth
}

// lookups are the reads a single collector and a set of collectors both
// answer (client.Client, client.Set).
type lookups interface {
	KeyWrite(ctx context.Context, store, key string, opt client.KeyWriteOptions) (client.KeyWriteResult, error)
	KeyWriteBatch(ctx context.Context, store string, keys []string, opt client.KeyWriteOptions) ([]client.KeyWriteResult, error)
	KeyIncrement(ctx context.Context, store, key string, n int) (client.KeyIncrementResult, error)
	KeyIncrementBatch(ctx context.Context, store string, keys []string, n int) ([]client.KeyIncrementResult, error)
	Postcard(ctx context.Context, store, key string) (client.PostcardResult, error)
	PostcardBatch(ctx context.Context, store string, keys []string) ([]client.PostcardResult, error)
	SketchEstimate(ctx context.Context, store, key string, epoch int64) (client.SketchEstimate, error)
	SketchCounters(ctx context.Context, store string, epoch int64) (client.SketchCounters, error)
}

// several reports whether --server names several collectors.
func (o *queryOptions) several() bool { return strings.Contains(o.server, ",") }

// lookups returns the client of --server, or with several collectors the
// set that routes each key to the collector owning it.
func (o *queryOptions) lookups(ctx context.Context) (lookups, error) {
	if !o.several() {
		return o.client()
	}
	if o.output != "table" && o.output != "json" {
		return nil, usageError("-o: %q is not table or json", o.output)
	}
	opts, err := o.options()
	if err != nil {
		return nil, err
	}
	if err := checkAt(o.at); err != nil {
		return nil, err
	}
	if n := len(strings.Split(o.server, ",")); o.replicas < 1 || o.replicas > n {
		return nil, usageError("--replicas: %d, want 1 to the %d collectors of --server", o.replicas, n)
	}
	set, err := client.NewSet(ctx, strings.Split(o.server, ","), o.replicas, nil, opts...)
	if err != nil {
		return nil, usageError("--server: %v", err)
	}
	if o.at != "" {
		set = set.At(o.at)
	}
	return set, nil
}

// client checks the shared flags and returns a client of the server.
func (o *queryOptions) client() (*client.Client, error) {
	if o.output != "table" && o.output != "json" {
		return nil, usageError("-o: %q is not table or json", o.output)
	}
	if o.several() {
		return nil, usageError("--server: this query reads one collector; several (A,B,C) serve keywrite, keyincrement, postcard and sketchmerge lookups")
	}
	if o.replicas != 1 {
		return nil, usageError("--replicas: %d; it goes with several collectors in --server (A,B,C)", o.replicas)
	}
	if err := checkAt(o.at); err != nil {
		return nil, err
	}
	opts, err := o.options()
	if err != nil {
		return nil, err
	}
	c, err := client.New(o.server, nil, opts...)
	if err != nil {
		return nil, usageError("--server: %v", err)
	}
	if o.at != "" {
		c = c.At(o.at)
	}
	return c, nil
}

// fail explains a failed call: the server's error as it gave it, or a
// hint when the collector cannot be reached.
func (o *queryOptions) fail(err error) error {
	var ae *client.Error
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &ae) && (ae.StatusCode == http.StatusUnauthorized || ae.StatusCode == http.StatusForbidden):
		return fmt.Errorf("%w (%s)", err, o.authHint(ae.StatusCode))
	case errors.As(err, &ae):
		return err
	case errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &oe) || errors.As(err, &ne):
		return fmt.Errorf("cannot reach the collector at %s: %w (is `dta up` or `dta collector` running? see --server)", o.server, err)
	}
	return err
}

func newQueryCmd() *cobra.Command {
	o := &queryOptions{}
	cmd := &cobra.Command{
		Use:   "query",
		Short: "Query a collector's stores",
		Long: `query asks a collector's query API (docs/API.md) what its stores hold.

Keys are given as on every dta command line:
  42                               a decimal 32-bit key (the prototype's reports)
  0x0a0b0c                         hex bytes
  tcp,10.0.0.1:5000,10.0.0.2:80    a 5-tuple (IPv6 in brackets: udp,[2001:db8::1]:53,[2001:db8::2]:53)

A collector with authentication on needs a token: --token-file FILE (the
file holds the token; chmod 600) or the environment variable DTA_TOKEN. For a
collector serving HTTPS give --server https://HOST:PORT and, unless its
certificate is signed by a CA the system trusts, --ca-file CA.pem.

--at EPOCH|TIME reads a past checkpoint instead of the live stores (a
collector started with --data-dir keeps the last history ones; dta query
epochs lists them).

--store defaults to the subcommand's primitive name, which is the name of
that primitive's default store in ` + "`dta up`" + `. -o json prints JSON for scripts
(one object per line for several keys and for --follow).`,
		Example: `  dta query stores
  dta query keywrite --key 1
  dta query keywrite --key 1 --key 2 --key 0x0a0b --n 2 --threshold 2
  dta query keyincrement --key tcp,10.0.0.1:5000,10.0.0.2:80
  dta query postcard --key 42 -o json
  dta query append --list 3
  dta query append --list 3 --follow
  dta query rule slow-paths --config dta.yaml   # what a translator rule found
  dta query epochs                          # checkpoints kept by a collector with --data-dir
  dta query keywrite --key 1 --at 10:05     # the value as it was at 10:05 today
  dta query append --list 3 --at 12         # the list as of epoch 12
  DTA_TOKEN=$(cat ~/.dta-token) dta query stores
  dta query stores --server https://collector:8040 --ca-file ca.pem --token-file ~/.dta-token`,
		Args: cobra.NoArgs,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.server, "server", "http://127.0.0.1:8040", "query API base `URL` of the collector; several collectors as [NAME=]URL,... (keys go to their owner by the partition function)")
	pf.IntVar(&o.replicas, "replicas", 1, "with several --server: how many collectors hold each key (translator.replicas); an owner that is down is replaced by the next")
	pf.StringVarP(&o.output, "output", "o", "table", "output `format`: table or json")
	pf.StringVar(&o.at, "at", "", "read the stores as they were at an `EPOCH` number or TIME (RFC 3339, or HH:MM[:SS] today) of a collector with --data-dir (dta query epochs lists them)")
	o.queryAuth.add(pf)
	cmd.AddCommand(
		newQueryStoresCmd(o),
		newQueryEpochsCmd(o),
		newQueryINTCmd(o),
		newQueryKeyWriteCmd(o),
		newQueryKeyIncrementCmd(o),
		newQueryPostcardCmd(o),
		newQueryAppendCmd(o),
		newQuerySketchCmd(o),
		newQueryRuleCmd(o),
	)
	return cmd
}

// queryKeys validates --key values locally, so that a typo is a usage error.
func queryKeys(keys []string) error {
	if len(keys) == 0 {
		return usageError("--key: give at least one key")
	}
	for _, k := range keys {
		if _, err := dta.ParseKey(k); err != nil {
			return usageError("--key: %v", err)
		}
	}
	return nil
}

// queryJSONLines prints each value as one line of JSON.
func queryJSONLines[T any](w io.Writer, vals []T) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, v := range vals {
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	return nil
}

func newQueryStoresCmd(o *queryOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "stores",
		Short:   "List the collector's stores and their geometry",
		Example: "  dta query stores\n  dta query stores -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			stores, err := c.Stores(cmd.Context())
			if err != nil {
				return o.fail(err)
			}
			out := cmd.OutOrStdout()
			if o.output == "json" {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(stores)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tID\tPRIMITIVE\tDEFAULT\tGEOMETRY\tMEMORY\tBACKING")
			for _, s := range stores {
				def := ""
				if s.Default {
					def = "yes"
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.ID, s.Primitive, def, queryGeometry(s), queryBytes(s.RegionBytes), s.Backing)
			}
			return tw.Flush()
		},
	}
}

// queryGeometry summarises a store's geometry in one cell.
func queryGeometry(s client.Store) string {
	g := s.Geometry
	switch s.Primitive {
	case "keywrite":
		return fmt.Sprintf("%d slots, %d B values, N≤%d, %s", g.Slots, g.ValueSize, g.MaxRedundancy, g.Hash)
	case "keyincrement":
		return fmt.Sprintf("%d counters, N=%d, %s", g.Slots, g.Redundancy, g.Hash)
	case "postcard":
		v := ""
		if g.MinValue != nil && g.MaxValue != nil {
			v = fmt.Sprintf(", values %d..%d", *g.MinValue, *g.MaxValue)
		}
		return fmt.Sprintf("%d chunks × %d hops, N=%d%s, %s", g.Chunks, g.Hops, g.Redundancy, v, g.Hash)
	case "append":
		return fmt.Sprintf("%d lists × %d entries of %d B, batch %d", g.Lists, g.Capacity, g.EntrySize, g.Batch)
	case "sketchmerge":
		return fmt.Sprintf("%s, %d rows × %d columns, %d epochs", g.Kind, g.Rows, g.Columns, g.Epochs)
	case "teatable":
		sp := ""
		if g.Scratchpad > 0 {
			sp = fmt.Sprintf(", scratchpads of %d B", g.Scratchpad)
		}
		return fmt.Sprintf("%d buckets × %d cells, keys %d B, values %d B%s, %s", g.Buckets, g.Cells, g.KeySize, g.ValueSize, sp, g.Hash)
	}
	return ""
}

// queryBytes formats a size in binary units.
func queryBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func newQueryKeyWriteCmd(o *queryOptions) *cobra.Command {
	var (
		store        string
		keys         []string
		n, threshold int
	)
	cmd := &cobra.Command{
		Use:   "keywrite",
		Short: "Look keys up in a Key-Write store (plurality vote over N copies)",
		Long: `keywrite reads the N copies of each key, keeps those whose checksum matches,
and answers by plurality vote: found (with the value), empty (never written,
overwritten, or fewer votes than --threshold), or conflict (copies disagree).
--n defaults to the store's maximum redundancy; querying with the N the key
was reported with gives the clearest vote counts.`,
		Example: `  dta query keywrite --key 1
  dta query keywrite --key 1 --key 2 --n 2
  dta query keywrite --store int-paths --key tcp,10.0.0.1:5000,10.0.0.2:80 --threshold 2 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.lookups(cmd.Context())
			if err != nil {
				return err
			}
			if err := queryKeys(keys); err != nil {
				return err
			}
			if n < 0 || threshold < 0 {
				return usageError("--n and --threshold must not be negative")
			}
			opt := client.KeyWriteOptions{N: n, Threshold: threshold}
			ctx := cmd.Context()
			res, err := lookup(keys,
				func(k string) (client.KeyWriteResult, error) { return c.KeyWrite(ctx, store, k, opt) },
				func(ks []string) ([]client.KeyWriteResult, error) { return c.KeyWriteBatch(ctx, store, ks, opt) })
			res, unanswered, err := answered(res, err)
			if err != nil {
				return o.fail(err)
			}
			out := cmd.OutOrStdout()
			if o.output == "json" {
				if err := queryJSONLines(out, res); err != nil {
					return err
				}
				return o.unanswered(unanswered, keys)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tSTATUS\tVALUE\tVALUE_U32\tVOTES\tCHECKS\tCOPIES")
			for _, r := range res {
				val, u := "-", "-"
				if len(r.Value) > 0 {
					val = "0x" + r.Value.String()
				}
				if r.ValueU32 != nil {
					u = strconv.FormatUint(uint64(*r.ValueU32), 10)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\n", r.Key, r.Status, val, u, r.Votes, r.Checks, r.Copies)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			return o.unanswered(unanswered, keys)
		},
	}
	f := cmd.Flags()
	f.StringVar(&store, "store", "keywrite", "store `name` or id")
	f.StringArrayVar(&keys, "key", nil, "`key` to look up (repeat for several)")
	f.IntVar(&n, "n", 0, "copies to read (0: the store's maximum)")
	f.IntVar(&threshold, "threshold", 0, "votes a value needs (0: plurality)")
	return cmd
}

func newQueryKeyIncrementCmd(o *queryOptions) *cobra.Command {
	var (
		store string
		keys  []string
		n     int
	)
	cmd := &cobra.Command{
		Use:   "keyincrement",
		Short: "Read keys' counts from a Key-Increment store (count-min over N counters)",
		Long: `keyincrement returns the minimum of each key's counters: never below the
key's true sum, above it only by what colliding keys added. Every report adds
to all N counters of the store; --n reads only the first n (default all N,
the tightest estimate).`,
		Example: `  dta query keyincrement --key 9
  dta query keyincrement --key 9 --key 10 --n 2 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.lookups(cmd.Context())
			if err != nil {
				return err
			}
			if err := queryKeys(keys); err != nil {
				return err
			}
			if n < 0 {
				return usageError("--n must not be negative")
			}
			ctx := cmd.Context()
			res, err := lookup(keys,
				func(k string) (client.KeyIncrementResult, error) { return c.KeyIncrement(ctx, store, k, n) },
				func(ks []string) ([]client.KeyIncrementResult, error) { return c.KeyIncrementBatch(ctx, store, ks, n) })
			res, unanswered, err := answered(res, err)
			if err != nil {
				return o.fail(err)
			}
			out := cmd.OutOrStdout()
			if o.output == "json" {
				if err := queryJSONLines(out, res); err != nil {
					return err
				}
				return o.unanswered(unanswered, keys)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tCOUNT\tCOPIES")
			for _, r := range res {
				fmt.Fprintf(tw, "%s\t%d\t%d\n", r.Key, r.Count, r.Copies)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			return o.unanswered(unanswered, keys)
		},
	}
	f := cmd.Flags()
	f.StringVar(&store, "store", "keyincrement", "store `name` or id")
	f.StringArrayVar(&keys, "key", nil, "`key` to look up (repeat for several)")
	f.IntVar(&n, "n", 0, "counters to read (0: all of the store's N)")
	return cmd
}

func newQueryPostcardCmd(o *queryOptions) *cobra.Command {
	var (
		store string
		keys  []string
	)
	cmd := &cobra.Command{
		Use:   "postcard",
		Short: "Read flows' paths from a Postcarding store",
		Long: `postcard decodes each flow's chunk(s) and prints its path: the value of every
hop up to the last one that reported, "-" for a hop that did not (a partial
path written early). complete means no hop is missing.`,
		Example: `  dta query postcard --key 42
  dta query postcard --key tcp,10.0.0.1:5000,10.0.0.2:80 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.lookups(cmd.Context())
			if err != nil {
				return err
			}
			if err := queryKeys(keys); err != nil {
				return err
			}
			ctx := cmd.Context()
			res, err := lookup(keys,
				func(k string) (client.PostcardResult, error) { return c.Postcard(ctx, store, k) },
				func(ks []string) ([]client.PostcardResult, error) { return c.PostcardBatch(ctx, store, ks) })
			res, unanswered, err := answered(res, err)
			if err != nil {
				return o.fail(err)
			}
			out := cmd.OutOrStdout()
			if o.output == "json" {
				if err := queryJSONLines(out, res); err != nil {
					return err
				}
				return o.unanswered(unanswered, keys)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tSTATUS\tCOMPLETE\tPATH")
			for _, r := range res {
				hops := make([]string, len(r.Hops))
				for i, h := range r.Hops {
					hops[i] = "-"
					if h.Present {
						hops[i] = strconv.FormatUint(uint64(h.Value), 10)
					}
				}
				complete := "no"
				if r.Complete {
					complete = "yes"
				}
				path := strings.Join(hops, " ")
				if path == "" {
					path, complete = "-", "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Key, r.Status, complete, path)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			return o.unanswered(unanswered, keys)
		},
	}
	f := cmd.Flags()
	f.StringVar(&store, "store", "postcard", "store `name` or id")
	f.StringArrayVar(&keys, "key", nil, "flow `key` to look up (repeat for several)")
	return cmd
}

// queryEntryJSON is one line of `dta query append --follow -o json`.
type queryEntryJSON struct {
	Index    uint64     `json:"index"`
	Value    client.Hex `json:"value"`
	ValueU32 *uint32    `json:"value_u32,omitempty"`
	Lost     uint64     `json:"lost,omitempty"`
}

func newQueryAppendCmd(o *queryOptions) *cobra.Command {
	var (
		store  string
		list   uint32
		cursor string
		limit  int
		wait   time.Duration
		follow bool
	)
	cmd := &cobra.Command{
		Use:   "append",
		Short: "Read an Append list's entries, once or as they arrive (--follow)",
		Long: `append reads entries of one list of an Append store, oldest first.

Without --follow it polls once and prints what the list holds from --cursor
(default: the oldest entry still in memory), then the cursor to poll from next.
With --follow it prints entries as they arrive until Ctrl-C (default: from
the list's current head, i.e. only new entries; --cursor oldest replays first).

--cursor is an entry index (the next_cursor of an earlier poll), oldest or
head. Entries overwritten before they could be read are reported as lost.`,
		Example: `  dta query append --list 3
  dta query append --list 3 --cursor 1200 --limit 100 -o json
  dta query append --list 3 --wait 10s      # wait for the first new entry
  dta query append --list 3 --follow
  dta query append --list 3 --cursor 0 --at 12   # the list as of epoch 12
  dta query append --store events --list 0 --follow --cursor oldest -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			if cursor == "" {
				cursor = "oldest"
				if follow {
					cursor = "head"
				}
			}
			cur, err := client.ParseCursor(cursor)
			if err != nil {
				return usageError("--cursor: %v", err)
			}
			if limit < 0 || wait < 0 {
				return usageError("--limit and --wait must not be negative")
			}
			if wait > 30*time.Second {
				return usageError("--wait: %v, at most 30s (the collector's longest long poll)", wait)
			}
			if follow {
				if cmd.Flags().Changed("limit") || cmd.Flags().Changed("wait") {
					return usageError("--limit and --wait apply to a single poll, not to --follow")
				}
				return queryFollow(cmd.Context(), c, o, store, list, cur, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			res, err := c.Append(cmd.Context(), store, list, cur, client.AppendOptions{Limit: limit, Wait: wait})
			if err != nil {
				return o.fail(err)
			}
			out := cmd.OutOrStdout()
			if o.output == "json" {
				enc := json.NewEncoder(out)
				enc.SetEscapeHTML(false)
				return enc.Encode(res)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "INDEX\tVALUE\tVALUE_U32")
			for _, e := range res.Entries {
				fmt.Fprintf(tw, "%d\t0x%s\t%s\n", e.Index, e.Value, queryU32(e.ValueU32))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%d entries; next cursor %d, head %d, lost %d\n", len(res.Entries), res.NextCursor, res.Head, res.Lost)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&store, "store", "append", "store `name` or id")
	f.Uint32Var(&list, "list", 0, "list `id`")
	f.StringVar(&cursor, "cursor", "", "where to start: an entry `index`, oldest or head (default oldest; head with --follow)")
	f.IntVar(&limit, "limit", 0, "most entries to print (0: the server's default, 1000)")
	f.DurationVar(&wait, "wait", 0, "wait up to this long for a first entry (at most 30s)")
	f.BoolVarP(&follow, "follow", "f", false, "print entries as they arrive until Ctrl-C")
	return cmd
}

func queryU32(v *uint32) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatUint(uint64(*v), 10)
}

// queryFollow streams a list's entries until ctx ends. A reset of the list
// (cursor ahead of the head) is reported and following goes on from the new
// head.
func queryFollow(ctx context.Context, c *client.Client, o *queryOptions, store string, list uint32, cur client.Cursor, out, errw io.Writer) error {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	if o.output == "table" {
		fmt.Fprintf(out, "%-20s  %-18s  %s\n", "INDEX", "VALUE", "VALUE_U32")
	}
	emit := func(e client.Entry) error {
		if e.Lost > 0 {
			fmt.Fprintf(errw, "dta: %d entries lost (overwritten before they could be read) before index %d\n", e.Lost, e.Index)
		}
		if o.output == "json" {
			return enc.Encode(queryEntryJSON{Index: e.Index, Value: e.Value, ValueU32: e.ValueU32, Lost: e.Lost})
		}
		_, err := fmt.Fprintf(out, "%-20d  %-18s  %s\n", e.Index, "0x"+e.Value.String(), queryU32(e.ValueU32))
		return err
	}
	for {
		err := c.Follow(ctx, store, list, cur, func(e client.Entry) error {
			cur = client.CursorAt(e.Index + 1)
			return emit(e)
		})
		var ae *client.Error
		switch {
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			return nil // Ctrl-C
		case errors.As(err, &ae) && ae.StatusCode == http.StatusConflict && ae.Head != nil:
			fmt.Fprintf(errw, "dta: list %d was reset (head now %d); following from there\n", list, *ae.Head)
			cur = client.CursorAt(*ae.Head)
		default:
			return o.fail(err)
		}
	}
}

// lookup queries one key with one, or several in one batch request.
func lookup[R any](keys []string, one func(string) (R, error), batch func([]string) ([]R, error)) ([]R, error) {
	if len(keys) == 1 {
		r, err := one(keys[0])
		return []R{r}, err
	}
	return batch(keys)
}

// answered takes from a batch lookup's results the keys err says none of
// their collectors could answer (a *client.UnansweredError, with a set of
// collectors one of which is down), so that the others are printed; any
// other error is returned as it is.
func answered[R any](res []R, err error) ([]R, *client.UnansweredError, error) {
	var ue *client.UnansweredError
	if !errors.As(err, &ue) {
		return res, nil, err
	}
	kept := make([]R, 0, len(res)-len(ue.Keys))
	skip := ue.Keys
	for i, r := range res {
		if len(skip) > 0 && skip[0] == i {
			skip = skip[1:]
			continue
		}
		kept = append(kept, r)
	}
	return kept, ue, nil
}

// unanswered is the error (exit 1) of a lookup some of whose keys went
// unanswered, printed after the answers of the others; nil when ue is.
func (o *queryOptions) unanswered(ue *client.UnansweredError, keys []string) error {
	if ue == nil {
		return nil
	}
	names := make([]string, len(ue.Keys))
	for i, k := range ue.Keys {
		names[i] = keys[k]
	}
	return fmt.Errorf("%d of %d keys not answered (%s; their collectors could not answer, the others are printed): %w",
		len(ue.Keys), ue.Total, strings.Join(names, ", "), o.fail(ue.Err))
}

// checkAt refuses an --at that is neither an epoch number nor a time the
// collector parses (RFC 3339, or HH:MM[:SS]); which epoch it names only
// the collector knows. "" (the live stores) passes.
func checkAt(at string) error {
	if at == "" {
		return nil
	}
	if _, err := strconv.ParseUint(at, 10, 64); err == nil {
		return nil
	}
	if _, err := snapshot.ParseAt(at, time.Now(), time.Local); err != nil {
		return usageError("--at: %v", err)
	}
	return nil
}
