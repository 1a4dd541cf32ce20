package cli

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/internal/tea"
	"github.com/dta-go/dta/internal/tea/teabench"
)

type teaBenchOptions struct {
	figures []string
	output  string
	seed    uint64
	target  float64

	entries  string
	cells    []int
	loads    []string
	maxTries int

	servers   int
	keys      string
	alphas    []string
	lookups   string
	warmup    string
	cacheSize int
	hot       uint32

	rdma teaRDMAOptions
}

func newTeaBenchCmd() *cobra.Command {
	o := teaBenchOptions{}
	sc, bc := teabench.DefaultStashConfig(), teabench.DefaultBalanceConfig()
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Reproduce TEA's figures: stash vs load factor, load per server (Fig. 9a), fail-over (Fig. 10); over software RDMA: latency (Fig. 8), scale (Fig. 9b), fail-over",
		Long: `bench runs the TEA experiments over this repository's control plane
(Algorithm 1) and lookup engine (Algorithm 2) with local readers; nothing
is timed, everything is counted.

  stash     random 5-tuples inserted into tables of --entries cells with
            --cells cells per bucket; at each --loads load factor, the share
            of entries left in the SRAM stash, the smallest share any
            placement could reach (the keys' homes alone decide it), and
            the highest load with a stash ≤ --target (paper: 0.1 %, 80 K of
            80 M entries).
  balance   --keys keys over --servers servers (contiguous bucket ranges),
            looked up with Zipf(α) popularity, without and with the
            popularity cache of --cache-size entries filled from the
            count-min sketch: each server's share of the lookups, the
            busiest over the mean, and the cache's share (paper: 49 % at
            α = 0.99, Fig. 9a).
  failover  two servers, each bucket range on both; server 0 stops
            answering at 100 ms, at 200 ms it answers again and server 1
            stops (simulated clock, 100 lookups per ms, 1 ms read
            timeout): who answers, how many lookups were retried, none lost
            (Fig. 10).

Over the software RoCEv2 path (in-process responders on 127.0.0.1,
timed with the wall clock; not run unless asked for with --figure):

  latency        one server; packets of --sizes bytes parked in the
                 scratchpad (RDMA WRITE) before the lookup's one RDMA READ
                 of bucket, shadow and scratchpad: latency p10/median/p90
                 one at a time, lookups/s with --window in flight, and a
                 raw READ of the packet's size alone (Fig. 8).
  scale          the table in contiguous ranges over each of
                 --scale-servers servers: aggregate lookups/s, and a model
                 linear in servers up to --model-servers (Fig. 9b).
  failover-rdma  two servers, every range on both; server 0's responder is
                 closed at 200 ms: lookups/s per 10 ms, retries, failures
                 (Fig. 10).`,
		Example: `  dta tea bench                              # all three, about a minute
  dta tea bench --figure stash --cells 8 --entries 2^22
  dta tea bench --figure balance --alphas 0.99 -o json
  dta tea bench --figure latency,scale,failover-rdma`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTeaBench(cmd, &o) },
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&o.figures, "figure", []string{"stash", "balance", "failover"}, "experiments: stash, balance, failover; over software RDMA: latency, scale, failover-rdma")
	fl.StringVarP(&o.output, "output", "o", "table", "output `format`: table or json")
	fl.Uint64Var(&o.seed, "seed", 1, "random seed of keys, victims and workloads")
	fl.Float64Var(&o.target, "target", 0.001, "stash: the share of entries the stash may hold")
	fl.StringVar(&o.entries, "entries", "2^20", "stash: cells per table")
	fl.IntSliceVar(&o.cells, "cells", sc.Cells, "stash: cells per bucket to compare")
	loads := make([]string, len(sc.Loads))
	for i, l := range sc.Loads {
		loads[i] = strconv.FormatFloat(l, 'f', -1, 64)
	}
	fl.StringSliceVar(&o.loads, "loads", loads, "stash: load factors at which to count, increasing")
	fl.IntVar(&o.maxTries, "max-tries", sc.MaxTries, "stash: Algorithm 1's MaxTries, 1 to 65536")
	fl.IntVar(&o.servers, "servers", bc.Servers, "balance: servers")
	fl.StringVar(&o.keys, "keys", "1M", "balance: distinct keys")
	fl.StringSliceVar(&o.alphas, "alphas", []string{"0.99", "0.95", "0.90"}, "balance: Zipf skews")
	fl.StringVar(&o.lookups, "lookups", "4M", "balance: lookups counted per skew and mode")
	fl.StringVar(&o.warmup, "warmup", "1M", "balance: lookups before counting (the cache warms up)")
	fl.IntVar(&o.cacheSize, "cache-size", bc.CacheSize, "balance: entries of the cache")
	fl.Uint32Var(&o.hot, "hot-threshold", bc.HotThreshold, "balance: lookups of a key before the sketch reports it")
	o.rdma.bind(fl)
	return cmd
}

// teaBenchReport is dta tea bench's JSON.
type teaBenchReport struct {
	Stash    *teaStashReport        `json:"stash,omitempty"`
	Balance  []teabench.BalanceRow  `json:"balance,omitempty"`
	Failover []teabench.FailoverRow `json:"failover,omitempty"`
	teaRDMAReport
}

type teaStashReport struct {
	Target  float64                    `json:"target"`
	Rows    []teabench.StashRow        `json:"rows"`
	MaxLoad map[int]*teabench.StashRow `json:"max_load_within_target"` // by cells per bucket
	Config  teabench.StashConfig       `json:"config"`
}

func runTeaBench(cmd *cobra.Command, o *teaBenchOptions) error {
	if err := teaOutput(o.output); err != nil {
		return err
	}
	var rep teaBenchReport
	const figures = "stash, balance, failover, latency, scale or failover-rdma"
	if len(o.figures) == 0 {
		return usageError("--figure: none given; want %s", figures)
	}
	for _, f := range o.figures {
		if !slices.Contains([]string{"stash", "balance", "failover", "latency", "scale", "failover-rdma"}, f) {
			return usageError("--figure %q: want %s", f, figures)
		}
	}
	sc, err := o.stashConfig()
	if err != nil {
		return err
	}
	bc, err := o.balanceConfig()
	if err != nil {
		return err
	}
	if err := o.rdma.check(); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if slices.Contains(o.figures, "stash") {
		c := sc
		rows, err := teabench.StashSweep(c)
		if err != nil {
			return err
		}
		sr := &teaStashReport{Target: o.target, Rows: rows, MaxLoad: map[int]*teabench.StashRow{}, Config: c}
		for cells, r := range teabench.MaxLoadWithin(rows, o.target) {
			sr.MaxLoad[cells] = &r
		}
		rep.Stash = sr
		if o.output == "table" {
			teaStashTable(out, sr)
		}
	}
	if slices.Contains(o.figures, "balance") {
		c := bc
		rows, err := teabench.Balance(c)
		if err != nil {
			return err
		}
		rep.Balance = rows
		if o.output == "table" {
			teaBalanceTable(out, c, rows)
		}
	}
	if slices.Contains(o.figures, "failover") {
		c := teabench.DefaultFailoverConfig()
		c.Seed = o.seed
		rows, err := teabench.Failover(c)
		if err != nil {
			return err
		}
		rep.Failover = rows
		if o.output == "table" {
			teaFailoverTable(out, c, rows)
		}
	}
	table := o.output == "table"
	if slices.Contains(o.figures, "latency") {
		rows, err := teaLatency(out, &o.rdma, o.seed, table)
		if err != nil {
			return err
		}
		rep.Latency = rows
	}
	if slices.Contains(o.figures, "scale") {
		r, err := teaScale(out, &o.rdma, o.seed, table)
		if err != nil {
			return err
		}
		rep.Scale = r
	}
	if slices.Contains(o.figures, "failover-rdma") {
		r, err := teaFailoverRDMA(out, &o.rdma, o.seed, table)
		if err != nil {
			return err
		}
		rep.FailoverRDMA = r
	}
	if o.output == "json" {
		return teaJSON(out, rep)
	}
	return nil
}

// teaBenchMaxLookups bounds --lookups and --warmup: about an hour of
// lookups, counted.
const teaBenchMaxLookups = 1 << 30

// stashConfig checks the stash flags, naming them, and returns the
// experiment they ask for.
func (o *teaBenchOptions) stashConfig() (teabench.StashConfig, error) {
	c := teabench.DefaultStashConfig()
	if err := checkFloat("target", o.target, 0, 1); err != nil {
		return c, err
	}
	entries, err := teaCount("--entries", o.entries)
	if err != nil {
		return c, err
	}
	if err := checkInt("entries", entries, 16, teabench.MaxEntries); err != nil {
		return c, err
	}
	var table uint64 // the largest of the tables, one at a time
	for _, cells := range o.cells {
		if err := checkInt("cells", cells, 1, tea.MaxCells); err != nil {
			return c, err
		}
		s := tea.Spec{Buckets: max(2, entries/uint64(cells)), Cells: cells, KeySize: c.KeySize, ValueSize: c.ValueSize}
		table = max(table, s.TableSize()+8*s.Buckets) // and MinStash's count per bucket
	}
	loads, err := teaFloats("--loads", o.loads)
	if err != nil {
		return c, err
	}
	for i, l := range loads {
		if err := checkFloat("loads", l, 0, 1); err != nil || l == 0 {
			return c, usageError("--loads: %v out of range (0, 1]", l)
		}
		if i > 0 && l < loads[i-1] {
			return c, usageError("--loads: %v, want increasing values", loads)
		}
	}
	if err := teaCheckMaxTries(o.maxTries); err != nil {
		return c, err
	}
	keys := teaMul(uint64(float64(entries)*loads[len(loads)-1]), uint64(c.KeySize+teaKeySetBytes))
	if err := teaCheckMemory("--entries", fmt.Sprintf("the stash experiment over %d cells", entries), keys+table); err != nil {
		return c, err
	}
	c.Entries, c.Cells, c.Loads, c.MaxTries, c.Seed = entries, o.cells, loads, o.maxTries, o.seed
	if err := c.Validate(); err != nil {
		return c, usageError("%v", err) // the flags are checked: not reached
	}
	return c, nil
}

// balanceConfig checks the balance flags, naming them, and returns the
// experiment they ask for.
func (o *teaBenchOptions) balanceConfig() (teabench.BalanceConfig, error) {
	c := teabench.DefaultBalanceConfig()
	if err := checkInt("servers", o.servers, 1, tea.MaxServers); err != nil {
		return c, err
	}
	keys, err := teaCount("--keys", o.keys)
	if err != nil {
		return c, err
	}
	if err := checkInt("keys", keys, uint64(o.servers), teabench.MaxEntries); err != nil {
		return c, err
	}
	// The keys (and the set keeping them distinct), their Zipf
	// distribution, and the table at the experiment's load factor.
	plan, err := tea.PlanTable(keys, c.KeySize, c.ValueSize, c.Cells, c.Load, 0)
	if err != nil {
		return c, usageError("--keys: %d keys need more than 2^40 buckets", keys)
	}
	if err := teaCheckMemory("--keys", fmt.Sprintf("the balance experiment over %d keys", keys),
		teaMul(keys, uint64(c.KeySize+teaKeySetBytes+8))+plan.TableBytes); err != nil {
		return c, err
	}
	lookups, err := teaCount("--lookups", o.lookups)
	if err != nil {
		return c, err
	}
	if err := checkInt("lookups", lookups, 1, teaBenchMaxLookups); err != nil {
		return c, err
	}
	warmup, err := teaCount("--warmup", o.warmup)
	if err != nil {
		return c, err
	}
	if err := checkInt("warmup", warmup, 0, teaBenchMaxLookups); err != nil {
		return c, err
	}
	alphas, err := teaFloats("--alphas", o.alphas)
	if err != nil {
		return c, err
	}
	for _, a := range alphas {
		if err := checkFloat("alphas", a, 0, 10); err != nil {
			return c, err
		}
	}
	if err := checkInt("cache-size", o.cacheSize, 1, 1<<24); err != nil {
		return c, err
	}
	if err := checkInt("hot-threshold", o.hot, 1, math.MaxUint32); err != nil { // 0 would be the engine's default
		return c, err
	}
	c.Servers, c.Keys, c.Alphas, c.Lookups, c.Warmup = o.servers, int(keys), alphas, int(lookups), int(warmup)
	c.CacheSize, c.HotThreshold, c.Seed = o.cacheSize, o.hot, o.seed
	if err := c.Validate(); err != nil {
		return c, usageError("%v", err) // the flags are checked: not reached
	}
	return c, nil
}

func teaStashTable(w io.Writer, r *teaStashReport) {
	fmt.Fprintf(w, "Stash vs load factor: %d cells per table, MaxTries %d, random 5-tuples (seed %d)\n",
		r.Config.Entries, r.Config.MaxTries, r.Config.Seed)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "cells\tbuckets\tload\tentries\tstashed\tstash share\tfewest possible\tkicks/insert\t")
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%d\t%d\t%.3f\t%d\t%d\t%s\t%s\t%.2f\t\n", row.Cells, row.Buckets, row.Load, row.Inserted,
			row.Stashed, teaPct(row.Fraction, 4), teaPct(row.MinFraction, 4), row.KicksPerInsert)
	}
	tw.Flush()
	fmt.Fprintf(w, "Highest load with a stash ≤ %s (paper: 0.1 %%, 80 K of 80 M entries):\n", teaPct(r.Target, 3))
	for _, cells := range r.Config.Cells {
		if row := r.MaxLoad[cells]; row != nil {
			fmt.Fprintf(w, "  %2d cells per bucket: load %.3f (%s stashed)\n", cells, row.Load, teaPct(row.Fraction, 4))
		} else {
			fmt.Fprintf(w, "  %2d cells per bucket: not at any load measured\n", cells)
		}
	}
	fmt.Fprintln(w)
}

func teaBalanceTable(w io.Writer, c teabench.BalanceConfig, rows []teabench.BalanceRow) {
	fmt.Fprintf(w, "Load per server (Fig. 9a): %d servers, %d keys, %d lookups after %d to warm up, cache %d entries\n",
		c.Servers, c.Keys, c.Lookups, c.Warmup, c.CacheSize)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "α\tcache\tbusiest / mean\tcache share\tideal cache\tstash share\treads ≤\tload per server (share of all lookups)\t")
	for _, r := range rows {
		loads := make([]string, len(r.Load))
		for i, l := range r.Load {
			loads[i] = strconv.FormatFloat(100*l, 'f', 1, 64)
		}
		cache := "off"
		if r.Cache {
			cache = "on"
		}
		fmt.Fprintf(tw, "%.2f\t%s\t%.3f\t%s\t%s\t%s\t%d\t%s %%\t\n", r.Alpha, cache, r.Imbalance, teaPct(r.CacheShare, 1),
			teaPct(r.IdealCacheShare, 1), teaPct(r.StashShare, 3), r.MaxReads, strings.Join(loads, " "))
	}
	tw.Flush()
	fmt.Fprintln(w)
}

func teaFailoverTable(w io.Writer, c teabench.FailoverConfig, rows []teabench.FailoverRow) {
	fmt.Fprintf(w, "Fail-over (Fig. 10): 2 servers, 2 copies, %d lookups/ms; server 0 silent from %v, server 1 from %v; timeout %v, hold-down %v\n",
		c.Rate, c.StopFirst, c.Swap, c.Timeout, c.Holddown)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "from\tserver 0\tserver 1\tretried\tunavailable\tlongest wait\treads ≤\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%v\t%d\t%d\t%d\t%d\t%v\t%d\t\n", r.Start, r.Served[0], r.Served[1], r.Retried, r.Unavailable,
			r.MaxDelay.Round(time.Microsecond), r.MaxReads)
	}
	tw.Flush()
	fmt.Fprintln(w)
}
