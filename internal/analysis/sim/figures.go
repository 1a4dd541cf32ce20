package sim

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dta-go/dta/internal/analysis"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/wire/dta"
)

// The figures NewFigure knows.
const (
	FigureLoad      = "12"       // paper Fig. 12 / DART Fig. 3: Key-Write success vs load factor, N = 1..4
	FigurePaths     = "13"       // paper Fig. 13 / DART Fig. 4: 5-hop path tracing vs report age, 3–30 GiB
	FigureChecksums = "dart5"    // DART Fig. 5: wrong answers vs checksum bits
	FigurePostcard  = "postcard" // Postcarding success vs load factor
	FigureIfEmpty   = "cas"      // DART §7: further copies only into empty slots
	FigureScale     = "scale"    // the same ratio at several store sizes
)

// FigureNames lists the figures in the order of the documentation.
var FigureNames = []string{FigureLoad, FigurePaths, FigureChecksums, FigurePostcard, FigureIfEmpty, FigureScale}

// The paper's path-tracing setting (Fig. 13): 100 M flows of 5-hop paths
// (20-byte values, 24-byte slots) written with N = 2.
const (
	paperFlows     = 100_000_000
	paperValueSize = 20
	gib            = 1 << 30
)

// paperRatio is 100 M flows per 3 GiB of 24-byte slots (2^27 slots), the
// keys-to-slots ratio at which DART Fig. 5 and the if-empty comparison run.
const paperRatio = float64(paperFlows) / (1 << 27)

// FigureOptions adjusts a figure; zero fields keep the figure's defaults.
type FigureOptions struct {
	// Slots is the store size of each run (slots or chunks); for FigureScale
	// the largest of its four sizes (S/256, S/32, S/4, S). Not for
	// FigurePaths.
	Slots uint64
	// Keys is the keys written per run; for FigurePaths the flows at the
	// paper's scale (100 M), which every storage size sees.
	Keys         uint64
	N            []int
	ChecksumBits []int // FigureChecksums: the widths swept; others: one width
	Bins         int
	PerBin       int
	Seed         uint64
	Workers      int
	// MaxMemory bounds the region of a FigurePaths run: a storage size
	// beyond it is simulated at 1/k of its slots and flows, for the smallest
	// whole k that fits, which keeps the ratio of flows to slots.
	MaxMemory uint64
	HugePages region.HugePages
}

// FigureRun is one run of a figure.
type FigureRun struct {
	Label string `json:"label"`
	Group string `json:"group,omitempty"` // the curve the run belongs to
	// Scale is the factor from the run to the paper: the run has 1/Scale of
	// the slots and keys of the setting it stands for.
	Scale  float64 `json:"scale"`
	Config Config  `json:"-"`
}

// Figure is a set of runs reproducing one figure.
type Figure struct {
	Name  string      `json:"figure"`
	Title string      `json:"title"`
	Runs  []FigureRun `json:"-"`
}

// RunResult is the Result of a FigureRun, with the run's label.
type RunResult struct {
	Label string  `json:"label"`
	Group string  `json:"group,omitempty"`
	Scale float64 `json:"scale"`
	*Result
}

// FigureResult is what RunFigure returns.
type FigureResult struct {
	Name  string      `json:"figure"`
	Title string      `json:"title"`
	Runs  []RunResult `json:"runs"`
	// Notes are the figure's findings in words: the paper's numbers beside
	// ours, best N per interval, and so on.
	Notes []string `json:"notes"`
}

// NewFigure returns the runs of the named figure.
func NewFigure(name string, o FigureOptions) (*Figure, error) {
	base := DefaultConfig()
	base.Seed = cmp.Or(o.Seed, base.Seed)
	base.Workers = o.Workers
	base.HugePages = o.HugePages
	if len(o.ChecksumBits) > 1 && name != FigureChecksums {
		return nil, fieldError("checksum bits", "figure %s takes one width", name)
	}
	if len(o.ChecksumBits) == 1 {
		base.ChecksumBits = o.ChecksumBits[0]
	}
	ns := func(def ...int) []int {
		if len(o.N) > 0 {
			return o.N
		}
		return def
	}
	bins := func(def, perBin int) {
		base.Bins, base.PerBin = cmp.Or(o.Bins, def), cmp.Or(o.PerBin, perBin)
	}
	f := &Figure{Name: name}
	switch name {
	case FigureLoad:
		f.Title = "Key-Write: success vs load factor α (later keys / slots), 32-bit checksums"
		bins(40, 50_000)
		slots := cmp.Or(o.Slots, 1<<22)
		for _, n := range ns(1, 2, 3, 4) {
			c := base
			c.Slots, c.Keys, c.N = slots, cmp.Or(o.Keys, 2*slots), n
			f.Runs = append(f.Runs, FigureRun{Label: fmt.Sprintf("N = %d", n), Group: fmt.Sprintf("N=%d", n), Scale: 1, Config: c})
		}
	case FigurePostcard:
		f.Title = "Postcarding: success vs load factor α (later paths / chunks), B = 5, |V| = 2^20"
		base.Primitive = dta.Postcard
		if len(o.ChecksumBits) > 0 {
			return nil, fieldError("checksum bits", "postcard slots are 32 bits (vary |V| instead)")
		}
		bins(40, 50_000)
		slots := cmp.Or(o.Slots, 1<<21)
		for _, n := range ns(1, 2, 3, 4) {
			c := base
			c.Slots, c.Keys, c.N = slots, cmp.Or(o.Keys, 2*slots), n
			f.Runs = append(f.Runs, FigureRun{Label: fmt.Sprintf("N = %d", n), Group: fmt.Sprintf("N=%d", n), Scale: 1, Config: c})
		}
	case FigurePaths:
		if o.Slots != 0 {
			return nil, fieldError("slots", "figure 13 sets its stores from the storage sizes; bound them with the max memory")
		}
		bins(100, 20_000)
		flows := cmp.Or(o.Keys, paperFlows)
		f.Title = "INT path tracing (20-byte values, 24-byte slots): success vs flows written since, " + count(float64(flows)) + " flows"
		maxMem := cmp.Or(o.MaxMemory, 3*gib)
		type store struct{ gib, n uint64 }
		var stores []store
		for _, n := range ns(2) {
			for _, size := range []uint64{3, 6, 12, 30} {
				stores = append(stores, store{size, uint64(n)})
			}
		}
		if len(o.N) == 0 {
			stores = append(stores, store{30, 4}) // DART: 30 GB with N = 4
		}
		for _, st := range stores {
			size, n := st.gib, int(st.n)
			c := base
			c.ValueSize, c.N = paperValueSize, n
			paperSlots := c.keyWriteSpec().SlotsFor(size * gib)
			k := max(1, (paperSlots*c.keyWriteSpec().SlotSize()+maxMem-1)/maxMem)
			c.Slots, c.Keys = paperSlots/k, flows/k
			at10M := flows / 10 / k // 10 M of the paper's 100 M
			c.Probes = []Probe{
				{Age: at10M, HalfWidth: at10M / 20, Queries: 2_000_000},
				{Age: c.Keys - 1, HalfWidth: c.Keys / 1000, Queries: 2_000_000},
			}
			label := fmt.Sprintf("%d GiB, N = %d", size, n)
			if k > 1 {
				label += fmt.Sprintf(" (1/%d scale)", k)
			}
			f.Runs = append(f.Runs, FigureRun{Label: label, Group: fmt.Sprintf("%d GiB N=%d", size, n), Scale: float64(k), Config: c})
		}
	case FigureChecksums:
		f.Title = "Key-Write wrong answers vs checksum bits (N = 2, 100 M keys per 2^27 slots, every key queried)"
		slots := cmp.Or(o.Slots, 1<<23)
		keys := cmp.Or(o.Keys, uint64(math.Round(paperRatio*float64(slots))))
		base.Bins = cmp.Or(o.Bins, 10)
		base.PerBin = cmp.Or(o.PerBin, int(keys/uint64(base.Bins))+1) // every key
		widths := o.ChecksumBits
		if len(widths) == 0 {
			widths = []int{2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 28, 32}
		}
		for _, n := range ns(2) {
			for _, b := range widths {
				c := base
				c.Slots, c.Keys, c.N, c.ChecksumBits = slots, keys, n, b
				f.Runs = append(f.Runs, FigureRun{Label: fmt.Sprintf("b = %d, N = %d", b, n), Group: fmt.Sprintf("N=%d", n), Scale: 1, Config: c})
			}
		}
	case FigureIfEmpty:
		f.Title = "Key-Write: every copy written vs copies after the first only into empty slots (DART §7 CAS)"
		bins(50, 40_000)
		slots := cmp.Or(o.Slots, 1<<22)
		ratios := []float64{paperRatio / 10, paperRatio, 2}
		if o.Keys != 0 {
			ratios = []float64{float64(o.Keys) / float64(slots)}
		}
		for _, n := range ns(2) {
			for _, r := range ratios {
				for _, ifEmpty := range []bool{false, true} {
					c := base
					c.Slots, c.Keys, c.N, c.IfEmpty = slots, uint64(math.Round(r*float64(slots))), n, ifEmpty
					mode := "every copy"
					if ifEmpty {
						mode = "if empty"
					}
					f.Runs = append(f.Runs, FigureRun{
						Label: fmt.Sprintf("keys/slots %.4g, N = %d, %s", r, n, mode),
						Group: fmt.Sprintf("%.4g N=%d", r, n), Scale: 1, Config: c,
					})
				}
			}
		}
	case FigureScale:
		f.Title = "Key-Write (24-byte slots, N = 2) at 100 M flows per 2^27 slots, at several store sizes"
		bins(50, 40_000)
		top := cmp.Or(o.Slots, 1<<26)
		for _, n := range ns(2) {
			for _, shift := range []uint{8, 5, 2, 0} {
				slots := top >> shift
				c := base
				c.ValueSize, c.N, c.Slots = paperValueSize, n, slots
				c.Keys = uint64(math.Round(paperRatio * float64(slots)))
				if o.Keys != 0 {
					c.Keys = uint64(math.Round(float64(o.Keys) / float64(top) * float64(slots)))
				}
				at10M := c.Keys / 10
				c.Probes = []Probe{
					{Age: at10M, HalfWidth: at10M / 20, Queries: 1_000_000},
					{Age: c.Keys - 1, HalfWidth: max(c.Keys/1000, min(10_000, c.Keys/100)), Queries: 1_000_000},
				}
				f.Runs = append(f.Runs, FigureRun{
					Label: fmt.Sprintf("S = 2^%d, N = %d", log2(slots), n),
					Group: fmt.Sprintf("N=%d", n), Scale: float64(1<<27) / float64(slots), Config: c,
				})
			}
		}
	default:
		return nil, fieldError("figure", "%q is not one of %s", name, strings.Join(FigureNames, ", "))
	}
	for i := range f.Runs {
		if err := f.Runs[i].Config.Validate(); err != nil {
			return nil, fmt.Errorf("figure %s, %s: %w", name, f.Runs[i].Label, err)
		}
	}
	return f, nil
}

// RunFigure performs the figure's runs one after the other (each uses every
// worker) and derives its notes. started, if not nil, is called before each
// run; p, if not nil, follows each run's progress.
func RunFigure(ctx context.Context, f *Figure, p *Progress, started func(i int, r *FigureRun)) (*FigureResult, error) {
	fr := &FigureResult{Name: f.Name, Title: f.Title}
	for i := range f.Runs {
		r := &f.Runs[i]
		if started != nil {
			started(i, r)
		}
		res, err := Run(ctx, r.Config, p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Label, err)
		}
		fr.Runs = append(fr.Runs, RunResult{Label: r.Label, Group: r.Group, Scale: r.Scale, Result: res})
	}
	fr.Notes = notes(fr)
	return fr, nil
}

func log2(n uint64) int {
	k := 0
	for n > 1 {
		n >>= 1
		k++
	}
	return k
}

// notes derives the figure's findings.
func notes(fr *FigureResult) []string {
	switch fr.Name {
	case FigureLoad, FigurePostcard:
		return bestNNotes(fr)
	case FigurePaths:
		return pathNotes(fr)
	case FigureChecksums:
		return checksumNotes(fr)
	case FigureIfEmpty:
		return ifEmptyNotes(fr)
	case FigureScale:
		return scaleNotes(fr)
	}
	return nil
}

// bestNNotes names the best N per interval of α, in the simulation (the N
// with the most correct answers in a bin; a tie goes to the smaller N) and in
// theory. All runs share one bin layout.
func bestNNotes(fr *FigureResult) []string {
	if len(fr.Runs) < 2 {
		return nil
	}
	bins := fr.Runs[0].Config.Bins
	for _, r := range fr.Runs {
		if r.Config.Bins != bins || r.Config.Keys != fr.Runs[0].Config.Keys || r.Config.Slots != fr.Runs[0].Config.Slots {
			return nil
		}
	}
	best := func(score func(*Bin) float64) []int {
		out := make([]int, bins)
		for j := range bins {
			bestScore := math.Inf(-1)
			for _, r := range fr.Runs {
				if s := score(&r.Bins[j]); s > bestScore {
					out[j], bestScore = r.Config.N, s
				}
			}
		}
		return out
	}
	sim := best(func(b *Bin) float64 { return float64(b.Correct) })
	th := best(func(b *Bin) float64 {
		if b.Theory == nil {
			return 0
		}
		return b.Theory.Success
	})
	bs := fr.Runs[0].Bins
	intervals := func(best []int) string {
		var parts []string
		for j := 0; j < bins; {
			k := j
			for k+1 < bins && best[k+1] == best[j] {
				k++
			}
			lo := float64(bs[j].Lo) / float64(fr.Runs[0].Config.Slots)
			hi := float64(bs[k].Hi) / float64(fr.Runs[0].Config.Slots)
			parts = append(parts, fmt.Sprintf("α %.3g–%.3g: N = %d", lo, hi, best[j]))
			j = k + 1
		}
		return strings.Join(parts, "; ")
	}
	// The average over a store holding the keys up to a bin: running sums.
	running := make([][]float64, len(fr.Runs))
	for i, r := range fr.Runs {
		var sum float64
		for j := range bins {
			sum += float64(r.Bins[j].Correct)
			running[i] = append(running[i], sum)
		}
	}
	avg := make([]int, bins)
	for j := range bins {
		bestScore := math.Inf(-1)
		for i, r := range fr.Runs {
			if running[i][j] > bestScore {
				avg[j], bestScore = r.Config.N, running[i][j]
			}
		}
	}
	out := []string{
		"best N per bin of one key's α, simulated (most correct answers): " + intervals(sim),
		"best N per bin of one key's α, theory (paper's bounds): " + intervals(th),
		"best N for the average over a store holding keys up to a bin's upper α, simulated: " + intervals(avg),
	}
	// The crossovers of the theory, to more digits than the bins show.
	for i := 0; i+1 < len(fr.Runs); i++ {
		a, b := fr.Runs[i].Config, fr.Runs[i+1].Config
		point := func(c *Config, x float64) float64 { return theory(c, x).Success }
		if x, ok := crossover(&a, &b, point); ok {
			out = append(out, fmt.Sprintf("theory, one key with α·S later keys: N = %d overtakes N = %d above α = %.4f (success %.2f %%)", a.N, b.N, x, 100*point(&a, x)))
		}
		if x, ok := crossover(&a, &b, averageTheory); ok {
			out = append(out, fmt.Sprintf("theory, average over a store holding α·S keys: N = %d overtakes N = %d above α = %.4f (success %.2f %%)", a.N, b.N, x, 100*averageTheory(&a, x)))
		}
	}
	return out
}

// averageTheory is the paper's success bound averaged over the keys of a
// store holding α·Slots keys: the mean of the point bound over [0, α]
// (Simpson's rule).
func averageTheory(c *Config, alpha float64) float64 {
	if alpha == 0 {
		return theory(c, 0).Success
	}
	const steps = 64
	h := alpha / steps
	sum := theory(c, 0).Success + theory(c, alpha).Success
	for i := 1; i < steps; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		sum += w * theory(c, float64(i)*h).Success
	}
	return sum * h / 3 / alpha
}

// crossover finds the α in (0, 10] above which a (the smaller N) scores
// better than b, by bisection on the sign change of the difference.
func crossover(a, b *Config, score func(*Config, float64) float64) (float64, bool) {
	diff := func(x float64) float64 { return score(a, x) - score(b, x) }
	lo, hi := 1e-3, 10.0
	if diff(lo) >= 0 || diff(hi) <= 0 {
		return 0, false
	}
	for range 100 {
		mid := (lo + hi) / 2
		if diff(mid) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, true
}

// paperPath holds the paper's Fig. 13 numbers: success at 10 M and 100 M
// later flows.
var paperPath = map[string][2]float64{
	"3 GiB":  {0.993, 0.445},
	"30 GiB": {0.9999, 0.982},
}

func pathNotes(fr *FigureResult) []string {
	var out []string
	for _, r := range fr.Runs {
		at, old := r.Probe(0), r.Probe(1)
		line := fmt.Sprintf("%s: average over all flows %s (theory %s); at %s later flows %s (theory %s); oldest (%s later) %s (theory %s)",
			r.Label, pct(r.All.Success(), r.All.SuccessError()), pctTheory(r.AllTheory),
			count(at.MeanAge*r.Scale), pct(at.Success(), at.SuccessError()), pctTheory(at.Theory),
			count(old.MeanAge*r.Scale), pct(old.Success(), old.SuccessError()), pctTheory(old.Theory))
		tenth := r.Config.Keys / 10
		young := r.Younger(tenth)
		line += fmt.Sprintf("; average over the flows with < %s later flows %s", count(float64(tenth)*r.Scale), pct(young.Success(), young.SuccessError()))
		out = append(out, line)
	}
	out = append(out, "DART (HotNets 2021) for 100 M flows: 3 GB → 71.4 % average, 39.0 % for the oldest (its theory 38.7 %); 30 GB → 99.3 % average")
	for _, d := range []struct {
		what string
		mem  float64 // GiB
		s    float64
		f    func(float64) float64
	}{
		{"DART 3 GB average 71.4 %", 3, 0.714, averageSuccess},
		{"DART 3 GB oldest, theory 38.7 %", 3, 0.387, pointSuccess},
		{"DART 30 GB average 99.3 %", 30, 0.993, averageSuccess},
	} {
		a := solveAlpha(d.f, d.s)
		out = append(out, fmt.Sprintf("%s needs α = %.4g at 100 M flows: %.4g M slots, %.1f bytes per slot of %g GiB, %.1f of %g GB (24-byte slots of %g GiB give α = %.4g)",
			d.what, a, paperFlows/a/1e6, d.mem*gib*a/paperFlows, d.mem, d.mem*1e9*a/paperFlows, d.mem, d.mem, paperFlows/(d.mem*gib/24)))
	}
	// What the paper's numbers imply under two readings, for 24-byte slots.
	const slotBytes = 24
	for _, size := range []string{"3 GiB", "30 GiB"} {
		var gibs float64
		fmt.Sscanf(size, "%g", &gibs)
		for i, age := range []float64{10e6, 100e6} {
			s := paperPath[size][i]
			ap := solveAlpha(pointSuccess, s)
			aa := solveAlpha(averageSuccess, s)
			out = append(out, fmt.Sprintf("paper %s at %s later flows, %.4g %%: a point (success at that age) needs α = %.4g, i.e. %.1f bytes per slot of %s; an average over the younger flows needs α = %.4g (%.1f bytes); 24-byte slots give α = %.4g",
				size, count(age), 100*s, ap, gibs*gib*ap/age, size, aa, gibs*gib*aa/age, age/(gibs*gib/slotBytes)))
		}
	}
	return out
}

// pointSuccess is the N = 2, b = 32 success at load factor α (the paper's
// bounds, which are tight there).
func pointSuccess(alpha float64) float64 {
	return 1 - analysis.KeyWriteNoAnswer(alpha, 2, 32) - analysis.KeyWriteWrong(alpha, 2, 32)
}

// averageSuccess is the mean over α' in [0, α] of the N = 2 point success
// 1 − (1 − e^{−2α'})²: the success averaged over the flows younger than α.
func averageSuccess(alpha float64) float64 {
	if alpha == 0 {
		return 1
	}
	x := 2 * alpha
	// ∫0^x (1−e^{−u})² du / x = 1 − 2(1−e^{−x})/x + (1−e^{−2x})/(2x)
	fail := 1 + 2*math.Expm1(-x)/x - math.Expm1(-2*x)/(2*x)
	return 1 - fail
}

// solveAlpha returns the α at which the decreasing success function reaches s.
func solveAlpha(success func(float64) float64, s float64) float64 {
	lo, hi := 0.0, 1.0
	for success(hi) > s {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if success(mid) > s {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

func checksumNotes(fr *FigureResult) []string {
	var out []string
	for _, r := range fr.Runs {
		th := "-"
		if r.AllTheory != nil {
			th = fmt.Sprintf("%.3g", r.AllTheory.Wrong)
		}
		out = append(out, fmt.Sprintf("%s: %d wrong of %s queries (rate %.3g, bound %s), %d conflicts, success %s",
			r.Label, r.All.Wrong, count(float64(r.All.Queries)), r.All.WrongRate(), th, r.All.Conflict, pct(r.All.Success(), r.All.SuccessError())))
	}
	return out
}

func ifEmptyNotes(fr *FigureResult) []string {
	var out []string
	for i := 0; i+1 < len(fr.Runs); i += 2 {
		plain, cas := fr.Runs[i], fr.Runs[i+1]
		copies := float64(cas.Config.Keys) * float64(cas.Config.N-1)
		skipped := 0.0
		if copies > 0 {
			skipped = float64(cas.Skipped) / copies
		}
		po, co := plain.Oldest(), cas.Oldest()
		py, cy := &plain.Bins[0], &cas.Bins[0]
		out = append(out, fmt.Sprintf("%s: average %s every copy vs %s if empty (%+.2f points); oldest bin %s vs %s; youngest bin %s vs %s; %.1f %% of the later copies skipped",
			strings.TrimSuffix(plain.Label, ", every copy"),
			pct(plain.All.Success(), plain.All.SuccessError()), pct(cas.All.Success(), cas.All.SuccessError()),
			100*(cas.All.Success()-plain.All.Success()),
			pct(po.Success(), po.SuccessError()), pct(co.Success(), co.SuccessError()),
			pct(py.Success(), py.SuccessError()), pct(cy.Success(), cy.SuccessError()), 100*skipped))
	}
	return out
}

func scaleNotes(fr *FigureResult) []string {
	var out []string
	for _, r := range fr.Runs {
		at, old := r.Probe(0), r.Probe(1)
		out = append(out, fmt.Sprintf("%s, %s keys: average %s; at α = %.4f %s; oldest (α = %.4f) %s; region %s on %s, peak RSS %s, write %.1f s, query %.1f s",
			r.Label, count(float64(r.Config.Keys)), pct(r.All.Success(), r.All.SuccessError()),
			at.Alpha, pct(at.Success(), at.SuccessError()), old.Alpha, pct(old.Success(), old.SuccessError()),
			bytesIEC(r.RegionBytes), r.Backing, bytesIEC(r.PeakRSS), r.WriteSeconds, r.QuerySeconds))
	}
	// Largest difference between sizes, bin by bin, in standard errors.
	if len(fr.Runs) > 1 && slices.IndexFunc(fr.Runs, func(r RunResult) bool { return r.Config.Bins != fr.Runs[0].Config.Bins }) < 0 {
		worst, at := 0.0, 0
		for j := range fr.Runs[0].Config.Bins {
			for _, a := range fr.Runs {
				for _, b := range fr.Runs {
					ba, bb := &a.Bins[j], &b.Bins[j]
					// Pooled: the error of the difference if both rates were equal.
					p := float64(ba.Correct+bb.Correct) / float64(ba.Queries+bb.Queries)
					se := math.Sqrt(p * (1 - p) * (1/float64(ba.Queries) + 1/float64(bb.Queries)))
					if se > 0 {
						if z := math.Abs(ba.Success()-bb.Success()) / se; z > worst {
							worst, at = z, j
						}
					}
				}
			}
		}
		m := float64(fr.Runs[0].Config.Bins * len(fr.Runs) * (len(fr.Runs) - 1) / 2)
		out = append(out, fmt.Sprintf("largest difference between two sizes in one age bin: %.2f standard errors (bin %d of %d); chance alone keeps the largest of %.0f comparisons below %.2f with 95 %% probability (Bonferroni)",
			worst, at, fr.Runs[0].Config.Bins, m, math.Sqrt2*math.Erfinv(1-0.05/m)))
	}
	return out
}

// pct formats a rate and its standard error as percentages.
func pct(p, se float64) string {
	return fmt.Sprintf("%s ± %.2g %%", strings.TrimSuffix(fmt.Sprintf("%.6g", 100*p), "."), 100*se)
}

func pctTheory(t *Theory) string {
	if t == nil {
		return "none"
	}
	return fmt.Sprintf("%.4g %%", 100*t.Success)
}

// count formats a count of keys with an M or K suffix.
func count(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.4g M", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.4g K", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// bytesIEC formats a byte count in the largest binary unit it reaches.
func bytesIEC(n uint64) string {
	const units = "KMGT"
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.2f %ciB", v, units[i])
}
