// Package sketch is the hash contract and the local form of DTA's
// Sketch-Merge primitive: a count-min or count-sketch of Rows × Columns
// signed 64-bit counters that a reporter (a switch agent) updates per packet
// and flushes per epoch, and that the collector holds as the network-wide
// sum of every reporter's flushes. Because sketches are linear, the counters
// a collector accumulates by fetch-and-add over all reporters equal, counter
// for counter, the sketch of the union of their streams.
//
// Which counter a key updates in each row, and with which sign, is fixed
// here (Key, Column, Sign) and pinned by golden vectors: reporters, the
// translator and the collector's queries all call these functions. The
// package uses only the standard library and allocates nothing per update.
// It does no I/O.
package sketch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/dta-go/dta/hashing"
)

// Kind is the sketch's estimator.
type Kind uint8

// The sketch kinds. The zero value is invalid.
const (
	// CountMin adds a key's count to one counter per row; a point estimate is
	// the minimum over the rows (never below the true count for non-negative
	// updates).
	CountMin Kind = iota + 1
	// CountSketch adds ±count (a per-row sign hash) to one counter per row; a
	// point estimate is the median over the rows of sign × counter (unbiased;
	// counts may be negative).
	CountSketch
)

// String returns the configuration name of the kind.
func (k Kind) String() string {
	switch k {
	case CountMin:
		return "countmin"
	case CountSketch:
		return "countsketch"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ParseKind maps a configuration name to a Kind.
func ParseKind(s string) (Kind, error) {
	switch s {
	case "countmin", "count-min", "cms":
		return CountMin, nil
	case "countsketch", "count-sketch", "cs":
		return CountSketch, nil
	}
	return 0, fmt.Errorf("unknown sketch kind %q (want countmin or countsketch)", s)
}

// Limits of a geometry.
const (
	MaxRows    = 16
	MaxColumns = 1 << 32
)

// Geometry is a sketch's shape. Every reporter of a store and the store
// itself must use the same one: merged counters are meaningful only then.
type Geometry struct {
	Rows    int    // d: independent hash rows, 1..16
	Columns uint64 // w: counters per row, 2..2^32
	Kind    Kind
}

// Validate reports the first thing wrong with g, naming the field.
func (g Geometry) Validate() error {
	switch {
	case g.Rows < 1 || g.Rows > MaxRows:
		return fmt.Errorf("rows: %d out of range [1, %d]", g.Rows, MaxRows)
	case g.Columns < 2 || g.Columns > MaxColumns:
		return fmt.Errorf("columns: %d out of range [2, 2^32]", g.Columns)
	case g.Kind != CountMin && g.Kind != CountSketch:
		return errors.New("kind: want countmin or countsketch")
	}
	return nil
}

// Counters is Rows × Columns.
func (g Geometry) Counters() uint64 { return uint64(g.Rows) * g.Columns }

// Keyed holds one key's hash, computed once for every row.
type Keyed struct{ seed uint64 }

// Key hashes key: the crc32c family's multiplicative 64-bit key hash
// (hashing.Mix64: its 8-byte little-endian words and tail multiplied in,
// finished with MurmurHash3's 64-bit finalizer).
func Key(key []byte) Keyed { return Keyed{seed: hashing.Mix64(key)} }

// Key32 is Key of the 4 big-endian bytes of k (a 32-bit key as it travels).
func Key32(k uint32) Keyed {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], k)
	return Key(b[:])
}

// row is the 64-bit hash of row r.
func (k Keyed) row(r int) uint64 { return hashing.Fmix64(k.seed + uint64(r+1)*0x9E3779B97F4A7C15) }

// Column is the key's counter in row r of a row of columns counters: the
// high 32 bits of the row hash reduced with a multiply-shift (uniform for any
// column count).
func (k Keyed) Column(r int, columns uint64) uint64 {
	hi, _ := bits.Mul64(k.row(r)>>32<<32, columns)
	return hi
}

// Sign is the key's sign in row r (+1 or -1), from the row hash's lowest
// bit, independent of the column bits. Count-min ignores it.
func (k Keyed) Sign(r int) int64 {
	return 1 - 2*int64(k.row(r)&1)
}

// Sketch is the local form a reporter updates: Rows × Columns counters.
type Sketch struct {
	g Geometry
	c []int64
}

// New returns an empty sketch of geometry g.
func New(g Geometry) (*Sketch, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if g.Counters() > 1<<28 {
		return nil, fmt.Errorf("rows × columns = %d counters: a local sketch holds at most 2^28", g.Counters())
	}
	return &Sketch{g: g, c: make([]int64, g.Counters())}, nil
}

// Geometry returns the sketch's shape.
func (s *Sketch) Geometry() Geometry { return s.g }

// Update adds count to key (count-min: to one counter per row; count-sketch:
// sign × count). It allocates nothing.
func (s *Sketch) Update(key []byte, count int64) { s.UpdateKeyed(Key(key), count) }

// UpdateKeyed is Update with the key hashed already.
func (s *Sketch) UpdateKeyed(k Keyed, count int64) {
	for r := range s.g.Rows {
		i := uint64(r)*s.g.Columns + k.Column(r, s.g.Columns)
		if s.g.Kind == CountSketch {
			s.c[i] += k.Sign(r) * count
		} else {
			s.c[i] += count
		}
	}
}

// Row returns row r's counters (aliasing the sketch).
func (s *Sketch) Row(r int) []int64 { return s.c[uint64(r)*s.g.Columns : uint64(r+1)*s.g.Columns] }

// Add adds o's counters to s (the merge a collector performs by
// fetch-and-add). The geometries must be equal.
func (s *Sketch) Add(o *Sketch) error {
	if s.g != o.g {
		return fmt.Errorf("sketch geometries differ: %+v and %+v", s.g, o.g)
	}
	for i, v := range o.c {
		s.c[i] += v
	}
	return nil
}

// Reset zeroes every counter (a new epoch).
func (s *Sketch) Reset() { clear(s.c) }

// Estimate is the point estimate of key's count.
func (s *Sketch) Estimate(key []byte) int64 {
	var buf [MaxRows]int64
	k := Key(key)
	for r := range s.g.Rows {
		buf[r] = s.c[uint64(r)*s.g.Columns+k.Column(r, s.g.Columns)]
	}
	return Estimate(s.g.Kind, k, buf[:s.g.Rows])
}

// Estimate combines a key's counters, one per row in row order: count-min
// takes the minimum, count-sketch the median of sign × counter (the mean of
// the two middle values for an even row count, rounded toward zero).
func Estimate(kind Kind, k Keyed, counters []int64) int64 {
	if len(counters) == 0 {
		return 0
	}
	if kind == CountMin {
		return slices.Min(counters)
	}
	var buf [MaxRows]int64
	v := buf[:len(counters)]
	for r, c := range counters {
		v[r] = k.Sign(r) * c
	}
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// Norms are an epoch's stream norms as the sketch estimates them.
type Norms struct {
	// L1 is the total count: for count-min the sum of row 0 (exact when
	// every update is non-negative); for count-sketch the median over rows of
	// Σ|counter|, an upper bound of the true L1.
	L1 float64
	// L2 is the Euclidean norm of the count vector: for count-sketch the
	// square root of the median over rows of Σcounter² (the AMS estimate of
	// F2); for count-min the square root of the minimum over rows of
	// Σcounter², never below the true L2 for non-negative updates.
	L2 float64
}

// RowNorms returns Σ|c| and Σc² of one row.
func RowNorms(row []int64) (l1, f2 float64) {
	for _, c := range row {
		f := float64(c)
		if f < 0 {
			l1 -= f
		} else {
			l1 += f
		}
		f2 += f * f
	}
	return l1, f2
}

// CombineNorms turns per-row Σ|c| and Σc² (in row order) into Norms.
func CombineNorms(kind Kind, l1, f2 []float64) Norms {
	if len(l1) == 0 {
		return Norms{}
	}
	if kind == CountMin {
		return Norms{L1: l1[0], L2: sqrt(slices.Min(f2))}
	}
	return Norms{L1: median(l1), L2: sqrt(median(f2))}
}

// Norms estimates the norms of the sketch's stream.
func (s *Sketch) Norms() Norms {
	l1 := make([]float64, s.g.Rows)
	f2 := make([]float64, s.g.Rows)
	for r := range s.g.Rows {
		l1[r], f2[r] = RowNorms(s.Row(r))
	}
	return CombineNorms(s.g.Kind, l1, f2)
}

func median(v []float64) float64 {
	w := slices.Clone(v)
	slices.Sort(w)
	n := len(w)
	if n%2 == 1 {
		return w[n/2]
	}
	return (w[n/2-1] + w[n/2]) / 2
}

func sqrt(x float64) float64 {
	if x <= 0 {
		return 0
	}
	return math.Sqrt(x)
}

// Run is a maximal stretch of non-zero counters of one row, as a report
// carries them.
type Run struct {
	Row      int
	Column   uint64
	Counters []int64 // aliases the sketch
}

// Runs calls fn for every run of at most maxLen non-zero counters, row by
// row, skipping zero counters (the translator would skip them anyway; a
// reporter need not send them). It stops at fn's first error.
func (s *Sketch) Runs(maxLen int, fn func(Run) error) error {
	if maxLen < 1 {
		return fmt.Errorf("run length %d < 1", maxLen)
	}
	for r := range s.g.Rows {
		row := s.Row(r)
		for c := 0; c < len(row); {
			if row[c] == 0 {
				c++
				continue
			}
			end := c
			for end < len(row) && row[end] != 0 && end-c < maxLen {
				end++
			}
			if err := fn(Run{Row: r, Column: uint64(c), Counters: row[c:end]}); err != nil {
				return err
			}
			c = end
		}
	}
	return nil
}
