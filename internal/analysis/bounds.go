package analysis

import "math"

// Limits of the bound functions' integer arguments. Beyond them the functions
// return NaN.
const (
	MaxN            = 64 // redundancy N (the primitives allow 8)
	MaxChecksumBits = 64 // checksum or slot width b
	MaxHops         = 64 // Postcarding chunk length B (the primitive allows 8)
)

// KeyWriteNoAnswer is the paper's bound (§4, Appendix A.5 (i)) on the
// probability that a Key-Write query returns no answer, for a key followed by
// alpha·M distinct keys in a store of M slots, written with n copies and a
// b-bit checksum:
//
//	(1−e^{−αN})^N·(1−2^{−b})^N
//	+ (1−e^{−αN})^N·(1−(1−2^{−b})^N − N·2^{−b}(1−2^{−b})^{N−1})
//	+ Σ_{j=1}^{N−1} C(N,j)·(1−e^{−αN})^j·e^{−αN(N−j)}·(1−(1−2^{−b})^j)
//
// The first term is "every copy overwritten, no checksum matches", the second
// "every copy overwritten, two or more match", the third "some copies survive
// but a false match may tie with them". It is NaN unless alpha ≥ 0 is finite,
// 1 ≤ n ≤ MaxN and 1 ≤ b ≤ MaxChecksumBits.
func KeyWriteNoAnswer(alpha float64, n, b int) float64 {
	if !validAlpha(alpha) || !validN(n) || !validBits(b) {
		return math.NaN()
	}
	return noAnswer(alpha, n, math.Ldexp(1, -b))
}

// KeyWriteWrong is the paper's bound (§4, Appendix A.5 (ii)) on the
// probability that a Key-Write query returns a wrong value:
// (1−e^{−αN})^N·N·2^{−b}, every copy overwritten and one of the N overwriting
// keys sharing the queried key's checksum (a union bound over the copies).
// Arguments as for KeyWriteNoAnswer.
func KeyWriteWrong(alpha float64, n, b int) float64 {
	if !validAlpha(alpha) || !validN(n) || !validBits(b) {
		return math.NaN()
	}
	return wrong(alpha, n, math.Ldexp(1, -b))
}

// KeyWriteThresholdNoAnswer bounds the probability that a Key-Write query with
// consensus threshold t (a value must have at least t of the n votes and more
// votes than any other value, as keywrite.Store.Query decides) does not return
// the right value: no answer or a wrong one. t = 0 means 1, plain plurality.
//
// Derivation, in the paper's model (each copy overwritten independently with
// probability q = 1−e^{−αN}, each overwritten copy matching the checksum
// independently with probability ε = 2^{−b}): let K ~ Bin(N, 1−q) be the copies
// that survive and, given K = k, F ~ Bin(N−k, ε) the overwritten copies that
// match the checksum. The right value has exactly K votes and any other value
// at most F, so the answer is right whenever K ≥ t and K > F. Hence
//
//	P(no right answer) ≤ Σ_{k<t} P(K=k) + Σ_{k≥t} P(K=k)·P(F ≥ k | K=k)
//
// which is what this function returns. It is a sum of non-negative terms, so
// it keeps its precision when tiny. At t = 1 it is within 2N·ε of
// KeyWriteNoAnswer: the paper counts every false match beside surviving copies
// as a possible tie, and drops the single false match over N lost copies,
// which it counts as wrong instead. Arguments as for KeyWriteNoAnswer plus
// 0 ≤ t ≤ n.
func KeyWriteThresholdNoAnswer(alpha float64, n, t, b int) float64 {
	if !validAlpha(alpha) || !validN(n) || !validBits(b) || t < 0 || t > n {
		return math.NaN()
	}
	t = max(t, 1)
	q, s := overwritten(alpha, n)
	eps := math.Ldexp(1, -b)
	var sum float64
	for k := 0; k <= n; k++ {
		pk := binom(n, k) * math.Pow(s, float64(k)) * math.Pow(q, float64(n-k))
		if k < t {
			sum += pk
			continue
		}
		sum += pk * binomTail(n-k, eps, k)
	}
	return sum
}

// KeyWriteThresholdWrong bounds the probability that a Key-Write query with
// consensus threshold t returns a wrong value. In the model of
// KeyWriteThresholdNoAnswer a wrong value can win only if at least t and more
// than K copies carry it, and at most F do, so
//
//	P(wrong) ≤ Σ_k P(K=k)·P(F ≥ max(t, k+1) | K=k),
//
// which assumes the worst case that all false matches carry one value. Raising
// t from 1 to 2 turns the leading term from ≈ q^N·N·ε into ≈ q^N·C(N,2)·ε², the
// trade the paper describes: fewer wrong answers for more empty ones.
// Arguments as for KeyWriteThresholdNoAnswer.
func KeyWriteThresholdWrong(alpha float64, n, t, b int) float64 {
	if !validAlpha(alpha) || !validN(n) || !validBits(b) || t < 0 || t > n {
		return math.NaN()
	}
	t = max(t, 1)
	q, s := overwritten(alpha, n)
	eps := math.Ldexp(1, -b)
	var sum float64
	for k := 0; k <= n; k++ {
		pk := binom(n, k) * math.Pow(s, float64(k)) * math.Pow(q, float64(n-k))
		sum += pk * binomTail(n-k, eps, max(t, k+1))
	}
	return sum
}

// PostcardFalseMatch is p = ((|V|+1)·2^{−b})^B, the probability that a chunk
// of B b-bit slots written by other flows decodes as a valid path of the
// queried flow (every slot decodes to one of the |V| values or to ⊔). It is
// computed in logarithms, so p = 2^{−70} for the paper's example is exact to
// the last bits. It is NaN unless 1 ≤ hops ≤ MaxHops, 1 ≤ b ≤ MaxChecksumBits
// and 1 ≤ values ≤ 2^b − 1.
func PostcardFalseMatch(b, hops int, values float64) float64 {
	if !validBits(b) || hops < 1 || hops > MaxHops || !(values >= 1) || values+1 > math.Ldexp(1, b) {
		return math.NaN()
	}
	return math.Exp(float64(hops) * (math.Log1p(values) - float64(b)*math.Ln2))
}

// PostcardNoOutput is the paper's bound (Appendix A.6) on the probability that
// a Postcarding query returns no path, for a flow followed by alpha·C flows in
// a store of C chunks of hops b-bit slots, each path written to n chunks, hop
// values from a set of |V| = values elements. With p = PostcardFalseMatch:
//
//	(1−e^{−αN})^N·(1−p)^N + (1−e^{−αN})^N·(1−(1−p)^N − N·p·(1−p)^{N−1})
//	+ Σ_{j=1}^{N−1} C(N,j)(1−e^{−αN})^j e^{−αN(N−j)} (1−(1−p)^j)
//
// It is NaN when PostcardFalseMatch is, or unless alpha ≥ 0 is finite and
// 1 ≤ n ≤ MaxN.
func PostcardNoOutput(alpha float64, n, b, hops int, values float64) float64 {
	p := PostcardFalseMatch(b, hops, values)
	if math.IsNaN(p) || !validAlpha(alpha) || !validN(n) {
		return math.NaN()
	}
	return noAnswer(alpha, n, p)
}

// PostcardWrong is the paper's bound (Appendix A.6) on the probability that a
// Postcarding query returns a wrong path: (1−e^{−αN})^N·N·p. Arguments as for
// PostcardNoOutput.
func PostcardWrong(alpha float64, n, b, hops int, values float64) float64 {
	p := PostcardFalseMatch(b, hops, values)
	if math.IsNaN(p) || !validAlpha(alpha) || !validN(n) {
		return math.NaN()
	}
	return wrong(alpha, n, p)
}

// noAnswer is the common form of the Key-Write and Postcarding no-answer
// bounds for a per-copy false-match probability p.
func noAnswer(alpha float64, n int, p float64) float64 {
	q, _ := overwritten(alpha, n)
	qn := math.Pow(q, float64(n))
	// 1−(1−p)^N − N·p·(1−p)^{N−1} is P(Bin(N, p) ≥ 2); summing its terms
	// avoids the cancellation of the paper's form when p is tiny.
	sum := qn*powComplement(p, n) + qn*binomTail(n, p, 2)
	for j := 1; j < n; j++ {
		sum += binom(n, j) * math.Pow(q, float64(j)) * math.Exp(-alpha*float64(n*(n-j))) * atLeastOne(j, p)
	}
	return sum
}

// wrong is the common form of the wrong-answer bounds: q^N·N·p.
func wrong(alpha float64, n int, p float64) float64 {
	q, _ := overwritten(alpha, n)
	return math.Pow(q, float64(n)) * float64(n) * p
}

// overwritten returns q = 1−e^{−αN}, the probability that one copy of a key is
// overwritten by the N·α·M copies written after it, and s = e^{−αN} = 1−q,
// each computed without cancellation.
func overwritten(alpha float64, n int) (q, s float64) {
	x := alpha * float64(n)
	return -math.Expm1(-x), math.Exp(-x)
}

// powComplement returns (1−p)^k.
func powComplement(p float64, k int) float64 {
	if k == 0 {
		return 1
	}
	return math.Exp(float64(k) * math.Log1p(-p))
}

// atLeastOne returns 1−(1−p)^j, exact for tiny p.
func atLeastOne(j int, p float64) float64 {
	if j == 0 {
		return 0
	}
	return -math.Expm1(float64(j) * math.Log1p(-p))
}

// binomTail returns P(Bin(n, p) ≥ m) as a sum of non-negative terms.
func binomTail(n int, p float64, m int) float64 {
	m = max(m, 0)
	var sum float64
	for k := m; k <= n; k++ {
		sum += binom(n, k) * math.Pow(p, float64(k)) * powComplement(p, n-k)
	}
	return sum
}

// binom returns the binomial coefficient C(n, k): exact while the running
// products stay below 2^53 (every n up to 50), within a few ulps beyond.
func binom(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	k = min(k, n-k)
	c := 1.0
	for i := 1; i <= k; i++ {
		c = c * float64(n-k+i) / float64(i)
	}
	return math.Round(c)
}

func validAlpha(alpha float64) bool { return alpha >= 0 && !math.IsInf(alpha, 1) }
func validN(n int) bool             { return n >= 1 && n <= MaxN }
func validBits(b int) bool          { return b >= 1 && b <= MaxChecksumBits }
