package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/internal/analysis"
	"github.com/dta-go/dta/internal/analysis/sim"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/wire/dta"
)

// planSim is one simulation confirming a row of dta plan.
type planSim struct {
	N        int     `json:"n"`
	Slots    uint64  `json:"slots"` // the scaled store simulated (same load factor)
	Age      uint64  `json:"age"`   // the scaled age
	Alpha    float64 `json:"alpha"`
	Queries  uint64  `json:"queries"`
	Success  float64 `json:"success"`
	StdErr   float64 `json:"success_stderr"`
	Wrong    float64 `json:"wrong"`
	NoAnswer float64 `json:"no_answer"`
	Bound    float64 `json:"bound_success"` // 1 − the bounds' no-answer − wrong
}

// simulatePlan runs, for each (N, slots, rates) given, a simulation over the
// production code at min(slots, maxSlots) slots and the same load factor.
func simulatePlan(ctx context.Context, d analysis.Design, rows []planRowRates, maxSlots uint64, seed uint64) ([]planSim, error) {
	if d.Primitive != dta.KeyWrite && d.Primitive != dta.Postcard {
		return nil, usageError("--simulate: only keywrite and postcard have a simulation")
	}
	var out []planSim
	for _, r := range rows {
		if r.slots == 0 {
			continue
		}
		s := min(r.slots, maxSlots)
		age := uint64(r.rates.Alpha * float64(s))
		cfg := sim.DefaultConfig()
		cfg.Primitive, cfg.Slots, cfg.N, cfg.Hash, cfg.Seed = d.Primitive, s, r.n, d.Hash, seed
		cfg.Keys = age + 1
		cfg.HugePages = region.HugePagesMadvise
		if d.Primitive == dta.KeyWrite {
			cfg.ValueSize, cfg.ChecksumBits = d.ValueSize, d.ChecksumBits
		} else {
			cfg.Hops, cfg.Values = d.Hops, uint32(min(d.Values, 1<<31))
		}
		// One probe around the asked age, ±5 % of it: a few thousand keys.
		cfg.Bins, cfg.PerBin = 1, 20000
		cfg.Probes = []sim.Probe{{Age: age, HalfWidth: max(age/20, 1), Queries: 50000}}
		res, err := sim.Run(ctx, cfg, nil)
		if err != nil {
			return nil, fmt.Errorf("--simulate: N=%d: %w", r.n, err)
		}
		p := res.Probe(0)
		out = append(out, planSim{
			N: r.n, Slots: s, Age: age, Alpha: p.Alpha, Queries: p.Queries,
			Success: p.Success(), StdErr: p.SuccessError(), Wrong: p.WrongRate(), NoAnswer: p.NoAnswerRate(),
			Bound: 1 - r.rates.NoAnswer - r.rates.Wrong,
		})
	}
	return out, nil
}

type planRowRates struct {
	n     int
	slots uint64
	rates analysis.Rates
}

func planSimTable(w io.Writer, sims []planSim) error {
	fmt.Fprintln(w, "\nsimulated over the production code (scaled store, same load factor):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "N\tSLOTS\tAGE\tALPHA\tQUERIES\tSUCCESS\t±\tBOUND\tNO ANSWER\tWRONG")
	for _, s := range sims {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.5f\t%d\t%s\t%.2g\t%s\t%s\t%.3g\n", s.N, planGroup(s.Slots), planGroup(s.Age), s.Alpha,
			s.Queries, planPercent(s.Success), s.StdErr, planPercent(s.Bound), planPercent(s.NoAnswer), s.Wrong)
	}
	return tw.Flush()
}

func runPlanSims(cmd *cobra.Command, o *planOptions, d analysis.Design, rows []planRowRates) ([]planSim, error) {
	maxSlots, err := planCount(o.simSlots)
	if err != nil || maxSlots < 1024 || maxSlots > 1<<28 {
		return nil, usageError("--simulate-slots: %q: want a count in [1024, 2^28]", o.simSlots)
	}
	return simulatePlan(cmd.Context(), d, rows, maxSlots, o.seed)
}
