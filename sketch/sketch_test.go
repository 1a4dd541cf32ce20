package sketch

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
)

// The vectors come from an independent Python implementation written from
// the description in Key, Column and Sign (docs/PROTOCOL.md, "Sketch-Merge").
func TestKeysLandOnTheColumnsAndSignsOfTheGoldenVectors(t *testing.T) {
	for _, tc := range []struct {
		key     []byte
		columns uint64
		cols    [4]uint64
		signs   [4]int64
	}{
		{[]byte{0, 0, 0, 42}, 1024, [4]uint64{26, 815, 578, 847}, [4]int64{1, 1, -1, 1}},
		{[]byte{}, 65536, [4]uint64{40096, 54027, 55281, 27364}, [4]int64{1, -1, -1, 1}},
		{[]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 1000, [4]uint64{812, 852, 851, 285}, [4]int64{-1, -1, -1, -1}},
		{[]byte("flow-0001"), 7, [4]uint64{6, 5, 5, 0}, [4]int64{1, -1, -1, 1}},
	} {
		k := Key(tc.key)
		for r := range 4 {
			if c := k.Column(r, tc.columns); c != tc.cols[r] {
				t.Errorf("key %x row %d: column %d, want %d", tc.key, r, c, tc.cols[r])
			}
			if s := k.Sign(r); s != tc.signs[r] {
				t.Errorf("key %x row %d: sign %d, want %d", tc.key, r, s, tc.signs[r])
			}
		}
	}
	if Key32(42) != Key([]byte{0, 0, 0, 42}) {
		t.Error("Key32 is not Key of the big-endian bytes")
	}
}

func zipfStream(seed uint64, n int) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	z := rand.NewZipf(rng, 1.2, 1, 9999)
	out := make([][]byte, n)
	for i := range out {
		out[i] = binary.BigEndian.AppendUint32(nil, uint32(z.Uint64()))
	}
	return out
}

func TestTheSumOfTwoSketchesIsTheSketchOfTheUnionStream(t *testing.T) {
	for _, kind := range []Kind{CountMin, CountSketch} {
		g := Geometry{Rows: 4, Columns: 512, Kind: kind}
		a, _ := New(g)
		b, _ := New(g)
		union, _ := New(g)
		for i, k := range zipfStream(1, 20000) {
			if i%3 == 0 {
				a.Update(k, 1)
			} else {
				b.Update(k, 2)
			}
			union.Update(k, int64(1+min(i%3, 1)))
		}
		if err := a.Add(b); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.c, union.c) {
			t.Errorf("%v: merged counters differ from the union stream's sketch", kind)
		}
	}
}

func TestCountMinNeverUnderestimatesAndCountSketchIsClose(t *testing.T) {
	stream := zipfStream(2, 50000)
	truth := map[string]int64{}
	for _, k := range stream {
		truth[string(k)]++
	}
	cm, _ := New(Geometry{Rows: 4, Columns: 2048, Kind: CountMin})
	cs, _ := New(Geometry{Rows: 5, Columns: 2048, Kind: CountSketch})
	for _, k := range stream {
		cm.Update(k, 1)
		cs.Update(k, 1)
	}
	var cmErr, csErr float64
	for k, n := range truth {
		if e := cm.Estimate([]byte(k)); e < n {
			t.Fatalf("count-min estimate %d below the true count %d", e, n)
		} else {
			cmErr += float64(e - n)
		}
		d := float64(cs.Estimate([]byte(k)) - n)
		csErr += d * d
	}
	// Count-min's error per key is at most e·N/w with probability 1-e^-d;
	// on average far below it.
	if avg := cmErr / float64(len(truth)); avg > 2.718*50000/2048 {
		t.Errorf("count-min mean overestimate %.1f above e·N/w", avg)
	}
	if n := cm.Norms(); n.L1 != 50000 {
		t.Errorf("count-min L1 %v, want the stream length 50000", n.L1)
	}
	var f2 float64
	for _, n := range truth {
		f2 += float64(n * n)
	}
	if n := cs.Norms(); n.L2*n.L2 < 0.7*f2 || n.L2*n.L2 > 1.3*f2 {
		t.Errorf("count-sketch F2 estimate %.0f, true %.0f", n.L2*n.L2, f2)
	}
}

func TestRunsSkipZeroCountersAndRespectTheLength(t *testing.T) {
	s, _ := New(Geometry{Rows: 2, Columns: 10, Kind: CountSketch})
	copy(s.Row(0), []int64{0, 5, -3, 0, 0, 7, 7, 7, 0, 1})
	copy(s.Row(1), []int64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	var got []Run
	s.Runs(4, func(r Run) error { got = append(got, Run{r.Row, r.Column, slices.Clone(r.Counters)}); return nil })
	want := []Run{{0, 1, []int64{5, -3}}, {0, 5, []int64{7, 7, 7}}, {0, 9, []int64{1}}, {1, 0, []int64{1, 1, 1, 1}}, {1, 4, []int64{1, 1, 1, 1}}, {1, 8, []int64{1, 1}}}
	if len(got) != len(want) {
		t.Fatalf("runs %v, want %v", got, want)
	}
	for i := range want {
		if got[i].Row != want[i].Row || got[i].Column != want[i].Column || !slices.Equal(got[i].Counters, want[i].Counters) {
			t.Errorf("run %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestUpdatingAllocatesNothing(t *testing.T) {
	s, _ := New(Geometry{Rows: 4, Columns: 1024, Kind: CountSketch})
	key := []byte("10.0.0.1:5000")
	if n := testing.AllocsPerRun(1000, func() { s.Update(key, 1) }); n != 0 {
		t.Errorf("%v allocations per update", n)
	}
}

func TestGeometriesOutOfRangeAreRefusedByField(t *testing.T) {
	for _, g := range []Geometry{{0, 8, CountMin}, {17, 8, CountMin}, {4, 1, CountMin}, {4, 8, 0}, {4, 1<<32 + 1, CountSketch}} {
		if err := g.Validate(); err == nil {
			t.Errorf("%+v accepted", g)
		}
	}
}

func BenchmarkUpdate(b *testing.B) {
	s, _ := New(Geometry{Rows: 4, Columns: 65536, Kind: CountMin})
	keys := zipfStream(3, 4096)
	b.ResetTimer()
	for i := range b.N {
		s.Update(keys[i%len(keys)], 1)
	}
}
