package tea

import (
	"fmt"
	"math/bits"
	"sync/atomic"
)

// Count-min geometry of the paper's prototype (§5.1): 4 rows of 64 K counters.
const (
	DefaultSketchRows    = 4
	DefaultSketchColumns = 1 << 16
	MaxSketchRows        = 8
)

// sketchMultipliers are the odd constants of the rows' multiply-shift
// hashes: row r's column of a key hashing to h is the top log2(columns)
// bits of h × sketchMultipliers[r] (mod 2^64).
var sketchMultipliers = [MaxSketchRows]uint64{
	0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
	0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x94D049BB133111EB, 0xBF58476D1CE4E5B9,
}

// bloomWords is the size of the filter that keeps a key from being reported
// twice per epoch (2^18 bits, 32 KiB).
const bloomWords = 1 << 12

// popularity is the switch's count-min sketch of lookups per key, with the
// digest's duplicate filter. Safe for concurrent use; no allocation.
type popularity struct {
	rows  int
	shift uint
	mask  uint64
	c     []atomic.Uint32 // rows × columns, row-major
	bloom []atomic.Uint64
}

func newPopularity(rows int, columns uint64) (*popularity, error) {
	if rows < 1 || rows > MaxSketchRows {
		return nil, fmt.Errorf("sketch_rows: %d out of range [1, %d]", rows, MaxSketchRows)
	}
	if columns < 2 || columns > 1<<24 || columns&(columns-1) != 0 {
		return nil, fmt.Errorf("sketch_columns: %d, want a power of two in [2, 2^24]", columns)
	}
	return &popularity{
		rows:  rows,
		shift: uint(64 - bits.TrailingZeros64(columns)),
		mask:  columns - 1,
		c:     make([]atomic.Uint32, uint64(rows)*columns),
		bloom: make([]atomic.Uint64, bloomWords),
	}, nil
}

func (p *popularity) index(h uint64, r int) uint64 {
	return uint64(r)*(p.mask+1) + (h*sketchMultipliers[r])>>p.shift
}

// add counts one lookup of a key hashing to h and returns its new estimate.
func (p *popularity) add(h uint64) uint32 {
	est := ^uint32(0)
	for r := range p.rows {
		if v := p.c[p.index(h, r)].Add(1); v < est {
			est = v
		}
	}
	return est
}

// estimate returns the count-min estimate of lookups of a key hashing to h.
func (p *popularity) estimate(h uint64) uint32 {
	est := ^uint32(0)
	for r := range p.rows {
		if v := p.c[p.index(h, r)].Load(); v < est {
			est = v
		}
	}
	return est
}

// firstReport reports whether h is not yet in the duplicate filter, and
// adds it (two probes into 2^18 bits).
func (p *popularity) firstReport(h uint64) bool {
	fresh := false
	for _, x := range [2]uint64{h, bits.RotateLeft64(h, 32) * sketchMultipliers[0]} {
		bit := x >> (64 - 18)
		w, m := &p.bloom[bit/64], uint64(1)<<(bit%64)
		if w.Or(m)&m == 0 {
			fresh = true
		}
	}
	return fresh
}

func (p *popularity) reset() {
	for i := range p.c {
		p.c[i].Store(0)
	}
	for i := range p.bloom {
		p.bloom[i].Store(0)
	}
}
