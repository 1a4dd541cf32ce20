package analysis_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/analysis"
	"github.com/dta-go/dta/internal/primitive/keyincrement"
	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/wire/dta"
)

func TestCapacityReproducesTheWorkedExamples(t *testing.T) {
	t.Run("Key-Write in 8,000,000 bytes of 8-byte slots at age 100,000 is at α=0.1", func(t *testing.T) {
		res, err := analysis.Capacity(analysis.CapacityRequest{
			Design: analysis.Design{Primitive: dta.KeyWrite, ValueSize: 4, N: []int{1, 2, 4}},
			Memory: 8_000_000, Ages: []uint64{100_000},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range res.Rows {
			r := row.Ages[0]
			if row.Slots != 1_000_000 || row.Memory != 8_000_000 || r.Alpha != 0.1 {
				t.Fatalf("N=%d: %d slots, %d bytes, α=%v", row.N, row.Slots, row.Memory, r.Alpha)
			}
			if r.NoAnswer != analysis.KeyWriteNoAnswer(0.1, row.N, 32) || r.Wrong != analysis.KeyWriteWrong(0.1, row.N, 32) {
				t.Errorf("N=%d: %+v", row.N, r)
			}
		}
	})
	t.Run("Postcarding in 20,000,000 bytes of 5-hop chunks at age 100,000 is at α=0.1", func(t *testing.T) {
		res, err := analysis.Capacity(analysis.CapacityRequest{
			Design: analysis.Design{Primitive: dta.Postcard, N: []int{2}, Hops: 5, Values: 1 << 18},
			Memory: 20_000_000, Keys: 100_000,
		})
		if err != nil {
			t.Fatal(err)
		}
		row := res.Rows[0]
		r := row.Ages[0]
		if row.Slots != 1_000_000 || r.Alpha != 0.1 || r.NoAnswer > 0.033 || r.Wrong >= 1e-22 {
			t.Errorf("%d chunks: %+v", row.Slots, r)
		}
	})
}

func TestPlanFindsTheLeastMemoryMeetingTheTarget(t *testing.T) {
	for _, tt := range []struct {
		name string
		req  analysis.PlanRequest
	}{
		{"Key-Write, 100 M flows of 20-byte paths, 99 % at the oldest", analysis.PlanRequest{
			Design: analysis.Design{Primitive: dta.KeyWrite, ValueSize: 20}, Keys: 100e6, Target: 0.99}},
		{"Key-Write at a tenth of the keys' age, 99.9 %", analysis.PlanRequest{
			Design: analysis.Design{Primitive: dta.KeyWrite, ValueSize: 4, N: []int{1, 2, 3, 4, 8}}, Keys: 100e6, Age: 10e6, Target: 0.999}},
		{"Key-Write with the prototype's hash rounds slots up to a power of two", analysis.PlanRequest{
			Design: analysis.Design{Primitive: dta.KeyWrite, ValueSize: 4, Hash: hashing.CRC32}, Keys: 1e6, Target: 0.95}},
		{"Postcarding, 10 M paths of 5 hops", analysis.PlanRequest{
			Design: analysis.Design{Primitive: dta.Postcard, Hops: 5, Values: 1 << 18}, Keys: 10e6, Target: 0.99}},
		{"Key-Increment, 1 M keys exact for 99 %", analysis.PlanRequest{
			Design: analysis.Design{Primitive: dta.KeyIncrement}, Keys: 1e6, Target: 0.99}},
		{"Key-Increment with the prototype's hash", analysis.PlanRequest{
			Design: analysis.Design{Primitive: dta.KeyIncrement, Hash: hashing.CRC32, N: []int{2}}, Keys: 5000, Target: 0.9}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := analysis.Plan(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			want := len(tt.req.N)
			if want == 0 {
				want = len(analysis.DefaultN)
			}
			if len(res.Rows) != want {
				t.Fatalf("%d rows, want %d", len(res.Rows), want)
			}
			var best analysis.PlanRow
			for _, row := range res.Rows {
				if !row.MeetsTarget {
					if row.Note == "" || row.Memory != 0 {
						t.Errorf("N=%d misses the target without saying why: %+v", row.N, row)
					}
					continue
				}
				if row.Success < tt.req.Target {
					t.Errorf("N=%d: success %.6g below %v", row.N, row.Success, tt.req.Target)
				}
				if got := regionSize(tt.req.Design, row.N, row.Slots); got != row.Memory {
					t.Errorf("N=%d: memory %d, the Spec says %d", row.N, row.Memory, got)
				}
				if tt.req.Hash == hashing.CRC32 && row.Slots&(row.Slots-1) != 0 {
					t.Errorf("N=%d: %d slots is not a power of two", row.N, row.Slots)
				}
				// One slot fewer (half as many for a power of two) must miss.
				fewer := row.Slots - 1
				if tt.req.Hash == hashing.CRC32 {
					fewer = row.Slots / 2
				}
				cap, err := analysis.Capacity(analysis.CapacityRequest{
					Design: tt.req.Design, Memory: regionSize(tt.req.Design, row.N, fewer), Keys: tt.req.Keys,
					Ages: ages(tt.req),
				})
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range cap.Rows {
					if c.N == row.N && c.Ages[0].Success >= tt.req.Target {
						t.Errorf("N=%d: %d slots also meet the target (%.9g), %d is not the least", row.N, c.Slots, c.Ages[0].Success, row.Slots)
					}
				}
				if best.N == 0 || row.Memory < best.Memory {
					best = row
				}
			}
			if res.BestN != best.N {
				t.Errorf("best N %d, want %d", res.BestN, best.N)
			}
		})
	}
}

func ages(req analysis.PlanRequest) []uint64 {
	if req.Primitive == dta.KeyIncrement {
		return nil
	}
	if req.Age != 0 {
		return []uint64{req.Age}
	}
	return []uint64{req.Keys}
}

func regionSize(d analysis.Design, n int, slots uint64) uint64 {
	h := d.Hash
	if h == 0 {
		h = hashing.CRC32C
	}
	switch d.Primitive {
	case dta.KeyWrite:
		return keywrite.Spec{Slots: slots, ValueSize: d.ValueSize, MaxRedundancy: n, Hash: h}.RegionSize()
	case dta.Postcard:
		return postcard.Spec{Chunks: slots, Hops: d.Hops, Redundancy: n, Hash: h}.RegionSize()
	}
	return keyincrement.Spec{Slots: slots, Redundancy: n, Hash: h}.RegionSize()
}

func TestPlanMarksUnreachableRedundancies(t *testing.T) {
	res, err := analysis.Plan(analysis.PlanRequest{
		Design: analysis.Design{Primitive: dta.KeyWrite, N: []int{1, 2}}, Keys: 1e7, Target: 0.9999,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Rows[0]; r.MeetsTarget || !strings.Contains(r.Note, "2^32") {
		t.Errorf("N=1 needs 10^11 slots but got %+v", r)
	}
	if res.BestN != 2 {
		t.Errorf("best N %d, want 2", res.BestN)
	}
}

func TestPlanDefaults(t *testing.T) {
	res, err := analysis.Plan(analysis.PlanRequest{Design: analysis.Design{Primitive: dta.Postcard}, Keys: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range res.Rows {
		if row.N != analysis.DefaultN[i] || row.Age != 1000 || !row.MeetsTarget || row.Success < analysis.DefaultTarget {
			t.Errorf("row %d: %+v", i, row)
		}
		if want := analysis.PostcardWrong(row.Alpha, row.N, 32, analysis.DefaultHops, analysis.DefaultValues); row.Wrong != want {
			t.Errorf("N=%d: wrong %.6g, want the default geometry's %.6g", row.N, row.Wrong, want)
		}
	}
}

func TestPlanAndCapacityRejectInvalidRequests(t *testing.T) {
	kw := analysis.Design{Primitive: dta.KeyWrite}
	pc := analysis.Design{Primitive: dta.Postcard}
	ki := analysis.Design{Primitive: dta.KeyIncrement}
	with := func(d analysis.Design, f func(*analysis.Design)) analysis.Design { f(&d); return d }
	for _, tt := range []struct {
		name  string
		req   analysis.PlanRequest
		field string
	}{
		{"no primitive", analysis.PlanRequest{Keys: 1}, "primitive"},
		{"append", analysis.PlanRequest{Design: analysis.Design{Primitive: dta.Append}, Keys: 1}, "append"},
		{"no keys", analysis.PlanRequest{Design: kw}, "keys"},
		{"a target of 1", analysis.PlanRequest{Design: kw, Keys: 1, Target: 1}, "target"},
		{"a negative target", analysis.PlanRequest{Design: kw, Keys: 1, Target: -0.5}, "target"},
		{"a NaN target", analysis.PlanRequest{Design: kw, Keys: 1, Target: math.NaN()}, "target"},
		{"N of 0", analysis.PlanRequest{Design: with(kw, func(d *analysis.Design) { d.N = []int{0} }), Keys: 1}, "n:"},
		{"N of 9", analysis.PlanRequest{Design: with(kw, func(d *analysis.Design) { d.N = []int{2, 9} }), Keys: 1}, "n:"},
		{"N listed twice", analysis.PlanRequest{Design: with(kw, func(d *analysis.Design) { d.N = []int{2, 2} }), Keys: 1}, "twice"},
		{"an unknown hash", analysis.PlanRequest{Design: with(kw, func(d *analysis.Design) { d.Hash = 9 }), Keys: 1}, "hash"},
		{"a value size above the maximum", analysis.PlanRequest{Design: with(kw, func(d *analysis.Design) { d.ValueSize = 1025 }), Keys: 1}, "value size"},
		{"a negative value size", analysis.PlanRequest{Design: with(kw, func(d *analysis.Design) { d.ValueSize = -1 }), Keys: 1}, "value size"},
		{"0-bit-checksum is the default, 65 bits is too many", analysis.PlanRequest{Design: with(kw, func(d *analysis.Design) { d.ChecksumBits = 65 }), Keys: 1}, "checksum bits"},
		{"hops for keywrite", analysis.PlanRequest{Design: with(kw, func(d *analysis.Design) { d.Hops = 5 }), Keys: 1}, "postcard only"},
		{"a value size for postcard", analysis.PlanRequest{Design: with(pc, func(d *analysis.Design) { d.ValueSize = 4 }), Keys: 1}, "keywrite only"},
		{"9 hops", analysis.PlanRequest{Design: with(pc, func(d *analysis.Design) { d.Hops = 9 }), Keys: 1}, "hops"},
		{"a value set beyond 32-bit slots", analysis.PlanRequest{Design: with(pc, func(d *analysis.Design) { d.Values = 1 << 32 }), Keys: 1}, "values"},
		{"a value set beyond the checksum bits", analysis.PlanRequest{Design: with(pc, func(d *analysis.Design) { d.ChecksumBits = 16; d.Values = 1 << 16 }), Keys: 1}, "values"},
		{"checksum bits for keyincrement", analysis.PlanRequest{Design: with(ki, func(d *analysis.Design) { d.ChecksumBits = 32 }), Keys: 1}, "checksum"},
		{"an age for keyincrement", analysis.PlanRequest{Design: ki, Keys: 10, Age: 5}, "age"},
	} {
		t.Run("Plan rejects "+tt.name, func(t *testing.T) {
			_, err := analysis.Plan(tt.req)
			if !errors.Is(err, analysis.ErrInvalid) || !strings.Contains(err.Error(), tt.field) {
				t.Errorf("got %v, want an ErrInvalid naming %q", err, tt.field)
			}
		})
	}
	for _, tt := range []struct {
		name  string
		req   analysis.CapacityRequest
		field string
	}{
		{"no ages and no keys", analysis.CapacityRequest{Design: kw, Memory: 1 << 20}, "age"},
		{"memory for less than two slots", analysis.CapacityRequest{Design: kw, Memory: 15, Keys: 1}, "memory"},
		{"no memory", analysis.CapacityRequest{Design: pc, Keys: 1}, "memory"},
		{"ages for keyincrement", analysis.CapacityRequest{Design: ki, Memory: 1 << 20, Ages: []uint64{3}}, "age"},
		{"keyincrement without keys", analysis.CapacityRequest{Design: ki, Memory: 1 << 20}, "keys"},
		{"N of 9", analysis.CapacityRequest{Design: with(ki, func(d *analysis.Design) { d.N = []int{9} }), Memory: 1 << 20, Keys: 1}, "n:"},
	} {
		t.Run("Capacity rejects "+tt.name, func(t *testing.T) {
			_, err := analysis.Capacity(tt.req)
			if !errors.Is(err, analysis.ErrInvalid) || !strings.Contains(err.Error(), tt.field) {
				t.Errorf("got %v, want an ErrInvalid naming %q", err, tt.field)
			}
		})
	}
}
