package analysis_test

import (
	"math"
	"math/big"
	"testing"

	"github.com/dta-go/dta/internal/analysis"
)

// TestPaperWorkedExamples pins every worked example of the paper (§4, A.5,
// A.6) at the precision the paper states it, and our own value to 3
// significant digits.
func TestPaperWorkedExamples(t *testing.T) {
	perHopKeyWrite := func() float64 {
		// Postcarding's comparison: Key-Write with 64-bit slots (32-bit
		// checksum) once per hop of a 5-hop path, each hop at α = 0.1, N = 2.
		w := analysis.KeyWriteWrong(0.1, 2, 32)
		return -math.Expm1(5 * math.Log1p(-w))
	}
	for _, tt := range []struct {
		name  string
		got   float64
		check func(float64) bool // the paper's statement
		ours  float64            // our value, 3 significant digits
	}{
		{"Key-Write with N=2, b=32, α=0.1 has no answer below 3.3 %",
			analysis.KeyWriteNoAnswer(0.1, 2, 32), func(x float64) bool { return x < 0.033 }, 0.0329},
		{"Key-Write with N=2, b=32, α=0.1 is wrong at most 1.6e-11",
			analysis.KeyWriteWrong(0.1, 2, 32), func(x float64) bool { return x <= 1.6e-11 }, 1.53e-11},
		{"Key-Write with N=1, b=32, α=0.1 has no answer about 9.5 %",
			analysis.KeyWriteNoAnswer(0.1, 1, 32), func(x float64) bool { return math.Abs(x-0.095) < 0.0005 }, 0.0952},
		{"Key-Write with N=4, b=32, α=0.1 has no answer about 1.2 %",
			analysis.KeyWriteNoAnswer(0.1, 4, 32), func(x float64) bool { return math.Abs(x-0.012) < 0.0005 }, 0.0118},
		{"Postcarding with |V|=2^18, B=5, N=2, b=32, α=0.1 has no output at most 3.3 %",
			analysis.PostcardNoOutput(0.1, 2, 32, 5, 1<<18), func(x float64) bool { return x <= 0.033 }, 0.0329},
		{"Postcarding with |V|=2^18, B=5, N=2, b=32, α=0.1 is wrong below 1e-22",
			analysis.PostcardWrong(0.1, 2, 32, 5, 1<<18), func(x float64) bool { return x < 1e-22 }, 5.57e-23},
		{"Key-Write per hop with 64-bit slots would be wrong about 8e-11 on a 5-hop path",
			perHopKeyWrite(), func(x float64) bool { return math.Abs(x-8e-11) < 0.5e-11 }, 7.65e-11},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.check(tt.got) {
				t.Errorf("got %.4g, which does not satisfy the paper's statement", tt.got)
			}
			if rel := math.Abs(tt.got-tt.ours) / tt.ours; rel > 0.5e-2 {
				t.Errorf("got %.4g, want %.3g to 3 significant digits", tt.got, tt.ours)
			}
		})
	}
}

// bounds lists the paper's four bounds as functions of α for one geometry.
func bounds(n, b int) []struct {
	name string
	f    func(alpha float64) float64
} {
	const hops, values = 5, 1 << 18
	return []struct {
		name string
		f    func(alpha float64) float64
	}{
		{"Key-Write no answer", func(a float64) float64 { return analysis.KeyWriteNoAnswer(a, n, b) }},
		{"Key-Write wrong", func(a float64) float64 { return analysis.KeyWriteWrong(a, n, b) }},
		{"Postcarding no output", func(a float64) float64 { return analysis.PostcardNoOutput(a, n, 32, hops, values) }},
		{"Postcarding wrong", func(a float64) float64 { return analysis.PostcardWrong(a, n, 32, hops, values) }},
	}
}

func TestBoundsAreMonotoneInAlphaAndVanishAtZeroLoad(t *testing.T) {
	for n := 1; n <= 8; n++ {
		for _, b := range []int{8, 16, 32, 64} {
			for _, bd := range bounds(n, b) {
				t.Run(bd.name+" grows with α and is 0 at α=0", func(t *testing.T) {
					if got := bd.f(0); got != 0 {
						t.Errorf("N=%d b=%d: %.3g at α=0, want 0", n, b, got)
					}
					if got := bd.f(1e-12); !(got >= 0 && got < 1e-10) {
						t.Errorf("N=%d b=%d: %.3g at α=1e-12, want below 1e-10", n, b, got)
					}
					prev := 0.0
					for a := 0.001; a < 20; a *= 1.1 {
						got := bd.f(a)
						if got < prev*(1-1e-12) || got > 1 && n*b > 8 {
							t.Fatalf("N=%d b=%d: %.6g at α=%.4g after %.6g", n, b, got, a, prev)
						}
						prev = got
					}
				})
			}
		}
	}
	t.Run("no answer and wrong cover every outcome as the load grows", func(t *testing.T) {
		for n := 1; n <= 8; n++ {
			no, w := analysis.KeyWriteNoAnswer(50, n, 32), analysis.KeyWriteWrong(50, n, 32)
			if math.Abs(no+w-1) > 1e-15 || no < 1-float64(n)*math.Ldexp(1, -32)*1.001 {
				t.Errorf("N=%d: no answer %.17g, wrong %.3g at α=50", n, no, w)
			}
		}
	})
	t.Run("no answer plus wrong grows with α even with 1-bit checksums", func(t *testing.T) {
		for n := 1; n <= 8; n++ {
			prev := 0.0
			for a := 0.001; a < 20; a *= 1.1 {
				got := analysis.KeyWriteNoAnswer(a, n, 1) + analysis.KeyWriteWrong(a, n, 1)
				if got < prev*(1-1e-12) {
					t.Fatalf("N=%d: %.6g at α=%.4g after %.6g", n, got, a, prev)
				}
				prev = got
			}
		}
	})
}

// TestBoundsKeepRelativePrecisionWhenTiny compares the float64 bounds with the
// paper's formulas evaluated literally (cancellations included) in 512-bit
// arithmetic.
func TestBoundsKeepRelativePrecisionWhenTiny(t *testing.T) {
	for _, alpha := range []float64{1e-12, 1e-9, 1e-6, 1e-3, 0.1, 0.745, 3} {
		for _, n := range []int{1, 2, 3, 4, 8} {
			for _, b := range []int{8, 32, 64} {
				eps := math.Ldexp(1, -b)
				wantNo, wantWrong := bigPaper(alpha, n, eps)
				checkRel(t, "Key-Write no answer", analysis.KeyWriteNoAnswer(alpha, n, b), wantNo, alpha, n, b)
				checkRel(t, "Key-Write wrong", analysis.KeyWriteWrong(alpha, n, b), wantWrong, alpha, n, b)
			}
			p := analysis.PostcardFalseMatch(32, 5, 1<<18)
			wantNo, wantWrong := bigPaper(alpha, n, p)
			checkRel(t, "Postcarding no output", analysis.PostcardNoOutput(alpha, n, 32, 5, 1<<18), wantNo, alpha, n, 32)
			checkRel(t, "Postcarding wrong", analysis.PostcardWrong(alpha, n, 32, 5, 1<<18), wantWrong, alpha, n, 32)
		}
	}
	t.Run("Postcarding's false-match probability is 2^-70 to the last bits for the paper's example", func(t *testing.T) {
		want := math.Pow(float64(1<<18+1)/(1<<32), 5)
		if got := analysis.PostcardFalseMatch(32, 5, 1<<18); math.Abs(got-want)/want > 1e-14 {
			t.Errorf("got %.17g, want %.17g", got, want)
		}
	})
}

func checkRel(t *testing.T, what string, got, want, alpha float64, n, b int) {
	t.Helper()
	if want == 0 && got == 0 {
		return
	}
	if rel := math.Abs(got-want) / want; !(rel < 1e-12) {
		t.Errorf("%s at α=%g N=%d b=%d: got %.17g, want %.17g (relative error %.2g)", what, alpha, n, b, got, want, rel)
	}
}

const prec = 512

// bigPaper evaluates the paper's two bounds as written, for a per-copy
// false-match probability eps, in prec-bit arithmetic.
func bigPaper(alpha float64, n int, eps float64) (noAnswer, wrong float64) {
	one := big.NewFloat(1).SetPrec(prec)
	e := new(big.Float).SetPrec(prec).SetFloat64(eps)
	sub := func(a, b *big.Float) *big.Float { return new(big.Float).SetPrec(prec).Sub(a, b) }
	mul := func(xs ...*big.Float) *big.Float {
		r := new(big.Float).SetPrec(prec).Set(one)
		for _, x := range xs {
			r.Mul(r, x)
		}
		return r
	}
	pow := func(x *big.Float, k int) *big.Float {
		r := new(big.Float).SetPrec(prec).Set(one)
		for range k {
			r.Mul(r, x)
		}
		return r
	}
	num := func(x float64) *big.Float { return new(big.Float).SetPrec(prec).SetFloat64(x) }
	q := sub(one, bigExpNeg(alpha*float64(n)))
	omE := sub(one, e)
	qn := pow(q, n)
	no := mul(qn, pow(omE, n))
	no.Add(no, mul(qn, sub(sub(one, pow(omE, n)), mul(num(float64(n)), e, pow(omE, n-1)))))
	for j := 1; j < n; j++ {
		no.Add(no, mul(num(binom(n, j)), pow(q, j), bigExpNeg(alpha*float64(n*(n-j))), sub(one, pow(omE, j))))
	}
	noAnswer, _ = no.Float64()
	wrong, _ = mul(qn, num(float64(n)), e).Float64()
	return noAnswer, wrong
}

// bigExpNeg returns e^{-x} for x ≥ 0 as 1/Σ x^k/k!, a series of positive terms.
func bigExpNeg(x float64) *big.Float {
	bx := new(big.Float).SetPrec(prec).SetFloat64(x)
	sum := big.NewFloat(1).SetPrec(prec)
	term := big.NewFloat(1).SetPrec(prec)
	for k := 1; k < 2000; k++ {
		term.Mul(term, bx)
		term.Quo(term, big.NewFloat(float64(k)))
		sum.Add(sum, term)
		if term.Cmp(new(big.Float).SetMantExp(sum, -prec)) < 0 {
			break
		}
	}
	return new(big.Float).SetPrec(prec).Quo(big.NewFloat(1).SetPrec(prec), sum)
}

func binom(n, k int) float64 {
	c := 1.0
	for i := 1; i <= k; i++ {
		c = c * float64(n-k+i) / float64(i)
	}
	return math.Round(c)
}

func TestConsensusThreshold(t *testing.T) {
	t.Run("threshold 1 agrees with the paper's bounds to within 2N·2^-b", func(t *testing.T) {
		eps := math.Ldexp(1, -32)
		for n := 1; n <= 8; n++ {
			for _, alpha := range []float64{0.001, 0.01, 0.1, 1} {
				no, thrNo := analysis.KeyWriteNoAnswer(alpha, n, 32), analysis.KeyWriteThresholdNoAnswer(alpha, n, 1, 32)
				w, thrW := analysis.KeyWriteWrong(alpha, n, 32), analysis.KeyWriteThresholdWrong(alpha, n, 1, 32)
				if math.Abs(no-thrNo) > 2*float64(n)*eps || math.Abs(w-thrW)/w > 1e-6 {
					t.Errorf("N=%d α=%g: no answer %.10g vs %.10g, wrong %.10g vs %.10g", n, alpha, no, thrNo, w, thrW)
				}
			}
		}
	})
	t.Run("threshold 0 means plain plurality", func(t *testing.T) {
		if a, b := analysis.KeyWriteThresholdWrong(0.1, 3, 0, 32), analysis.KeyWriteThresholdWrong(0.1, 3, 1, 32); a != b {
			t.Errorf("t=0 %.6g, t=1 %.6g", a, b)
		}
	})
	t.Run("a higher threshold trades wrong answers for empty ones", func(t *testing.T) {
		for n := 2; n <= 8; n++ {
			for th := 2; th <= n; th++ {
				w1, w2 := analysis.KeyWriteThresholdWrong(0.1, n, th-1, 32), analysis.KeyWriteThresholdWrong(0.1, n, th, 32)
				n1, n2 := analysis.KeyWriteThresholdNoAnswer(0.1, n, th-1, 32), analysis.KeyWriteThresholdNoAnswer(0.1, n, th, 32)
				if !(w2 < w1*1e-6) || !(n2 > n1) {
					t.Errorf("N=%d t=%d: wrong %.3g → %.3g, no answer %.4g → %.4g", n, th, w1, w2, n1, n2)
				}
			}
		}
	})
	t.Run("threshold 2 of 2 is wrong only when both copies match a false key", func(t *testing.T) {
		q := -math.Expm1(-0.2)
		eps := math.Ldexp(1, -32)
		want := q * q * eps * eps
		if got := analysis.KeyWriteThresholdWrong(0.1, 2, 2, 32); math.Abs(got-want)/want > 1e-12 {
			t.Errorf("got %.17g, want %.17g", got, want)
		}
		if got, want := analysis.KeyWriteThresholdNoAnswer(0.1, 2, 2, 32), -math.Expm1(-0.4); math.Abs(got-want) > 1e-15 {
			t.Errorf("no answer %.17g, want P(a copy lost) = %.17g", got, want)
		}
	})
}

func TestInvalidArgumentsGiveNaN(t *testing.T) {
	for _, tt := range []struct {
		name string
		got  float64
	}{
		{"negative α", analysis.KeyWriteNoAnswer(-0.1, 2, 32)},
		{"NaN α", analysis.KeyWriteWrong(math.NaN(), 2, 32)},
		{"infinite α", analysis.KeyWriteWrong(math.Inf(1), 2, 32)},
		{"N of 0", analysis.KeyWriteNoAnswer(0.1, 0, 32)},
		{"N above MaxN", analysis.KeyWriteWrong(0.1, analysis.MaxN+1, 32)},
		{"0 checksum bits", analysis.KeyWriteNoAnswer(0.1, 2, 0)},
		{"65 checksum bits", analysis.KeyWriteWrong(0.1, 2, 65)},
		{"threshold above N", analysis.KeyWriteThresholdNoAnswer(0.1, 2, 3, 32)},
		{"negative threshold", analysis.KeyWriteThresholdWrong(0.1, 2, -1, 32)},
		{"0 hops", analysis.PostcardNoOutput(0.1, 2, 32, 0, 1<<18)},
		{"empty value set", analysis.PostcardWrong(0.1, 2, 32, 5, 0)},
		{"value set and blank beyond b bits", analysis.PostcardWrong(0.1, 2, 16, 5, 1<<16)},
		{"Key-Increment N of 0", analysis.KeyIncrementExact(10, 100, 0)},
		{"Key-Increment 0 counters", analysis.KeyIncrementTail(0.01, 2, 0)},
		{"Key-Increment ε of 0", analysis.KeyIncrementTail(0, 2, 100)},
		{"Key-Increment hash count overflowing", analysis.KeyIncrementOverestimated(math.MaxUint64/2, 100, 4)},
	} {
		t.Run(tt.name+" gives NaN", func(t *testing.T) {
			if !math.IsNaN(tt.got) {
				t.Errorf("got %v", tt.got)
			}
		})
	}
	t.Run("a value set filling b bits with the blank is valid (p = 1)", func(t *testing.T) {
		if got := analysis.PostcardFalseMatch(16, 5, 1<<16-1); got != 1 {
			t.Errorf("got %v", got)
		}
	})
}
