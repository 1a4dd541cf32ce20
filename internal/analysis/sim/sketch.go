package sim

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dta-go/dta/internal/analysis"
	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/sketchmerge"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/sketch"
)

// SketchConfig is one Sketch-Merge simulation: Reporters switches each
// sketch their share of one Zipf stream of Packets packets over Keys keys,
// flush it as one epoch through the production translation
// (sketchmerge.Spec.Add, sketchmerge.Opener) into a real region, and every
// key is then estimated with the production query (sketchmerge.Store).
type SketchConfig struct {
	Geometry  sketch.Geometry
	Epsilon   float64 // 0: the geometry's natural epsilon
	Reporters int
	Keys      int
	Packets   int
	Zipf      float64 // skew s, above 1 and at most MaxSketchZipf
	TopK      int     // heavy hitters compared
	Seed      uint64
}

// Limits of a SketchConfig: a simulation holds Keys keys (about 64 bytes
// each), Reporters + 1 sketches and a region of sketchmerge.MinEpochs
// copies, and draws Packets packets (a fraction of a microsecond each).
const (
	MaxSketchReporters = 1024
	MaxSketchKeys      = 1 << 24
	MaxSketchPackets   = 1 << 32
	MaxSketchZipf      = 100
	// MaxSketchBytes bounds the counters of the sketches and the region.
	MaxSketchBytes = 4 << 30
)

// sketchCheckEvery is how many packets or keys pass between two looks at
// the context.
const sketchCheckEvery = 1 << 16

// Validate reports the first thing wrong with c, naming the field.
func (c *SketchConfig) Validate() error {
	fe := func(field, format string, a ...any) error {
		return &analysis.FieldError{Field: field, Err: fmt.Errorf(format, a...)}
	}
	switch {
	case c.Reporters < 1 || c.Reporters > MaxSketchReporters:
		return fe("reporters", "%d out of range [1, %d]", c.Reporters, MaxSketchReporters)
	case c.Keys < 1 || c.Keys > MaxSketchKeys:
		return fe("keys", "%d out of range [1, 2^24]", c.Keys)
	case c.Packets < 1 || uint64(c.Packets) > MaxSketchPackets:
		return fe("packets", "%d out of range [1, 2^32]", c.Packets)
	case math.IsNaN(c.Zipf) || c.Zipf <= 1 || c.Zipf > MaxSketchZipf:
		return fe("zipf", "skew %v out of range (1, %d]", c.Zipf, MaxSketchZipf)
	case c.TopK < 0:
		return fe("top k", "%d is negative", c.TopK)
	}
	if err := c.Geometry.Validate(); err != nil {
		return fe("geometry", "%v", err)
	}
	copies := uint64(c.Reporters) + 1 + sketchmerge.MinEpochs
	if n := c.Geometry.Counters(); n > MaxSketchBytes/8/copies {
		return fe("geometry", "%d × %d counters in %d reporters' sketches, the union's and %d epochs need %s, more than the %s a simulation may use",
			c.Geometry.Rows, c.Geometry.Columns, c.Reporters, sketchmerge.MinEpochs, bytesIEC(n*8*copies), bytesIEC(MaxSketchBytes))
	}
	return nil
}

// SketchResult is what a Sketch-Merge simulation measured beside the bound.
type SketchResult struct {
	Bounds analysis.SketchBounds `json:"bounds"`
	// Merged is true when the collector's counters equal, counter for
	// counter, the sketch of the union stream built locally.
	Merged bool `json:"merged_equals_union"`
	// Norm is the true L1 (count-min) or L2 (count-sketch) of the stream.
	Norm float64 `json:"norm"`
	// Exceeded is the share of keys whose error exceeds Epsilon·Norm (the
	// bound says at most Bounds.Delta in expectation).
	Exceeded float64 `json:"exceeded"`
	// MaxError is the largest error over the keys, in units of Norm.
	MaxError float64 `json:"max_error_over_norm"`
	// TopKRecall is the share of the true top-k keys that the estimated
	// top-k (over all keys as candidates) holds.
	TopKRecall float64 `json:"topk_recall"`
}

// RunSketch runs one Sketch-Merge simulation. It refuses a c that does not
// Validate and stops with ctx's error when ctx is done.
func RunSketch(ctx context.Context, c SketchConfig) (SketchResult, error) {
	if err := c.Validate(); err != nil {
		return SketchResult{}, fmt.Errorf("sim: sketch: %w", err)
	}
	b, err := analysis.SketchGuarantee(c.Geometry, sketchmerge.MinEpochs, c.Epsilon)
	if err != nil {
		return SketchResult{}, err
	}
	spec := sketchmerge.Spec{Geometry: c.Geometry, Epochs: sketchmerge.MinEpochs}
	rc := region.DefaultConfig()
	rc.HugePages, rc.Prefault, rc.Size = region.HugePagesOff, false, spec.RegionSize()
	mem, err := region.New(rc, nil)
	if err != nil {
		return SketchResult{}, err
	}
	defer mem.Close()
	st, err := sketchmerge.NewStore(spec, mem)
	if err != nil {
		return SketchResult{}, err
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x5e7c))
	z := rand.NewZipf(rng, c.Zipf, 1, uint64(c.Keys-1))
	keys := make([][]byte, c.Keys)
	for i := range keys {
		keys[i] = binary.BigEndian.AppendUint64(nil, uint64(i)*0x9E3779B97F4A7C15)
	}
	truth := make([]int64, c.Keys)
	reps := make([]*sketch.Sketch, c.Reporters)
	union, _ := sketch.New(c.Geometry)
	for i := range reps {
		if reps[i], err = sketch.New(c.Geometry); err != nil {
			return SketchResult{}, err
		}
	}
	for p := range c.Packets {
		if p%sketchCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return SketchResult{}, err
			}
		}
		k := z.Uint64()
		truth[k]++
		reps[p%c.Reporters].Update(keys[k], 1)
		union.Update(keys[k], 1)
	}
	const epoch = 1
	o := sketchmerge.NewOpener(&spec)
	sink := &opSink{mem: mem}
	bt := memop.NewBatch(64, 0)
	o.Open(bt, 0, epoch)
	if err := sink.Apply(bt.Ops); err != nil {
		return SketchResult{}, err
	}
	var v []byte
	for _, rep := range reps {
		err := rep.Runs(64, func(r sketch.Run) error {
			v = v[:0]
			for _, x := range r.Counters {
				v = binary.BigEndian.AppendUint64(v, uint64(x))
			}
			run := sketchmerge.Run{Epoch: epoch, Row: r.Row, Column: r.Column, Counters: v}
			if err := spec.Check(&run); err != nil {
				return err
			}
			bt.Reset()
			spec.Add(bt, 0, &run)
			return sink.Apply(bt.Ops)
		})
		if err != nil {
			return SketchResult{}, err
		}
	}
	res := SketchResult{Bounds: b, Merged: true}
	var row []int64
	for r := range c.Geometry.Rows {
		if row, err = st.Row(epoch, r, row); err != nil {
			return SketchResult{}, err
		}
		res.Merged = res.Merged && slices.Equal(row, union.Row(r))
	}
	var l1, f2 float64
	for _, n := range truth {
		l1 += float64(n)
		f2 += float64(n) * float64(n)
	}
	res.Norm = l1
	if c.Geometry.Kind == sketch.CountSketch {
		res.Norm = math.Sqrt(f2)
	}
	type est struct {
		k   int
		est int64
	}
	ests := make([]est, c.Keys)
	exceeded := 0
	for k := range keys {
		if k%sketchCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return SketchResult{}, err
			}
		}
		e, err := st.Estimate(epoch, keys[k])
		if err != nil {
			return SketchResult{}, err
		}
		ests[k] = est{k, e}
		errAbs := math.Abs(float64(e - truth[k]))
		res.MaxError = math.Max(res.MaxError, errAbs/res.Norm)
		if errAbs > b.Epsilon*res.Norm {
			exceeded++
		}
	}
	res.Exceeded = float64(exceeded) / float64(c.Keys)
	if c.TopK > 0 {
		byTruth := make([]int, c.Keys)
		for i := range byTruth {
			byTruth[i] = i
		}
		slices.SortStableFunc(byTruth, func(a, b int) int { return cmp.Compare(truth[b], truth[a]) })
		slices.SortStableFunc(ests, func(a, b est) int { return cmp.Compare(b.est, a.est) })
		top := map[int]bool{}
		for _, k := range byTruth[:min(c.TopK, c.Keys)] {
			top[k] = true
		}
		hit := 0
		for _, e := range ests[:min(c.TopK, c.Keys)] {
			if top[e.k] {
				hit++
			}
		}
		res.TopKRecall = float64(hit) / float64(min(c.TopK, c.Keys))
	}
	return res, nil
}

// opSink applies writes and fetch-and-adds to one region, as the local sink
// does.
type opSink struct{ mem *region.Region }

func (s *opSink) Apply(ops []memop.Op) error {
	for i := range ops {
		op := &ops[i]
		var err error
		switch op.Kind {
		case memop.Write, memop.WriteImm:
			err = s.mem.Write(op.Offset, op.Data)
		case memop.FetchAdd:
			_, err = s.mem.Add64(op.Offset, op.Delta)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
