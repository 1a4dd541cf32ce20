package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func newQueryEpochsCmd(o *queryOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "epochs",
		Short: "List the past checkpoints (epochs) a collector with --data-dir keeps",
		Long: `epochs lists the checkpoints a collector with durable stores keeps as
queryable epochs (collector.history), oldest first: every query subcommand
reads one of them with --at EPOCH or --at TIME.`,
		Example: "  dta query epochs\n  dta query epochs -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			epochs, durable, err := c.Epochs(cmd.Context())
			if err != nil {
				return o.fail(err)
			}
			out := cmd.OutOrStdout()
			if o.output == "json" {
				return queryJSONLines(out, epochs)
			}
			if !durable {
				fmt.Fprintln(out, "the collector keeps its stores in memory only (start it with --data-dir to keep checkpoints)")
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "EPOCH\tTIME\tKIND\tBYTES")
			for _, e := range epochs {
				kind := "full"
				if !e.Full {
					kind = fmt.Sprintf("delta of %d", e.Parent)
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%d\n", e.Epoch, e.Time.Local().Format(time.RFC3339Nano), kind, e.Bytes)
			}
			return tw.Flush()
		},
	}
}
