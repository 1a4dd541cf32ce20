package analysis_test

import (
	"math"
	"math/big"
	"testing"

	"github.com/dta-go/dta/internal/analysis"
)

// enumerate throws every assignment of N hashes for the queried key and each
// of others other keys (all counts 1) onto S counters and returns the exact
// probability that the estimate is exact and the mean overestimate.
func enumerate(others, S, N int) (exact, meanOver float64) {
	balls := N * (others + 1)
	total := 1
	for range balls {
		total *= S
	}
	h := make([]int, balls)
	counters := make([]int, S)
	hits := 0
	sumOver := 0
	for code := range total {
		c := code
		for i := range h {
			h[i] = c % S
			c /= S
		}
		clear(counters)
		for _, p := range h {
			counters[p]++
		}
		est := math.MaxInt
		for _, p := range h[:N] {
			est = min(est, counters[p])
		}
		if est == 1 {
			hits++
		}
		sumOver += est - 1
	}
	return float64(hits) / float64(total), float64(sumOver) / float64(total)
}

func TestKeyIncrementExactMatchesEnumeration(t *testing.T) {
	for _, tt := range []struct {
		name         string
		others, S, N int
	}{
		{"one hash, four other keys, three counters", 4, 3, 1},
		{"two hashes, two other keys, five counters", 2, 5, 2},
		{"three hashes, one other key, four counters", 1, 4, 3},
		{"two hashes, no other key, three counters (only self-collisions)", 0, 3, 2},
		{"four hashes, one other key, three counters (fewer counters than hashes)", 1, 3, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want, meanOver := enumerate(tt.others, tt.S, tt.N)
			got := analysis.KeyIncrementExact(uint64(tt.others), uint64(tt.S), tt.N)
			over := analysis.KeyIncrementOverestimated(uint64(tt.others), uint64(tt.S), tt.N)
			if math.Abs(got-want) > 1e-14 || math.Abs(got+over-1) > 1e-14 {
				t.Errorf("exact %.17g (overestimated %.17g), enumeration %.17g", got, over, want)
			}
			// With every count 1 the total W is others+1.
			bound := analysis.KeyIncrementMeanError(tt.N, uint64(tt.S)) * float64(tt.others+1)
			if meanOver > bound {
				t.Errorf("mean overestimate %.6g above the bound %.6g", meanOver, bound)
			}
		})
	}
}

// TestKeyIncrementKeepsRelativePrecisionWhenTiny compares with the
// inclusion–exclusion formula evaluated in exact rational arithmetic.
func TestKeyIncrementKeepsRelativePrecisionWhenTiny(t *testing.T) {
	for _, tt := range []struct {
		name          string
		others, S, N  uint64
		exactFraction bool // compare P(exact) instead of P(overestimated)
	}{
		{"10 keys over 2^30 counters with N=4 (overestimates only from self-collisions)", 10, 1 << 30, 4, false},
		{"1000 keys over 2^20 counters with N=2", 1000, 1 << 20, 2, false},
		{"100 keys over 1000 counters with N=3", 100, 1000, 3, false},
		{"300 keys over 64 counters with N=2 (exact answers are rare)", 300, 64, 2, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			exact, over := ratExact(tt.others, tt.S, int(tt.N))
			want, got := over, analysis.KeyIncrementOverestimated(tt.others, tt.S, int(tt.N))
			if tt.exactFraction {
				want, got = exact, analysis.KeyIncrementExact(tt.others, tt.S, int(tt.N))
			}
			if rel := math.Abs(got-want) / want; !(rel < 1e-12) {
				t.Errorf("got %.17g, want %.17g (relative error %.2g)", got, want, rel)
			}
		})
	}
}

// ratExact is KeyIncrementExact's model in exact rational arithmetic:
// P(s singletons) by the chain over the key's own hashes, then
// P(all s hit) = Σ_m (−1)^m C(s,m) (1−m/S)^(N·others).
func ratExact(others, S uint64, N int) (exact, over float64) {
	bs := new(big.Rat).SetInt64(int64(S))
	frac := func(a int) *big.Rat { return new(big.Rat).Quo(new(big.Rat).SetInt64(int64(a)), bs) }
	p := map[[2]int]*big.Rat{{0, 0}: big.NewRat(1, 1)}
	for range N {
		next := map[[2]int]*big.Rat{}
		add := func(k [2]int, v *big.Rat) {
			if next[k] == nil {
				next[k] = new(big.Rat)
			}
			next[k].Add(next[k], v)
		}
		for k, v := range p {
			a, m := k[0], k[1]
			add([2]int{a + 1, m}, new(big.Rat).Mul(v, new(big.Rat).Sub(big.NewRat(1, 1), frac(a+m))))
			if a > 0 {
				add([2]int{a - 1, m + 1}, new(big.Rat).Mul(v, frac(a)))
			}
			if m > 0 {
				add([2]int{a, m}, new(big.Rat).Mul(v, frac(m)))
			}
		}
		p = next
	}
	balls := int64(N) * int64(others)
	ex, ov := new(big.Rat), new(big.Rat)
	for k, v := range p {
		s := k[0]
		all := new(big.Rat)
		for m := 0; m <= s; m++ {
			num := new(big.Int).Exp(big.NewInt(int64(S)-int64(m)), big.NewInt(balls), nil)
			den := new(big.Int).Exp(big.NewInt(int64(S)), big.NewInt(balls), nil)
			term := new(big.Rat).SetFrac(num, den)
			term.Mul(term, new(big.Rat).SetFloat64(binom(s, m)))
			if m%2 == 1 {
				term.Neg(term)
			}
			all.Add(all, term)
		}
		ov.Add(ov, new(big.Rat).Mul(v, all))
		ex.Add(ex, new(big.Rat).Mul(v, new(big.Rat).Sub(big.NewRat(1, 1), all)))
	}
	exact, _ = ex.Float64()
	over, _ = ov.Float64()
	return exact, over
}

func TestKeyIncrementExactTendsToKeyWriteSurvival(t *testing.T) {
	const S = 1 << 40
	for n := 1; n <= 8; n++ {
		for _, alpha := range []float64{0.01, 0.1, 1} {
			want := 1 - math.Pow(-math.Expm1(-alpha*float64(n)), float64(n))
			got := analysis.KeyIncrementExact(uint64(alpha*S), S, n)
			if math.Abs(got-want)/want > 1e-9 {
				t.Errorf("N=%d α=%g: got %.12g, want 1−(1−e^{−αN})^N = %.12g", n, alpha, got, want)
			}
		}
	}
}

func TestKeyIncrementOverestimatesShrinkWithMoreCounters(t *testing.T) {
	for n := 1; n <= 8; n++ {
		prev := 1.0
		for S := uint64(2); S < 1<<32; S = S*5/4 + 1 {
			got := analysis.KeyIncrementOverestimated(1000, S, n)
			if got > prev*(1+1e-12) {
				t.Fatalf("N=%d: %.17g at %d counters after %.17g", n, got, S, prev)
			}
			prev = got
		}
	}
}

func TestKeyIncrementTail(t *testing.T) {
	for _, tt := range []struct {
		name string
		got  float64
		want float64
	}{
		{"one hash is Markov's W/S over εW", analysis.KeyIncrementTail(0.01, 1, 1e6), 1e-4},
		{"two hashes add the chance that they collide", analysis.KeyIncrementTail(1e-3, 2, 1e6), 4e-6 + 1e-6},
		{"four hashes over few counters are clamped to 1", analysis.KeyIncrementTail(1e-3, 4, 1000), 1},
		{"more hashes than counters always collide", analysis.KeyIncrementTail(1, 4, 3), 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if math.Abs(tt.got-tt.want)/tt.want > 1e-9 {
				t.Errorf("got %.12g, want %.12g", tt.got, tt.want)
			}
		})
	}
	t.Run("the Markov term equals the classic sketch's with N rows of S/N counters", func(t *testing.T) {
		const S, eps = 1 << 24, 1e-5
		for n := 1; n <= 8; n++ {
			rows := math.Pow(1/(eps*S/float64(n)), float64(n))
			self := -math.Expm1(func() (l float64) {
				for k := 1; k < n; k++ {
					l += math.Log1p(-float64(k) / S)
				}
				return l
			}())
			if got := analysis.KeyIncrementTail(eps, n, S); math.Abs(got-rows-self) > 1e-15*(rows+self) {
				t.Errorf("N=%d: got %.6g, classic %.6g + self-collisions %.6g", n, got, rows, self)
			}
		}
	})
}
