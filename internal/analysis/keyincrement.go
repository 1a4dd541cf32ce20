package analysis

import "math"

// Key-Increment is a count-min sketch over ONE shared array of S counters: a
// key adds its delta to N counters chosen by N hashes (which may repeat), and a
// query returns the minimum of those N counters. The classic count-min sketch
// uses N separate rows of S/N counters instead; the functions below are
// derived for the shared array and say where it differs.

// KeyIncrementMeanError bounds the expected overestimate of a Key-Increment
// query as a fraction of W, the total of all counts in the store since its last
// reset: E[estimate − c] ≤ (N·W − c)/S ≤ N·W/S, so it returns n/slots.
//
// Derivation: the estimate is at most the key's first counter, which holds
// c·(1 + #{j ≥ 2: h_j(x) = h_1(x)}) + Σ_{y≠x} c_y·#{j: h_j(y) = h_1(x)}. Each
// of the key's N−1 other hashes and each of the N hashes of every other key
// hits that counter with probability 1/S, so its expected excess over c is
// c·(N−1)/S + (W−c)·N/S. This is the classic sketch's W/(S/N) per row; the
// minimum does not improve it (it helps in the tail, KeyIncrementTail). It is
// NaN unless 1 ≤ n ≤ MaxN and slots ≥ 1.
func KeyIncrementMeanError(n int, slots uint64) float64 {
	if !validN(n) || slots < 1 {
		return math.NaN()
	}
	return float64(n) / float64(slots)
}

// KeyIncrementTail bounds the probability that a Key-Increment estimate
// exceeds the key's true count c by more than eps·W (W as for
// KeyIncrementMeanError), clamped to 1:
//
//	P(estimate − c > ε·W) ≤ (N/(ε·S))^N + 1 − Π_{k=1}^{N−1} (1 − k/S)
//
// Derivation for one shared array: let D be the event that the key's N hashes
// hit N distinct counters; the second term is 1 − P(D) (without D one counter
// holds at least 2c, and no bound in terms of the other keys holds). Given D,
// let E_i = Σ_{y≠x} c_y·Z_{y,i} be the other keys' mass on the key's counter i,
// with Z_{y,i} = #{j: h_j(y) = h_i(x)}. The Z of different keys are
// independent. For one key y and a set G of the key's (distinct) counters,
// Π_{i∈G} Z_{y,i} counts tuples of distinct hashes of y landing on them, so
// E[Π_{i∈G} Z_{y,i}] = N!/(N−|G|)!·S^{−|G|} ≤ (N/S)^{|G|}; expanding the product
// over all keys gives E[Π_i E_i] ≤ ((W−c)·N/S)^N. The estimate exceeds c + εW
// only if every E_i does, so only if Π_i E_i > (εW)^N, and Markov's inequality
// bounds that by (N·(W−c)/(ε·W·S))^N ≤ (N/(ε·S))^N. N rows of S/N counters give
// the same first term, (1/(ε·S/N))^N, and no second one: sharing one array
// costs exactly the key's self-collisions, about N(N−1)/(2S).
//
// It is NaN unless eps > 0 is finite, 1 ≤ n ≤ MaxN and slots ≥ 1.
func KeyIncrementTail(eps float64, n int, slots uint64) float64 {
	if !(eps > 0) || math.IsInf(eps, 1) || !validN(n) || slots < 1 {
		return math.NaN()
	}
	if slots < uint64(n) {
		return 1 // some of the key's hashes must collide
	}
	s := float64(slots)
	markov := math.Pow(float64(n)/(eps*s), float64(n))
	var logDistinct float64
	for k := 1; k < n; k++ {
		logDistinct += math.Log1p(-float64(k) / s)
	}
	return math.Min(1, markov-math.Expm1(logDistinct))
}

// KeyIncrementExact is the probability that a key's Key-Increment estimate
// equals its true count, when others other keys with positive counts share
// the store's slots counters and every key's N hashes are independent and
// uniform. It is an exact expression of that model, not a bound.
//
// The estimate is exact iff some counter of the key is hit by none of its own
// other hashes and by none of the N·others hashes of the other keys. Let s be
// the number of counters the key hits exactly once (its distribution follows
// from a chain over its N hashes). Given s, the others' hashes leave one of
// those counters untouched with probability 1 − P(all s hit), where
// P(all s hit) = Σ_m (−1)^m C(s,m)(1−m/S)^{N·others}. That alternating sum
// cancels when small, so it is computed instead as the row of T^{N·others} for
// the chain "k of the s counters hit so far" (stay 1−(s−k)/S, advance
// (s−k)/S), by repeated squaring of a non-negative matrix whose diagonal is
// recomputed at each step as exp(2^i·log1p(−(s−k)/S)). Only non-negative
// numbers are added, so this and KeyIncrementOverestimated keep their relative
// precision however small they are.
//
// For S → ∞ with others/S = α it tends to 1 − (1 − e^{−αN})^N. It is NaN unless
// 1 ≤ n ≤ MaxN, slots ≥ 1 and n·others fits in a uint64.
func KeyIncrementExact(others, slots uint64, n int) float64 {
	exact, _ := keyIncrementExact(others, slots, n)
	return exact
}

// KeyIncrementOverestimated is 1 − KeyIncrementExact, the probability that a
// key's estimate exceeds its true count, computed without the cancellation of
// that subtraction. Arguments as for KeyIncrementExact.
func KeyIncrementOverestimated(others, slots uint64, n int) float64 {
	_, over := keyIncrementExact(others, slots, n)
	return over
}

// keyIncrementExact returns P(exact) and P(overestimated), each summed from
// non-negative terms.
func keyIncrementExact(others, slots uint64, n int) (exact, over float64) {
	if !validN(n) || slots < 1 || others > math.MaxUint64/uint64(n) {
		return math.NaN(), math.NaN()
	}
	single := singletons(n, float64(slots))
	over = single[0]
	balls := uint64(n) * others
	for s := 1; s <= n; s++ {
		if single[s] == 0 {
			continue
		}
		missed, all := hitAll(s, balls, float64(slots))
		exact += single[s] * missed
		over += single[s] * all
	}
	return exact, over
}

// singletons returns, for a key whose n hashes fall uniformly on S counters,
// the distribution of the number of counters hit exactly once.
func singletons(n int, S float64) []float64 {
	// p[a][m]: a counters hit once, m hit more than once.
	p := make([][]float64, n+1)
	for i := range p {
		p[i] = make([]float64, n+1)
	}
	p[0][0] = 1
	for range n {
		next := make([][]float64, n+1)
		for i := range next {
			next[i] = make([]float64, n+1)
		}
		for a := range p {
			for m, v := range p[a] {
				if v == 0 {
					continue
				}
				if empty := S - float64(a+m); empty > 0 {
					next[a+1][m] += v * empty / S
				}
				if a > 0 {
					next[a-1][m+1] += v * float64(a) / S
				}
				if m > 0 {
					next[a][m] += v * float64(m) / S
				}
			}
		}
		p = next
	}
	dist := make([]float64, n+1)
	for a := range p {
		for _, v := range p[a] {
			dist[a] += v
		}
	}
	return dist
}

// hitAll returns, for balls thrown uniformly on S counters, the probabilities
// that at least one of s given counters stays empty (missed) and that all of
// them are hit (all).
func hitAll(s int, balls uint64, S float64) (missed, all float64) {
	// logStay[k] is the log of the chain's probability of staying in state
	// k for one step: the diagonal of T^e is exp(e·logStay[k]), set directly
	// rather than squared, whose rounding errors would grow with e.
	logStay := make([]float64, s+1)
	for k := range logStay {
		logStay[k] = math.Log1p(-float64(s-k) / S)
	}
	m := newSquare(s + 1) // T^(2^i)
	for k := 0; k <= s; k++ {
		m[k][k] = math.Exp(logStay[k])
		if k < s {
			m[k][k+1] = float64(s-k) / S
		}
	}
	v := make([]float64, s+1) // row 0 of T^(balls so far)
	v[0] = 1
	tmp := make([]float64, s+1)
	steps := 1.0 // 2^i
	for b := balls; b > 0; b >>= 1 {
		if b&1 == 1 {
			for j := range tmp {
				var sum float64
				for k := 0; k <= j; k++ {
					sum += v[k] * m[k][j]
				}
				tmp[j] = sum
			}
			copy(v, tmp)
		}
		if b>>1 == 0 {
			break
		}
		m = m.square()
		steps *= 2
		for k := 0; k <= s; k++ {
			m[k][k] = math.Exp(steps * logStay[k])
		}
	}
	for k := range s {
		missed += v[k]
	}
	return missed, v[s]
}

// square is a small upper-triangular matrix.
type square [][]float64

func newSquare(n int) square {
	m := make(square, n)
	for i := range m {
		m[i] = make([]float64, n)
	}
	return m
}

// square returns m·m; m is upper triangular with non-negative entries.
func (m square) square() square {
	r := newSquare(len(m))
	for i := range m {
		for j := i; j < len(m); j++ {
			var sum float64
			for k := i; k <= j; k++ {
				sum += m[i][k] * m[k][j]
			}
			r[i][j] = sum
		}
	}
	return r
}
