package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/client"
)

// newQuerySketchCmd is dta query sketchmerge: point estimates, heavy hitters,
// norms and epochs of a Sketch-Merge store.
func newQuerySketchCmd(o *queryOptions) *cobra.Command {
	var (
		store string
		keys  []string
		epoch int64
	)
	cmd := &cobra.Command{
		Use:     "sketchmerge",
		Aliases: []string{"sketch"},
		Short:   "Read a Sketch-Merge store: point estimates, heavy hitters, norms, epochs",
		Long: `sketchmerge reads the network-wide sketch the reporters' per-epoch flushes
added up in the collector. Every read takes --epoch (default: the newest
closed epoch; "dta query sketchmerge epochs" lists them). With --key it prints
each key's point estimate (count-min: the minimum over the rows, never below
the true count; count-sketch: the median of sign × counter).`,
		Example: `  dta query sketchmerge --key 42 --key 7
  dta query sketchmerge topk --k 5 --key 1 --key 2 --key 3 --key 42
  dta query sketchmerge norms --epoch 12
  dta query sketchmerge epochs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if epoch < -1 {
				return badEpoch(epoch)
			}
			c, err := o.lookups(cmd.Context())
			if err != nil {
				return err
			}
			if err := queryKeys(keys); err != nil {
				return err
			}
			estimate := func(k string) (client.SketchEstimate, error) { return c.SketchEstimate(cmd.Context(), store, k, epoch) }
			if o.several() {
				// Add the collectors' sketches up once, not once per key.
				m, err := c.SketchCounters(cmd.Context(), store, epoch)
				if err != nil {
					return o.fail(err)
				}
				estimate = m.Estimate
			}
			var res []client.SketchEstimate
			for _, k := range keys {
				r, err := estimate(k)
				if err != nil {
					return o.fail(err)
				}
				res = append(res, r)
			}
			return printEstimates(cmd, o, res)
		},
	}
	f := cmd.PersistentFlags()
	f.StringVar(&store, "store", "sketchmerge", "store `name` or id")
	f.Int64Var(&epoch, "epoch", -1, "`epoch` to read (-1: the newest closed one)")
	cmd.Flags().StringArrayVar(&keys, "key", nil, "`key` to estimate (repeat for several)")

	var k int
	var cands []string
	topk := &cobra.Command{
		Use:   "topk",
		Short: "The heavy hitters among candidate keys (a sketch holds no keys: name the candidates)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := queryKeys(cands); err != nil {
				return err
			}
			if k < 1 {
				return usageError("--k must be at least 1")
			}
			if epoch < -1 {
				return badEpoch(epoch)
			}
			if o.several() {
				// Several collectors: add their sketches up, rank the
				// candidates in the merged sketch.
				l, err := o.lookups(cmd.Context())
				if err != nil {
					return err
				}
				m, err := l.SketchCounters(cmd.Context(), store, epoch)
				if err != nil {
					return o.fail(err)
				}
				res := make([]client.SketchEstimate, 0, len(cands))
				for _, c := range cands {
					e, err := m.Estimate(c)
					if err != nil {
						return usageError("--key %q: %v", c, err)
					}
					res = append(res, e)
				}
				slices.SortStableFunc(res, func(a, b client.SketchEstimate) int { return cmp.Compare(b.Estimate, a.Estimate) })
				return printEstimates(cmd, o, res[:min(k, len(res))])
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			res, err := c.SketchTopK(cmd.Context(), store, cands, k, epoch)
			if err != nil {
				return o.fail(err)
			}
			return printEstimates(cmd, o, res)
		},
	}
	topk.Flags().IntVar(&k, "k", 10, "how many")
	topk.Flags().StringArrayVar(&cands, "key", nil, "candidate `key` (repeat)")

	norms := &cobra.Command{
		Use:   "norms",
		Short: "The L1 and L2 norms of an epoch's stream",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if epoch < -1 {
				return badEpoch(epoch)
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			n, err := c.SketchNorms(cmd.Context(), store, epoch)
			if err != nil {
				return o.fail(err)
			}
			if o.output == "json" {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(n)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "epoch %d: L1 %.6g  L2 %.6g\n", n.Epoch, n.L1, n.L2)
			return nil
		},
	}
	epochs := &cobra.Command{
		Use:   "epochs",
		Short: "The epochs the store's copies hold",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			e, err := c.SketchEpochs(cmd.Context(), store)
			if err != nil {
				return o.fail(err)
			}
			if o.output == "json" {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(e)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "%s: %s, %d rows × %d columns\n", e.Store, e.Kind, e.Rows, e.Columns)
			fmt.Fprintln(tw, "EPOCH\tSTATE")
			for _, ep := range e.Epochs {
				fmt.Fprintf(tw, "%d\t%s\n", ep.Epoch, ep.State)
			}
			return tw.Flush()
		},
	}
	cmd.AddCommand(topk, norms, epochs)
	return cmd
}

func printEstimates(cmd *cobra.Command, o *queryOptions, res []client.SketchEstimate) error {
	out := cmd.OutOrStdout()
	if o.output == "json" {
		return queryJSONLines(out, res)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tEPOCH\tESTIMATE")
	for _, r := range res {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", r.Key, r.Epoch, r.Estimate)
	}
	return tw.Flush()
}

// badEpoch refuses an --epoch below -1 (-1 means the newest closed one).
func badEpoch(e int64) error {
	return usageError("--epoch: %d, want an epoch number, or -1 for the newest closed one", e)
}
