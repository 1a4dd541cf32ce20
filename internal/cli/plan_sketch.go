package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dta-go/dta/internal/analysis"
	"github.com/dta-go/dta/internal/analysis/sim"
	"github.com/dta-go/dta/internal/primitive/sketchmerge"
	"github.com/dta-go/dta/sketch"
)

// sketchPlanFlags are the flags that apply to --primitive sketchmerge only.
var sketchPlanFlags = []string{"rows", "columns", "kind", "epsilon", "delta", "epochs",
	"sim-reporters", "sim-packets", "sim-keys", "sim-zipf"}

// sketchSimFieldFlags names the flag of each field of sim.SketchConfig.
var sketchSimFieldFlags = map[string]string{
	"reporters": "sim-reporters", "keys": "sim-keys", "packets": "sim-packets",
	"zipf": "sim-zipf", "geometry": "simulate",
}

// sketchPlanOptions are dta plan's Sketch-Merge flags.
type sketchPlanOptions struct {
	rows      int
	columns   uint64
	kind      string
	epsilon   float64
	delta     float64
	epochs    int
	reporters int
	packets   string
	keys      string
	zipf      float64
}

func (s *sketchPlanOptions) add(fl *pflag.FlagSet) {
	fl.IntVar(&s.rows, "rows", 0, "sketchmerge: rows d (with --columns: rate this geometry)")
	fl.Uint64Var(&s.columns, "columns", 0, "sketchmerge: columns w (with --rows: rate this geometry)")
	fl.StringVar(&s.kind, "kind", "countmin", "sketchmerge: countmin or countsketch")
	fl.Float64Var(&s.epsilon, "epsilon", 0, "sketchmerge: error as a share of the stream's L1 (countmin) or L2 (countsketch); 0 with a geometry: its natural ε")
	fl.Float64Var(&s.delta, "delta", 0.01, "sketchmerge: the probability a key's error may exceed ε (planning)")
	fl.IntVar(&s.epochs, "epochs", sketchmerge.MinEpochs, fmt.Sprintf("sketchmerge: copies of the sketch in the store, %d..%d", sketchmerge.MinEpochs, sketchmerge.MaxEpochs))
	fl.IntVar(&s.reporters, "sim-reporters", 4, fmt.Sprintf("sketchmerge --simulate: reporters whose flushes are merged, 1..%d", sim.MaxSketchReporters))
	fl.StringVar(&s.packets, "sim-packets", "1M", "sketchmerge --simulate: packets in the stream, at most 2^32")
	fl.StringVar(&s.keys, "sim-keys", "100K", "sketchmerge --simulate: distinct keys, at most 2^24")
	fl.Float64Var(&s.zipf, "sim-zipf", 1.1, fmt.Sprintf("sketchmerge --simulate: Zipf skew of the stream, above 1 and at most %d", sim.MaxSketchZipf))
}

// sketchPlanReport is what dta plan --primitive sketchmerge prints as JSON.
type sketchPlanReport struct {
	Mode      string                `json:"mode"` // "plan" or "rate"
	Primitive string                `json:"primitive"`
	Bounds    analysis.SketchBounds `json:"bounds"`
	Simulated *sim.SketchResult     `json:"simulated,omitempty"`
}

func runSketchPlan(cmd *cobra.Command, o *planOptions) error {
	s := &o.sketch
	kind, err := sketch.ParseKind(s.kind)
	if err != nil {
		return usageError("--kind: %v", err)
	}
	if err := checkInt("epochs", s.epochs, sketchmerge.MinEpochs, sketchmerge.MaxEpochs); err != nil {
		return err
	}
	if err := checkFloat("epsilon", s.epsilon, 0, 1); err != nil {
		return err
	}
	if err := checkFloat("delta", s.delta, 0, 1); err != nil {
		return err
	}
	var packets, keys uint64
	if o.simulate {
		if packets, err = planCount(s.packets); err != nil {
			return usageError("--sim-packets: %v", err)
		}
		if err := checkInt("sim-packets", packets, 1, sim.MaxSketchPackets); err != nil {
			return err
		}
		if keys, err = planCount(s.keys); err != nil {
			return usageError("--sim-keys: %v", err)
		}
		if err := checkInt("sim-keys", keys, 1, sim.MaxSketchKeys); err != nil {
			return err
		}
		if err := checkInt("sim-reporters", s.reporters, 1, sim.MaxSketchReporters); err != nil {
			return err
		}
		if err := checkFloat("sim-zipf", s.zipf, 1, sim.MaxSketchZipf); err != nil {
			return err
		}
		if s.zipf == 1 {
			return usageError("--sim-zipf: the skew must be above 1")
		}
	} else if err := onlyWith(cmd, "--simulate", true, "sim-reporters", "sim-packets", "sim-keys", "sim-zipf"); err != nil {
		return err
	}
	rep := sketchPlanReport{Primitive: "sketchmerge"}
	switch {
	case s.rows != 0 || s.columns != 0:
		rep.Mode = "rate"
		rep.Bounds, err = analysis.SketchGuarantee(sketch.Geometry{Rows: s.rows, Columns: s.columns, Kind: kind}, s.epochs, s.epsilon)
	case s.epsilon != 0:
		rep.Mode = "plan"
		rep.Bounds, err = analysis.SketchPlan(kind, s.epsilon, s.delta, s.epochs)
	default:
		return usageError("sketchmerge: give --rows and --columns (rate a geometry) or --epsilon and --delta (plan one)")
	}
	if err != nil {
		return fieldFlagError(err, planFieldFlags)
	}
	if o.simulate {
		b := rep.Bounds
		res, err := sim.RunSketch(cmd.Context(), sim.SketchConfig{Geometry: sketch.Geometry{Rows: b.Rows, Columns: b.Columns, Kind: kind},
			Epsilon: b.Epsilon, Reporters: s.reporters, Keys: int(keys), Packets: int(packets), Zipf: s.zipf, TopK: 20, Seed: o.seed})
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		if err != nil {
			return fieldFlagError(err, sketchSimFieldFlags)
		}
		rep.Simulated = &res
	}
	w := cmd.OutOrStdout()
	if o.output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	b := rep.Bounds
	fmt.Fprintf(w, "sketchmerge %s: %d rows × %d columns, %s per epoch, %s with %d epochs\n",
		b.Kind, b.Rows, b.Columns, planBytes(b.EpochBytes), planBytes(b.RegionBytes), b.Epochs)
	fmt.Fprintf(w, "a key's estimate is within ε = %.4g × %s of its true count with probability ≥ %s (δ = %.3g; one row errs with probability ≤ %.3g)\n",
		b.Epsilon, b.Norm, planPercent(1-b.Delta), b.Delta, b.RowFailure)
	if b.Kind == "countmin" {
		fmt.Fprintln(w, "count-min never underestimates non-negative counts; the error is an overestimate")
	}
	if r := rep.Simulated; r != nil {
		fmt.Fprintf(w, "simulated (%s packets, %s keys, Zipf %.2f, %d reporters merged, the production code): merged = union stream's sketch: %v; keys beyond ε: %s (bound %s); largest error %.4g × %s; top-20 recall %s\n",
			s.packets, s.keys, s.zipf, s.reporters, r.Merged, planPercent(r.Exceeded), planPercent(b.Delta), r.MaxError, b.Norm, planPercent(r.TopKRecall))
	}
	return nil
}
