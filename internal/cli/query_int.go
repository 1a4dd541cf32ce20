package cli

import (
	"encoding/hex"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/client"
	"github.com/dta-go/dta/internal/intmap"
	"github.com/dta-go/dta/wire/dta"
)

func newQueryINTCmd(o *queryOptions) *cobra.Command {
	d := intmap.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "int",
		Short: "Ask what INT telemetry reports said: paths, hop latencies, drops",
		Long: `int answers in INT terms from the stores INT telemetry reports are mapped
into (translator.int_listen, the int: section; docs/INTEGRATIONS.md):

  path      the node ids a flow's packets crossed, in hop order (Key-Write)
  postcard  the per-hop postcards (INT-XD/MX) of a flow (Postcarding)
  latency   mean hop latency and queue occupancy of a node's queue, or of a
            flow over its reports (Key-Increment sums and counts)
  drops     drop reports: node, queue, drop reason, flow (Append)

Flows are given as PROTO,SRC:PORT,DST:PORT, as the reports' inner packets
carried them.`,
		Example: `  dta query int path --flow tcp,10.0.0.1:5000,10.0.0.2:80
  dta query int latency --switch 22 --queue 3
  dta query int latency --flow tcp,10.0.0.1:5000,10.0.0.2:80
  dta query int drops --switch 22
  dta query int postcard --flow udp,10.0.0.1:53,10.0.0.2:53 -o json`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newQueryINTPathCmd(o, d), newQueryINTPostcardCmd(o, d), newQueryINTLatencyCmd(o, d), newQueryINTDropsCmd(o, d))
	return cmd
}

func parseFlow(s string) (dta.FiveTuple, error) {
	f, err := dta.ParseFiveTuple(s)
	if err != nil {
		return f, usageError("--flow: %v", err)
	}
	return f, nil
}

func newQueryINTPathCmd(o *queryOptions, d intmap.Config) *cobra.Command {
	var flow, st string
	cmd := &cobra.Command{
		Use:     "path",
		Short:   "The node ids a flow's packets crossed, in hop order",
		Example: "  dta query int path --flow tcp,10.0.0.1:5000,10.0.0.2:80",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := parseFlow(flow)
			if err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			r, err := c.KeyWrite(cmd.Context(), st, f.String(), client.KeyWriteOptions{})
			if err != nil {
				return o.fail(err)
			}
			type answer struct {
				Flow   string   `json:"flow"`
				Status string   `json:"status"`
				Path   []uint32 `json:"path"`
			}
			a := answer{Flow: f.String(), Status: r.Status, Path: []uint32{}}
			if r.Status == client.StatusFound {
				a.Path = intmap.ParsePath(r.Value)
			}
			if o.output == "json" {
				return queryJSONLines(cmd.OutOrStdout(), []answer{a})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s  %s  path %v\n", a.Flow, a.Status, a.Path)
			return nil
		},
	}
	cmd.Flags().StringVar(&flow, "flow", "", "the flow, PROTO,SRC:PORT,DST:PORT")
	cmd.Flags().StringVar(&st, "store", d.PathStore, "the path store (int.path_store)")
	return cmd
}

func newQueryINTPostcardCmd(o *queryOptions, d intmap.Config) *cobra.Command {
	var flow, st string
	cmd := &cobra.Command{
		Use:     "postcard",
		Short:   "The per-hop postcards (INT-XD/MX) of a flow: node id per hop",
		Example: "  dta query int postcard --flow tcp,10.0.0.1:5000,10.0.0.2:80",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := parseFlow(flow)
			if err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			r, err := c.Postcard(cmd.Context(), st, f.String())
			if err != nil {
				return o.fail(err)
			}
			if o.output == "json" {
				return queryJSONLines(cmd.OutOrStdout(), []client.PostcardResult{r})
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "%s\t%s\n", f, r.Status)
			fmt.Fprintln(tw, "HOP\tNODE")
			for _, h := range r.Hops {
				node := "-"
				if h.Present {
					node = fmt.Sprint(h.Value)
				}
				fmt.Fprintf(tw, "%d\t%s\n", h.Hop, node)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&flow, "flow", "", "the flow, PROTO,SRC:PORT,DST:PORT")
	cmd.Flags().StringVar(&st, "store", d.PostcardStore, "the postcard store (int.postcard_store)")
	return cmd
}

// latencyAnswer is what `dta query int latency` prints.
type latencyAnswer struct {
	Of            string  `json:"of"`
	Samples       uint64  `json:"samples"`
	LatencySum    uint64  `json:"hop_latency_sum"`
	MeanLatency   float64 `json:"mean_hop_latency"`
	OccupancySum  uint64  `json:"queue_occupancy_sum,omitempty"`
	MeanOccupancy float64 `json:"mean_queue_occupancy,omitempty"`
}

func newQueryINTLatencyCmd(o *queryOptions, d intmap.Config) *cobra.Command {
	var (
		flow, st string
		node     uint32
		queue    uint8
	)
	cmd := &cobra.Command{
		Use:   "latency",
		Short: "Mean hop latency (and queue occupancy) of a node's queue, or of a flow",
		Long: `latency reads the INT counters of a node's queue (--switch, --queue): the
sum of the hop latencies and queue occupancies its reports carried and how
many, or of a flow (--flow): the sum over its reports of their hops'
latencies and how many reports. Counters are count-min sketches: a sum is
never below the true one.`,
		Example: "  dta query int latency --switch 22 --queue 3\n  dta query int latency --flow tcp,10.0.0.1:5000,10.0.0.2:80",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			byFlow := cmd.Flags().Changed("flow")
			if byFlow == cmd.Flags().Changed("switch") {
				return usageError("give --switch (and --queue) or --flow")
			}
			if byFlow && cmd.Flags().Changed("queue") {
				return usageError("--queue goes with --switch: a flow's latency is kept over its whole path")
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			var keys []string
			a := latencyAnswer{}
			if byFlow {
				f, err := parseFlow(flow)
				if err != nil {
					return err
				}
				a.Of = "flow " + f.String()
				keys = []string{
					"0x" + hex.EncodeToString(intmap.FlowKey(nil, intmap.KindFlowLatency, f)),
					"0x" + hex.EncodeToString(intmap.FlowKey(nil, intmap.KindFlowCount, f)),
				}
			} else {
				a.Of = fmt.Sprintf("node %d queue %d", node, queue)
				for _, k := range []byte{intmap.KindQueueLatency, intmap.KindQueueCount, intmap.KindQueueOccupancy} {
					key := intmap.QueueKey(k, node, queue)
					keys = append(keys, "0x"+hex.EncodeToString(key[:]))
				}
			}
			rs, err := c.KeyIncrementBatch(cmd.Context(), st, keys, 0)
			if err != nil {
				return o.fail(err)
			}
			a.LatencySum, a.Samples = rs[0].Count, rs[1].Count
			if len(rs) > 2 {
				a.OccupancySum = rs[2].Count
			}
			if a.Samples > 0 {
				a.MeanLatency = float64(a.LatencySum) / float64(a.Samples)
				a.MeanOccupancy = float64(a.OccupancySum) / float64(a.Samples)
			}
			if o.output == "json" {
				return queryJSONLines(cmd.OutOrStdout(), []latencyAnswer{a})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d samples, mean hop latency %.1f (sum %d)", a.Of, a.Samples, a.MeanLatency, a.LatencySum)
			if !byFlow {
				fmt.Fprintf(cmd.OutOrStdout(), ", mean queue occupancy %.1f", a.MeanOccupancy)
			}
			fmt.Fprintln(cmd.OutOrStdout())
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&flow, "flow", "", "a flow, PROTO,SRC:PORT,DST:PORT")
	fl.Uint32Var(&node, "switch", 0, "a node id (the switch's INT node id)")
	fl.Uint8Var(&queue, "queue", 0, "the node's queue id")
	fl.StringVar(&st, "store", d.CounterStore, "the counter store (int.counter_store)")
	return cmd
}

// dropAnswer is one drop as `dta query int drops` prints it.
type dropAnswer struct {
	Index  uint64 `json:"index"`
	List   uint32 `json:"list"`
	Node   uint32 `json:"node"`
	Queue  uint8  `json:"queue"`
	Reason uint8  `json:"drop_reason"`
	Flow   string `json:"flow"`
	Time   uint32 `json:"arrival_unix"`
}

func newQueryINTDropsCmd(o *queryOptions, d intmap.Config) *cobra.Command {
	var (
		st    string
		node  uint32
		limit int
	)
	cmd := &cobra.Command{
		Use:   "drops",
		Short: "Drop reports: node, queue, drop reason, flow",
		Long: `drops lists the drop reports INT nodes sent, newest last: each node's reports
go to list (node id mod the store's lists), so --switch reads one list and
shows that node's drops; without it every list is read.`,
		Example: "  dta query int drops --switch 22\n  dta query int drops --limit 50 -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			if limit < 1 { // the collector checks the top (its max_entries)
				return usageError("--limit: %d, want at least 1 entry per list", limit)
			}
			s, err := c.Store(cmd.Context(), st)
			if err != nil {
				return o.fail(err)
			}
			lists := s.Geometry.Lists
			if lists == 0 {
				return fmt.Errorf("store %s is not an Append store", st)
			}
			which := []uint32{}
			if cmd.Flags().Changed("switch") {
				which = append(which, node%lists)
			} else {
				for l := range lists {
					which = append(which, l)
				}
			}
			var out []dropAnswer
			for _, l := range which {
				r, err := c.Append(cmd.Context(), st, l, client.FromOldest, client.AppendOptions{Limit: limit})
				if err != nil {
					return o.fail(err)
				}
				for _, e := range r.Entries {
					de, err := intmap.ParseDropEntry(e.Value)
					if err != nil {
						return err
					}
					if cmd.Flags().Changed("switch") && de.Node != node {
						continue
					}
					out = append(out, dropAnswer{Index: e.Index, List: l, Node: de.Node, Queue: de.Queue, Reason: de.Reason,
						Flow: de.Flow.String(), Time: de.Arrival})
				}
			}
			if o.output == "json" {
				return queryJSONLines(cmd.OutOrStdout(), out)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "LIST\tINDEX\tNODE\tQUEUE\tREASON\tFLOW")
			for _, a := range out {
				fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%s\n", a.List, a.Index, a.Node, a.Queue, a.Reason, a.Flow)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&st, "store", d.DropStore, "the drop store (int.drop_store)")
	cmd.Flags().Uint32Var(&node, "switch", 0, "only this node id's drops")
	cmd.Flags().IntVar(&limit, "limit", 1000, "entries read per list, oldest first")
	return cmd
}
