package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/reporter"
	"github.com/dta-go/dta/wire/dta"
)

type reportGenOptions struct {
	to         string
	store      uint16
	rate       float64
	count      int64
	batch      int
	seed       uint64
	redundancy int
	entrySize  int
	lists      int
	retransmit bool
	quiet      bool
}

func newReportGenCmd() *cobra.Command {
	o := &reportGenOptions{}
	cmd := &cobra.Command{
		Use:   "gen int-path|postcards|events|counters",
		Short: "Send a generated, realistic telemetry stream",
		Long: `gen sends a deterministic stream of realistic telemetry (the same --seed gives
the same reports) from a simulated k=16 fat tree (1024 hosts, 320 switches):

  int-path    INT path tracing, Key-Write: key = the flow's IPv4 5-tuple,
              value = 5 hops x 4-byte switch ids (20 bytes). Needs a Key-Write
              store with value_size 20: in dta up's defaults, int-paths (--store 5).
  postcards   INT postcards, Postcarding: one postcard per hop (1, 3 or 5),
              path length set, a few flows interleaved.
  events      Append: INT congestion events (4-byte entries) or, with
              --entry-size 18, NetSeer loss events (5-tuple, switch, reason),
              spread over --lists lists.
  counters    per-host byte counters, Key-Increment: key = host IPv4 address
              (a 32-bit key), delta = bytes; a few heavy hitters.

Reports go out --batch per datagram at --rate reports/s. A progress line goes
to stderr every second (-q silences it), a summary to stdout at the end.
Interrupting (Ctrl-C) stops early and still prints the summary.`,
		Example: `  dta report gen counters
  dta report gen postcards --rate 0 --count 500000 --batch 32     # as fast as possible
  dta report gen counters --count 0 --rate 1000                   # until interrupted
  dta report gen events --lists 16 --seed 7
  # into the non-default stores of dta up: int-paths (Key-Write, 20-byte values,
  # id 5) and loss-events (Append, 18-byte entries, id 6)
  dta report gen int-path --rate 100000 --count 1000000 --store 5
  dta report gen events --entry-size 18 --lists 8 --store 6`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError("report gen: give one stream: int-path, postcards, events or counters")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, err := reporter.ParseKind(args[0])
			if err != nil {
				return usageError("report gen: %v", err)
			}
			return runReportGen(cmd, kind, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.to, "to", reporter.DefaultTo, "translator `host:port`")
	fl.Uint16Var(&o.store, "store", 0, "target store `ID` (0 = the primitive's default store)")
	fl.Float64Var(&o.rate, "rate", 10000, "reports per second `R`, 0.001 to 1e12 (0 = as fast as possible)")
	fl.Int64Var(&o.count, "count", 100000, "reports to send `C` (0 = until interrupted)")
	fl.IntVar(&o.batch, "batch", 16, "reports per datagram `B` (1 = single-report datagrams, up to 255)")
	fl.Uint64Var(&o.seed, "seed", 1, "random `seed`: the same seed gives the same stream")
	fl.IntVar(&o.redundancy, "redundancy", reporter.DefaultRedundancy, "int-path, counters: copies `N` (1-8)")
	fl.IntVar(&o.entrySize, "entry-size", 4, "events: entry `bytes`, 4 (congestion) or 18 (loss)")
	fl.IntVar(&o.lists, "lists", reporter.DefaultLists, "events: number of `lists` used")
	fl.BoolVar(&o.retransmit, "retransmit", false, "mark datagrams retransmittable, resend on NACK and wait for the translator's ACKs at the end (binds UDP :40044); exit 1 if some never come")
	fl.BoolVarP(&o.quiet, "quiet", "q", false, "no progress lines on stderr")
	return cmd
}

func runReportGen(cmd *cobra.Command, kind reporter.Kind, o *reportGenOptions) error {
	switch {
	case o.count < 0:
		return usageError("--count: %d, want 0 (until interrupted) or more", o.count)
	case o.rate != 0 && !(o.rate >= reporter.MinRate && o.rate <= reporter.MaxRate): // NaN fails both
		return usageError("--rate: %v, want 0 (unlimited) or %g to %g reports/s", o.rate, reporter.MinRate, reporter.MaxRate)
	case o.batch < 1 || o.batch > dta.MaxBatch:
		return usageError("--batch: %d, want 1 to %d", o.batch, dta.MaxBatch)
	case o.redundancy < 1 || o.redundancy > dta.MaxRedundancy:
		return usageError("--redundancy: %d, want 1 to %d", o.redundancy, dta.MaxRedundancy)
	case o.lists < 1 || o.lists > 1<<24:
		return usageError("--lists: %d, want 1 to %d", o.lists, 1<<24)
	case kind != reporter.Events && (cmd.Flags().Changed("entry-size") || cmd.Flags().Changed("lists")):
		return usageError("--entry-size and --lists: only the events stream takes them, not %s", kind)
	case o.entrySize != 4 && o.entrySize != 18:
		return usageError("--entry-size: %d, want 4 (congestion events) or 18 (loss events)", o.entrySize)
	}
	if err := checkHostPort("to", o.to); err != nil {
		return err
	}
	g, err := reporter.NewGenerator(reporter.GenConfig{
		Kind: kind, Seed: o.seed, Store: o.store, Redundancy: o.redundancy,
		EntrySize: o.entrySize, Lists: o.lists,
	})
	if err != nil {
		return usageError("%v", err)
	}
	out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	logger := slog.New(slog.NewTextHandler(errw, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg := reporter.Config{To: o.to, Batch: o.batch, Rate: o.rate, Retransmit: o.retransmit}
	if err := cfg.Validate(); err != nil {
		return usageError("%v", err)
	}
	r, err := reporter.New(cfg, logger)
	if err != nil {
		return err
	}
	defer r.Close()
	ctx := cmd.Context()
	stop := context.AfterFunc(ctx, func() { r.Close() }) // ends a Send waiting for its rate
	defer stop()

	st := r.Stats()
	rs := make([]dta.Report, 64)
	var sent int64
	start := time.Now()
	lastAt, lastSent := start, int64(0)
	var sendErr error
loop:
	for o.count == 0 || sent < o.count {
		n := int64(len(rs))
		if o.count != 0 {
			n = min(n, o.count-sent)
		}
		g.Fill(rs[:n])
		for i := range rs[:n] {
			if ctx.Err() != nil {
				break loop
			}
			if err := r.Send(&rs[i], false); err != nil {
				if ctx.Err() == nil {
					sendErr = err
				}
				break loop
			}
			sent++
		}
		if now := time.Now(); !o.quiet && now.Sub(lastAt) >= time.Second {
			fmt.Fprintf(errw, "gen %s: %d reports, %.0f reports/s, %d datagrams, %s\n",
				kind, sent, float64(sent-lastSent)/now.Sub(lastAt).Seconds(), st.Datagrams.Load(), reportGenBytes(st.Bytes.Load()))
			lastAt, lastSent = now, sent
		}
	}
	closeErr := r.Close()
	elapsed := time.Since(start)
	reportGenSummary(out, kind, st, elapsed, o.retransmit)
	if sendErr != nil {
		return sendErr
	}
	if closeErr != nil || !o.retransmit {
		return closeErr
	}
	return reportUnacknowledged(r)
}

func reportGenSummary(w io.Writer, kind reporter.Kind, st *reporter.Stats, elapsed time.Duration, retransmit bool) {
	reports, dgs := st.Reports.Load(), st.Datagrams.Load()
	sec := max(elapsed.Seconds(), 1e-9)
	fmt.Fprintf(w, "sent %d %s reports (%s) in %d datagrams, %s, in %.2f s: %.0f reports/s, %.0f datagrams/s\n",
		reports, kind, kind.Primitive(), dgs, reportGenBytes(st.Bytes.Load()), elapsed.Seconds(), float64(reports)/sec, float64(dgs)/sec)
	if retransmit {
		reportAckSummary(w, st)
	}
}

// reportGenBytes formats a byte count for people.
func reportGenBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
