package translator_test

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/translator"
	"github.com/dta-go/dta/wire/dta"
)

func sketchCatalog(tb testing.TB, columns uint64) *store.Catalog {
	tb.Helper()
	descs, err := store.DescribeAll([]store.Config{{Name: "sk", ID: 1, Primitive: "sketchmerge", Default: true, Rows: 4, Columns: columns, Epochs: 3}})
	if err != nil {
		tb.Fatal(err)
	}
	rc := region.DefaultConfig()
	rc.HugePages = region.HugePagesOff
	cat, err := store.Open(descs, rc, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cat.Close() })
	return cat
}

// sketchDatagram is one Sketch-Merge report of 64 counters (every fourth
// one zero) of row r.
func sketchDatagram(tb testing.TB, epoch uint32, r uint8, column uint32) []byte {
	v := make([]byte, 64*8)
	for i := range 64 {
		if i%4 != 3 {
			binary.BigEndian.PutUint64(v[i*8:], uint64(i+1))
		}
	}
	b, err := dta.AppendDatagram(nil, dta.Header{}, &dta.Report{Opcode: dta.OpSketchExt, Epoch: epoch, Row: r, Column: column, Value: v})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestSketchReportsAddTheirNonZeroCountersWithoutAllocating(t *testing.T) {
	cat := sketchCatalog(t, 1024)
	tr, err := translator.New(translator.DefaultConfig(), cat.Descriptors(), cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := tr.NewWorker()
	from := netip.MustParseAddrPort("192.0.2.1:9")
	d := sketchDatagram(t, 3, 1, 128)
	w.Handle(d, from, 1) // opens epoch 3
	ops := cat.Stats().Ops.Load()
	if n := testing.AllocsPerRun(100, func() { w.Handle(d, from, 1) }); n != 0 {
		t.Errorf("%v allocations per report", n)
	}
	if got := cat.Stats().Ops.Load() - ops; got != 101*48 {
		t.Errorf("%d FETCH_ADDs for 101 reports of 48 non-zero counters, want %d", got, 101*48)
	}
	sm := cat.ByName("sk").SketchMerge
	if c, _ := sm.Counter(3, 1, 128); c != 102 {
		t.Errorf("counter (row 1, column 128) %d, want 102 (1 × 102 reports)", c)
	}
	if c, _ := sm.Counter(3, 1, 128+3); c != 0 {
		t.Errorf("a zero counter was written: %d", c)
	}
	if e, ok := tr.SketchEpoch(0); !ok || e != 3 || tr.SketchOpens(0) != 1 {
		t.Errorf("newest epoch %d %v, opens %d", e, ok, tr.SketchOpens(0))
	}
}

func TestSketchReportsOfAClosedEpochOrBeyondTheGeometryAreDropped(t *testing.T) {
	cat := sketchCatalog(t, 1024)
	tr, _ := translator.New(translator.DefaultConfig(), cat.Descriptors(), cat, nil)
	w := tr.NewWorker()
	from := netip.MustParseAddrPort("192.0.2.1:9")
	w.Handle(sketchDatagram(t, 5, 0, 0), from, 1)
	w.Handle(sketchDatagram(t, 6, 0, 0), from, 1) // closes 5
	w.Handle(sketchDatagram(t, 5, 0, 0), from, 1)
	w.Handle(sketchDatagram(t, 6, 4, 0), from, 1)    // row 4 of 4
	w.Handle(sketchDatagram(t, 6, 0, 1000), from, 1) // columns 1000..1063 of 1024
	s := tr.Stats()
	if s.Drops[translator.ReasonEpochClosed] != 1 || s.Drops[translator.ReasonSketchRun] != 2 || s.Reports[dta.SketchMerge] != 2 {
		t.Errorf("drops %v, reports %d", s.Drops, s.Reports[dta.SketchMerge])
	}
	if c, _ := cat.ByName("sk").SketchMerge.Counter(5, 0, 0); c != 1 {
		t.Errorf("closed epoch 5 changed: %d, want 1", c)
	}
}

func TestAResumedTranslatorKeepsTheOpenEpochsCounters(t *testing.T) {
	cat := sketchCatalog(t, 1024)
	tr, _ := translator.New(translator.DefaultConfig(), cat.Descriptors(), cat, nil)
	from := netip.MustParseAddrPort("192.0.2.1:9")
	tr.NewWorker().Handle(sketchDatagram(t, 9, 0, 0), from, 1)
	// A new translator (a restart) told where the store is.
	tr2, _ := translator.New(translator.DefaultConfig(), cat.Descriptors(), cat, nil)
	tr2.ResumeSketch(0, 9)
	tr2.NewWorker().Handle(sketchDatagram(t, 9, 0, 0), from, 1)
	if c, _ := cat.ByName("sk").SketchMerge.Counter(9, 0, 0); c != 2 {
		t.Errorf("counter %d after a resumed translator's flush, want 2 (not cleared)", c)
	}
}

// BenchmarkSketch measures a Sketch-Merge report of 64 counters (48 non-zero)
// through the translator into a local store of 4 × 65536 counters.
func BenchmarkSketch(b *testing.B) {
	cat := sketchCatalog(b, 65536)
	tr, _ := translator.New(translator.DefaultConfig(), cat.Descriptors(), cat, nil)
	w := tr.NewWorker()
	from := netip.MustParseAddrPort("192.0.2.1:9")
	ds := make([][]byte, 1024)
	for i := range ds {
		ds[i] = sketchDatagram(b, 1, uint8(i%4), uint32(i*64%65536))
	}
	w.Handle(ds[0], from, 1)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		w.Handle(ds[i%len(ds)], from, 1)
		i++
	}
	b.ReportMetric(float64(i)*48/b.Elapsed().Seconds(), "counters/s")
}

// TestABatchedWorkersCountersLandBeforeANewerEpochRecyclesTheirCopy sends,
// in one batch, counters of epoch 5 and then a report of epoch 7, whose open
// clears 5's copy to prepare epoch 8: the counters of 5 must be applied
// before that clear, so that the prepared epoch 8 reads all zeros.
func TestABatchedWorkersCountersLandBeforeANewerEpochRecyclesTheirCopy(t *testing.T) {
	cat := sketchCatalog(t, 1024)
	tr, err := translator.New(translator.DefaultConfig(), cat.Descriptors(), cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := tr.NewWorker()
	w.DeferToBatch()
	from := netip.MustParseAddrPort("192.0.2.1:9")
	w.Handle(sketchDatagram(t, 5, 1, 128), from, 1)
	w.Handle(sketchDatagram(t, 7, 2, 0), from, 1)
	w.EndBatch()
	sm := cat.ByName("sk").SketchMerge
	row := make([]int64, 1024)
	got, err := sm.Row(8, 1, row)
	if err != nil {
		t.Fatal(err)
	}
	for c, v := range got {
		if v != 0 {
			t.Fatalf("prepared epoch 8, row 1, column %d holds %d: an epoch-5 counter landed after its copy was recycled", c, v)
		}
	}
}
