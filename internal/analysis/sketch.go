package analysis

import (
	"fmt"
	"math"

	"github.com/dta-go/dta/internal/primitive/sketchmerge"
	"github.com/dta-go/dta/sketch"
)

// SketchBounds are the guarantees of one Sketch-Merge geometry for a point
// query: with probability at least 1 − Delta, a key's estimate is within
// Epsilon × the stream's norm of its true count (count-min: above it by at
// most Epsilon·L1, never below for non-negative counts; count-sketch: within
// ±Epsilon·L2). The merged sketch of several reporters is the sketch of the
// union stream, so the norms are those of all reporters' streams together.
type SketchBounds struct {
	Kind    string  `json:"kind"`
	Rows    int     `json:"rows"`
	Columns uint64  `json:"columns"`
	Epsilon float64 `json:"epsilon"`
	// Norm names the norm Epsilon multiplies: "L1" or "L2".
	Norm string `json:"norm"`
	// Delta bounds the probability that one key's error exceeds it.
	Delta float64 `json:"delta"`
	// RowFailure bounds the probability that one row's counter alone errs
	// by more (Markov for count-min, Chebyshev for count-sketch).
	RowFailure  float64 `json:"row_failure"`
	EpochBytes  uint64  `json:"epoch_bytes"`
	RegionBytes uint64  `json:"region_bytes"` // with Epochs copies and the tag header
	Epochs      int     `json:"epochs"`
}

// SketchGuarantee returns the bounds of geometry g with epochs copies
// (sketchmerge.MinEpochs..MaxEpochs) at error epsilon (0: the geometry's
// natural epsilon, e/w for count-min and √(3/w) for count-sketch).
//
// Count-min: a row's counter exceeds the true count by the counts of the
// keys sharing its column, whose expectation is at most L1/w; by Markov the
// row errs by more than ε·L1 with probability at most 1/(wε), and the rows
// are independent, so the minimum errs with probability at most (1/(wε))^d.
// Count-sketch: a row's signed counter errs by a sum with mean 0 and
// variance at most L2²/w; by Chebyshev it errs by more than ε·L2 with
// probability p ≤ 1/(wε²). The median errs only if at least half the rows
// do: δ = P(Binomial(d, p) ≥ ⌈d/2⌉), summed exactly.
func SketchGuarantee(g sketch.Geometry, epochs int, epsilon float64) (SketchBounds, error) {
	switch {
	case g.Rows < 1 || g.Rows > sketch.MaxRows:
		return SketchBounds{}, invalid("rows", "%d out of range [1, %d]", g.Rows, sketch.MaxRows)
	case g.Columns < 2 || g.Columns > sketch.MaxColumns:
		return SketchBounds{}, invalid("columns", "%d out of range [2, 2^32]", g.Columns)
	case g.Kind != sketch.CountMin && g.Kind != sketch.CountSketch:
		return SketchBounds{}, invalid("kind", "want countmin or countsketch")
	case epochs < sketchmerge.MinEpochs || epochs > sketchmerge.MaxEpochs:
		return SketchBounds{}, invalid("epochs", "%d out of range [%d, %d] (one accumulating, one being cleared ahead, at least one closed to read)",
			epochs, sketchmerge.MinEpochs, sketchmerge.MaxEpochs)
	case math.IsNaN(epsilon) || math.IsInf(epsilon, 0) || epsilon < 0:
		return SketchBounds{}, invalid("epsilon", "%v is not a positive share of the norm", epsilon)
	}
	if err := g.Validate(); err != nil {
		return SketchBounds{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	w, d := float64(g.Columns), g.Rows
	b := SketchBounds{Kind: g.Kind.String(), Rows: d, Columns: g.Columns, Epochs: epochs,
		EpochBytes: g.Counters() * 8, RegionBytes: 64 + uint64(epochs)*g.Counters()*8}
	switch g.Kind {
	case sketch.CountMin:
		if epsilon == 0 {
			epsilon = math.E / w
		}
		b.Norm, b.Epsilon = "L1", epsilon
		b.RowFailure = math.Min(1, 1/(w*epsilon))
		b.Delta = math.Pow(b.RowFailure, float64(d))
	case sketch.CountSketch:
		if epsilon == 0 {
			epsilon = math.Sqrt(3 / w)
		}
		b.Norm, b.Epsilon = "L2", epsilon
		b.RowFailure = math.Min(1, 1/(w*epsilon*epsilon))
		b.Delta = binomialTail(d, (d+1)/2, b.RowFailure)
	}
	if epsilon <= 0 || math.IsNaN(epsilon) || math.IsInf(epsilon, 0) {
		return SketchBounds{}, invalid("epsilon", "%v is not a positive share of the norm", epsilon)
	}
	return b, nil
}

// SketchPlan returns the smallest geometry of kind whose bounds give error
// epsilon with probability at least 1 − delta: count-min w = ⌈e/ε⌉ and
// d = ⌈ln(1/δ)⌉; count-sketch w = ⌈k/ε²⌉ (a row fails with probability
// ≤ 1/k) and the fewest rows whose median meets δ, for the k of least
// memory.
func SketchPlan(kind sketch.Kind, epsilon, delta float64, epochs int) (SketchBounds, error) {
	if !(epsilon > 0 && epsilon < 1) {
		return SketchBounds{}, invalid("epsilon", "%v out of range (0, 1)", epsilon)
	}
	if !(delta > 0 && delta < 1) {
		return SketchBounds{}, invalid("delta", "%v out of range (0, 1)", delta)
	}
	g := sketch.Geometry{Kind: kind}
	switch kind {
	case sketch.CountMin:
		g.Columns = uint64(math.Ceil(math.E / epsilon))
		g.Rows = max(1, int(math.Ceil(math.Log(1/delta))))
	case sketch.CountSketch:
		// w = k/ε² makes a row fail with probability ≤ 1/k; more columns
		// per row need fewer rows. Take the k (3..64) of least memory.
		g.Rows = sketch.MaxRows + 1
		for k := 3; k <= 64; k++ {
			w := uint64(math.Ceil(float64(k) / (epsilon * epsilon)))
			for d := 1; d <= sketch.MaxRows; d++ {
				if binomialTail(d, (d+1)/2, 1/float64(k)) <= delta {
					if g.Rows > sketch.MaxRows || uint64(d)*w < uint64(g.Rows)*g.Columns {
						g.Rows, g.Columns = d, w
					}
					break
				}
			}
		}
	default:
		return SketchBounds{}, invalid("kind", "%v is not countmin or countsketch", kind)
	}
	if g.Rows > sketch.MaxRows {
		return SketchBounds{}, invalid("delta", "%v needs more than %d rows", delta, sketch.MaxRows)
	}
	g.Columns = max(g.Columns, 2)
	return SketchGuarantee(g, epochs, epsilon)
}

// binomialTail is P(Binomial(n, p) ≥ k).
func binomialTail(n, k int, p float64) float64 {
	if p >= 1 {
		return 1
	}
	if p <= 0 {
		return 0
	}
	var s float64
	for j := k; j <= n; j++ {
		lc, _ := math.Lgamma(float64(n + 1))
		l1, _ := math.Lgamma(float64(j + 1))
		l2, _ := math.Lgamma(float64(n - j + 1))
		s += math.Exp(lc - l1 - l2 + float64(j)*math.Log(p) + float64(n-j)*math.Log1p(-p))
	}
	return math.Min(1, s)
}
