package teabench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Zipf draws ranks 0..n−1 with P(r) ∝ 1/(r+1)^α, for any α ≥ 0 (math/rand's
// Zipf needs α > 1; the paper's workloads use 0.90–0.99), by inverting the
// cumulative distribution.
type Zipf struct {
	cdf []float64
	r   *rand.Rand
}

// NewZipf returns a Zipf generator over n ranks, seeded.
func NewZipf(n int, alpha float64, seed uint64) (*Zipf, error) {
	if n < 1 {
		return nil, fmt.Errorf("keys: %d, want at least 1", n)
	}
	if alpha < 0 || math.IsNaN(alpha) {
		return nil, fmt.Errorf("alpha: %v, want ≥ 0", alpha)
	}
	cdf := make([]float64, n)
	var sum float64
	for i := range cdf {
		sum += math.Pow(float64(i+1), -alpha)
		cdf[i] = sum
	}
	for i := range cdf {
		cdf[i] /= sum
	}
	return &Zipf{cdf: cdf, r: rand.New(rand.NewPCG(seed, seed^0x21BF))}, nil
}

// Next returns the next rank.
func (z *Zipf) Next() int {
	u := z.r.Float64()
	i := sort.SearchFloat64s(z.cdf, u)
	return min(i, len(z.cdf)-1)
}

// TopShare returns the probability mass of the k most popular ranks: the
// share of lookups an ideal cache of k entries answers.
func (z *Zipf) TopShare(k int) float64 {
	if k <= 0 {
		return 0
	}
	return z.cdf[min(k, len(z.cdf))-1]
}

// FiveTuples returns n distinct random IPv4 5-tuples of 13 bytes (source and
// destination address, ports, protocol TCP or UDP), as the paper's
// keyspace of "1 million randomly generated IPv4 5-tuples", padded or cut
// to size bytes, flat: key i is b[i*size:(i+1)*size].
func FiveTuples(n, size int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 0x5EED))
	b := make([]byte, n*size)
	seen := make(map[string]struct{}, n)
	var t [13]byte
	for i := 0; i < n; {
		a, c := r.Uint64(), r.Uint64()
		for j := range 8 {
			t[j] = byte(a >> (8 * j))
		}
		for j := range 4 {
			t[8+j] = byte(c >> (8 * j))
		}
		t[12] = 6
		if c>>32&1 == 1 {
			t[12] = 17
		}
		k := b[i*size : (i+1)*size]
		copy(k, t[:])
		for j := 13; j < size; j++ { // longer keys: the rest random
			k[j] = byte(r.Uint32())
		}
		if _, dup := seen[string(k)]; dup {
			continue
		}
		seen[string(k)] = struct{}{}
		i++
	}
	return b
}
