package cli

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/reporter"
	"github.com/dta-go/dta/sketch"
	"github.com/dta-go/dta/wire/dta"
)

// newReportSketchCmd is dta report sketchmerge: build a sketch from key
// counts, as a switch agent would over an epoch, and flush it.
func newReportSketchCmd() *cobra.Command {
	var (
		to      string
		store   uint16
		epoch   uint32
		rows    int
		columns uint64
		kind    string
		counts  []string
		quiet   bool
	)
	cmd := &cobra.Command{
		Use:     "sketchmerge",
		Aliases: []string{"sketch"},
		Short:   "Flush a sketch of key counts as one epoch of a Sketch-Merge store",
		Long: `sketchmerge builds a local sketch (the geometry must be the store's: --rows,
--columns, --kind; the defaults are the embedded default store's) from
--key KEY=COUNT pairs, as a switch agent counts packets over an epoch, and
flushes it to the translator as Sketch-Merge reports for --epoch: one per run
of non-zero counters of a row. The translator adds every counter into the
collector's copy of that epoch, so the collector holds the sum of every
reporter's flush. An epoch is read once a newer one has opened (the next
epoch's first flush closes it).`,
		Example: `  dta report sketchmerge --epoch 1 --key 42=1000 --key 7=3
  dta report sketchmerge --epoch 1 --key 42=500           # a second switch: epoch 1 now holds 1500 for 42
  dta report sketchmerge --epoch 2 --key 1=1              # opens epoch 2, closing 1
  dta query sketchmerge --key 42 --epoch 1`,
		Args: reportNoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := sketch.ParseKind(kind)
			if err != nil {
				return usageError("--kind: %v", err)
			}
			sk, err := sketch.New(sketch.Geometry{Rows: rows, Columns: columns, Kind: k})
			if err != nil {
				return usageError("%v", err)
			}
			if len(counts) == 0 {
				return usageError("--key: give at least one KEY=COUNT")
			}
			if err := checkHostPort("to", to); err != nil {
				return err
			}
			for _, kc := range counts {
				ks, cs, ok := strings.Cut(kc, "=")
				if !ok {
					cs = "1"
				}
				key, err := dta.ParseKey(ks)
				if err != nil {
					return usageError("--key %q: %v", kc, err)
				}
				n, err := strconv.ParseInt(cs, 10, 64)
				if err != nil {
					return usageError("--key %q: count %q is not an integer", kc, cs)
				}
				if n < 0 && k != sketch.CountSketch {
					return usageError("--key %q: a negative count needs --kind countsketch (a count-min sketch only grows)", kc)
				}
				sk.Update(sketchKeyBytes(key), n)
			}
			logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			r, err := reporter.New(reporter.Config{To: to}, logger)
			if err != nil {
				return err
			}
			n, err := r.SendSketch(store, epoch, sk)
			if cerr := r.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			if !quiet {
				fmt.Fprintf(cmd.OutOrStdout(), "sent epoch %d of %d keys as %d sketchmerge reports to %s\n", epoch, len(counts), n, r.RemoteAddr())
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&to, "to", reporter.DefaultTo, "translator `host:port`")
	fl.Uint16Var(&store, "store", 0, "target store `ID` (0 = the default Sketch-Merge store)")
	fl.Uint32Var(&epoch, "epoch", 1, "the `epoch` these counts belong to")
	fl.IntVar(&rows, "rows", 4, "the store's rows")
	fl.Uint64Var(&columns, "columns", 65536, "the store's columns")
	fl.StringVar(&kind, "kind", "countmin", "the store's kind: countmin or countsketch")
	fl.StringArrayVar(&counts, "key", nil, "`KEY[=COUNT]` (repeat; COUNT defaults to 1 and may be negative for count-sketch)")
	fl.BoolVarP(&quiet, "quiet", "q", false, "print nothing on success")
	return cmd
}

// sketchKeyBytes is the bytes a sketch hashes for a key: a decimal (compat)
// key as its four big-endian bytes, others as their bytes.
func sketchKeyBytes(k dta.Key) []byte { return k.Bytes }
