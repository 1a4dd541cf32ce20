package sketchmerge

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/sketch"
)

// ErrEpoch is returned for an epoch the store does not hold.
var ErrEpoch = errors.New("sketchmerge: epoch not held")

// Store is a Sketch-Merge store: a Spec bound to a region.
type Store struct {
	spec Spec
	mem  *region.Region
}

// NewStore binds spec to mem, which must be at least spec.RegionSize() bytes.
func NewStore(spec Spec, mem *region.Region) (*Store, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if mem.Size() < spec.RegionSize() {
		return nil, fmt.Errorf("region of %d bytes is smaller than the %d the store needs", mem.Size(), spec.RegionSize())
	}
	return &Store{spec: spec, mem: mem}, nil
}

// Spec returns the store's geometry.
func (s *Store) Spec() Spec { return s.spec }

// EpochInfo is one copy's epoch.
type EpochInfo struct {
	Epoch uint32
	// Open: the newest epoch, still accumulating. Otherwise closed (late
	// reports may still add to it until its copy is recycled) or, for the
	// one after the newest, prepared (cleared, no report yet).
	State string
}

// Epochs lists the epochs the copies hold, oldest first.
func (s *Store) Epochs() ([]EpochInfo, error) {
	var tags []uint64
	for c := range s.spec.Epochs {
		t, err := s.mem.Load64(s.spec.TagOffset(c))
		if err != nil {
			return nil, err
		}
		if t != 0 {
			tags = append(tags, t)
		}
	}
	slices.Sort(tags)
	out := make([]EpochInfo, 0, len(tags))
	// The highest tag is the prepared copy (cleared ahead), the one below it
	// the open epoch; a store written by a translator always has both, but
	// for the last epoch, which has no next one to prepare.
	last := len(tags) > 0 && tags[len(tags)-1] == Tag(LastEpoch)
	for i, t := range tags {
		st := "closed"
		switch {
		case last && i == len(tags)-1:
			st = "open"
		case last:
		case i == len(tags)-1 && len(tags) > 1:
			st = "prepared"
		case i == len(tags)-2 || len(tags) == 1:
			st = "open"
		}
		out = append(out, EpochInfo{Epoch: uint32(t - 1), State: st})
	}
	return out, nil
}

// Latest returns the newest closed epoch (the one a query reads by default).
func (s *Store) Latest() (uint32, error) {
	eps, err := s.Epochs()
	if err != nil {
		return 0, err
	}
	for i := len(eps) - 1; i >= 0; i-- {
		if eps[i].State == "closed" {
			return eps[i].Epoch, nil
		}
	}
	return 0, fmt.Errorf("%w: no closed epoch yet", ErrEpoch)
}

// holds checks that e's copy holds e.
func (s *Store) holds(e uint32) error {
	t, err := s.mem.Load64(s.spec.TagOffset(s.spec.Copy(e)))
	if err != nil {
		return err
	}
	if t != Tag(e) {
		if t == 0 {
			return fmt.Errorf("%w: %d (its copy has never been used)", ErrEpoch, e)
		}
		return fmt.Errorf("%w: %d (its copy holds epoch %d)", ErrEpoch, e, t-1)
	}
	return nil
}

// Counter returns the counter of epoch e, row r, column w.
func (s *Store) Counter(e uint32, r int, w uint64) (int64, error) {
	v, err := s.mem.Load64(s.spec.CounterOffset(e, r, w))
	return int64(v), err
}

// Row copies row r of epoch e into dst (grown as needed) and returns it.
func (s *Store) Row(e uint32, r int, dst []int64) ([]int64, error) {
	if err := s.holds(e); err != nil {
		return nil, err
	}
	if r < 0 || r >= s.spec.Rows {
		return nil, ErrRow
	}
	dst = slices.Grow(dst[:0], int(s.spec.Columns))[:s.spec.Columns]
	for w := range s.spec.Columns {
		v, err := s.mem.Load64(s.spec.CounterOffset(e, r, w))
		if err != nil {
			return nil, err
		}
		dst[w] = int64(v)
	}
	return dst, nil
}

// Estimate is the point estimate of key's count in epoch e (count-min: the
// minimum over the rows; count-sketch: the median of sign × counter).
func (s *Store) Estimate(e uint32, key []byte) (int64, error) {
	if err := s.holds(e); err != nil {
		return 0, err
	}
	return s.estimate(e, sketch.Key(key))
}

func (s *Store) estimate(e uint32, k sketch.Keyed) (int64, error) {
	var buf [sketch.MaxRows]int64
	for r := range s.spec.Rows {
		v, err := s.Counter(e, r, k.Column(r, s.spec.Columns))
		if err != nil {
			return 0, err
		}
		buf[r] = v
	}
	return sketch.Estimate(s.spec.Kind, k, buf[:s.spec.Rows]), nil
}

// Hitter is a key and its estimate.
type Hitter struct {
	Key      []byte
	Estimate int64
}

// TopK returns the k candidates with the largest estimates in epoch e,
// largest first (ties: candidate order). A sketch holds no keys: the
// candidates come from the caller (e.g. the keys a flow table saw).
func (s *Store) TopK(e uint32, candidates [][]byte, k int) ([]Hitter, error) {
	if err := s.holds(e); err != nil {
		return nil, err
	}
	hs := make([]Hitter, 0, len(candidates))
	for _, c := range candidates {
		est, err := s.estimate(e, sketch.Key(c))
		if err != nil {
			return nil, err
		}
		hs = append(hs, Hitter{Key: c, Estimate: est})
	}
	slices.SortStableFunc(hs, func(a, b Hitter) int { return cmp.Compare(b.Estimate, a.Estimate) })
	if k >= 0 && k < len(hs) {
		hs = hs[:k]
	}
	return hs, nil
}

// Norms estimates the L1 and L2 norms of epoch e's stream.
func (s *Store) Norms(e uint32) (sketch.Norms, error) {
	if err := s.holds(e); err != nil {
		return sketch.Norms{}, err
	}
	l1 := make([]float64, s.spec.Rows)
	f2 := make([]float64, s.spec.Rows)
	var row []int64
	for r := range s.spec.Rows {
		var err error
		if row, err = s.Row(e, r, row); err != nil {
			return sketch.Norms{}, err
		}
		l1[r], f2[r] = sketch.RowNorms(row)
	}
	return sketch.CombineNorms(s.spec.Kind, l1, f2), nil
}

// Reset zeroes the store: every copy and tag.
func (s *Store) Reset() { s.mem.Zero() }
