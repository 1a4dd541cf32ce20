package sketchmerge

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/sketch"
)

// apply performs ops on mem as the local sink does.
func apply(t *testing.T, mem *region.Region, ops []memop.Op) {
	t.Helper()
	for _, op := range ops {
		var err error
		switch op.Kind {
		case memop.Write:
			err = mem.Write(op.Offset, op.Data)
		case memop.FetchAdd:
			_, err = mem.Add64(op.Offset, op.Delta)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func newStore(t *testing.T, g sketch.Geometry) (*Store, *region.Region) {
	t.Helper()
	spec := Spec{Geometry: g, Epochs: 3}
	rc := region.DefaultConfig()
	rc.HugePages, rc.Size = region.HugePagesOff, spec.RegionSize()
	mem, err := region.New(rc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	s, err := NewStore(spec, mem)
	if err != nil {
		t.Fatal(err)
	}
	return s, mem
}

// flush translates sk's runs as epoch e, the way the translator does.
func flush(t *testing.T, spec *Spec, o *Opener, mem *region.Region, e uint32, sk *sketch.Sketch) {
	t.Helper()
	b := memop.NewBatch(16, 0)
	open, err := o.Accept(e)
	if err != nil {
		t.Fatal(err)
	}
	if open {
		o.Open(b, 0, e)
		apply(t, mem, b.Ops)
	}
	sk.Runs(64, func(r sketch.Run) error {
		b.Reset()
		var v []byte
		for _, c := range r.Counters {
			v = binary.BigEndian.AppendUint64(v, uint64(c))
		}
		run := Run{Epoch: e, Row: r.Row, Column: r.Column, Counters: v}
		if err := spec.Check(&run); err != nil {
			t.Fatal(err)
		}
		spec.Add(b, 0, &run)
		apply(t, mem, b.Ops)
		return nil
	})
}

func TestTheLayoutPutsEachCounterWhereTheProtocolSays(t *testing.T) {
	s := Spec{Geometry: sketch.Geometry{Rows: 4, Columns: 1000, Kind: sketch.CountMin}, Epochs: 3}
	for _, tc := range []struct {
		e    uint32
		r    int
		w    uint64
		want uint64
	}{
		{0, 0, 0, 64},
		{1, 0, 0, 64 + 32000},
		{2, 3, 999, 64 + 2*32000 + 3*8000 + 999*8},
		{3, 1, 5, 64 + 8000 + 40}, // epoch 3 reuses copy 0
	} {
		if got := s.CounterOffset(tc.e, tc.r, tc.w); got != tc.want {
			t.Errorf("epoch %d row %d column %d at %d, want %d", tc.e, tc.r, tc.w, got, tc.want)
		}
	}
	if s.RegionSize() != 64+3*32000 || s.TagOffset(2) != 16 {
		t.Errorf("region %d, tag 2 at %d", s.RegionSize(), s.TagOffset(2))
	}
}

func TestMergedFlushesEqualTheUnionStreamsSketch(t *testing.T) {
	for _, kind := range []sketch.Kind{sketch.CountMin, sketch.CountSketch} {
		g := sketch.Geometry{Rows: 4, Columns: 256, Kind: kind}
		st, mem := newStore(t, g)
		spec := st.Spec()
		o := NewOpener(&spec)
		a, _ := sketch.New(g)
		b, _ := sketch.New(g)
		union, _ := sketch.New(g)
		for i := range 5000 {
			k := binary.BigEndian.AppendUint32(nil, uint32(i*i%997))
			if i%2 == 0 {
				a.Update(k, 3)
			} else {
				b.Update(k, -1)
			}
		}
		union.Add(a)
		union.Add(b)
		flush(t, &spec, o, mem, 7, a)
		flush(t, &spec, o, mem, 7, b)
		for r := range g.Rows {
			got, err := st.Row(7, r, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, union.Row(r)) {
				t.Fatalf("%v row %d differs from the union's", kind, r)
			}
		}
	}
}

func TestEpochsOpenCloseAndRecycleTheirCopies(t *testing.T) {
	g := sketch.Geometry{Rows: 2, Columns: 64, Kind: sketch.CountMin}
	st, mem := newStore(t, g)
	spec := st.Spec()
	o := NewOpener(&spec)
	one := func(n int64) *sketch.Sketch {
		s, _ := sketch.New(g)
		s.Update([]byte("k"), n)
		return s
	}
	flush(t, &spec, o, mem, 5, one(10))
	if _, err := st.Latest(); !errors.Is(err, ErrEpoch) {
		t.Errorf("Latest with only the open epoch: %v, want ErrEpoch", err)
	}
	flush(t, &spec, o, mem, 6, one(20)) // 5 closes, 7 is prepared
	if l, _ := st.Latest(); l != 5 {
		t.Errorf("latest %d, want 5", l)
	}
	if v, _ := st.Estimate(5, []byte("k")); v != 10 {
		t.Errorf("epoch 5 estimate %d, want 10", v)
	}
	if _, err := o.Accept(5); !errors.Is(err, ErrOldEpoch) {
		t.Errorf("a report for closed epoch 5: %v, want ErrOldEpoch", err)
	}
	eps, _ := st.Epochs()
	if len(eps) != 3 || eps[0] != (EpochInfo{5, "closed"}) || eps[1] != (EpochInfo{6, "open"}) || eps[2] != (EpochInfo{7, "prepared"}) {
		t.Errorf("epochs %+v", eps)
	}
	flush(t, &spec, o, mem, 7, one(30)) // recycles 5's copy for 8
	if _, err := st.Estimate(5, []byte("k")); !errors.Is(err, ErrEpoch) {
		t.Errorf("epoch 5 after its copy was recycled: %v, want ErrEpoch", err)
	}
	if v, _ := st.Estimate(8, []byte("k")); v != 0 {
		t.Errorf("prepared epoch 8 reads %d, want 0 (cleared ahead)", v)
	}
	// A gap: epoch 10's copy (copy 1, which held 7) was not prepared: it
	// is cleared at the open.
	flush(t, &spec, o, mem, 10, one(1))
	if v, _ := st.Estimate(10, []byte("k")); v != 1 {
		t.Errorf("epoch 10 after a gap reads %d, want 1 (7's 30 cleared)", v)
	}
}

func TestRunsBeyondTheGeometryAreRefused(t *testing.T) {
	s := Spec{Geometry: sketch.Geometry{Rows: 2, Columns: 10, Kind: sketch.CountMin}, Epochs: 3}
	eight := make([]byte, 8)
	for _, tc := range []struct {
		run  Run
		want error
	}{
		{Run{Row: 2, Counters: eight}, ErrRow},
		{Run{Row: 0, Column: 10, Counters: eight}, ErrColumns},
		{Run{Row: 0, Column: 9, Counters: make([]byte, 16)}, ErrColumns},
		{Run{Row: 0, Counters: make([]byte, 7)}, ErrRunLen},
		{Run{Row: 0, Counters: nil}, ErrRunLen},
	} {
		if err := s.Check(&tc.run); !errors.Is(err, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.run, err, tc.want)
		}
	}
}

func TestZeroCountersCostNoOperation(t *testing.T) {
	s := Spec{Geometry: sketch.Geometry{Rows: 1, Columns: 8, Kind: sketch.CountSketch}, Epochs: 3}
	b := memop.NewBatch(8, 0)
	v := make([]byte, 32)
	binary.BigEndian.PutUint64(v[8:], uint64(1<<64-2)) // -2
	if n := s.Add(b, 0, &Run{Counters: v}); n != 1 || len(b.Ops) != 1 || b.Ops[0].Delta != 1<<64-2 || b.Ops[0].Offset != 64+8 {
		t.Errorf("%d ops %+v, want one FETCH_ADD of -2 at offset 72", n, b.Ops)
	}
}

// TestARestartedStoreGetsTheOpenEpochBackWithoutLosingCounters plays a
// translator with epoch 6 open against a collector that restarted in each
// way it can: empty, from a checkpoint taken while 6 was open, while 5 was
// (6 prepared), and while 4 was (6's copy holding 3's counters). After
// Restarted's writes and one more report of epoch 6, the store must answer
// epoch 6 with exactly the counters added since the checkpoint.
func TestARestartedStoreGetsTheOpenEpochBackWithoutLosingCounters(t *testing.T) {
	g := sketch.Geometry{Rows: 2, Columns: 64, Kind: sketch.CountMin}
	one := func(n int64) *sketch.Sketch {
		s, _ := sketch.New(g)
		s.Update([]byte("k"), n)
		return s
	}
	tests := []struct {
		name       string
		checkpoint []uint32 // epochs flushed before the "checkpoint" (nil: empty restart)
		before     int64    // epoch 6's count the restored store holds before the restart's writes
		writes     bool     // Restarted writes something
	}{
		{"an empty restart gets the tags back and keeps what arrived since", nil, 0, true},
		{"a checkpoint with epoch 6 open is left as it is", []uint32{5, 6}, 100, false},
		{"a checkpoint with epoch 6 prepared keeps its clean copy", []uint32{4, 5}, 0, true},
		{"a checkpoint two epochs old has 6's copy cleared", []uint32{3, 4}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, mem := newStore(t, g)
			spec := st.Spec()
			// The restored store, as the collector holds it after its restart.
			old := NewOpener(&spec)
			for _, e := range tt.checkpoint {
				flush(t, &spec, old, mem, e, one(100))
			}
			// The translator, which had opened 6 on the collector before it
			// went down.
			o := NewOpener(&spec)
			b := memop.NewBatch(16, 0)
			o.Open(b, 0, 5)
			o.Open(b, 0, 6)
			// A report of 6 that reached the restarted collector before the
			// translator's writes (it raced the READ of the tags).
			if tt.checkpoint == nil {
				flush(t, &spec, o, mem, 6, one(7))
			}
			hdr, err := mem.Slice(0, HeaderSize)
			if err != nil {
				t.Fatal(err)
			}
			b.Reset()
			if got := o.Restarted(b, 0, slices.Clone(hdr)); got != tt.writes {
				t.Fatalf("Restarted = %v, want %v", got, tt.writes)
			}
			apply(t, mem, b.Ops)
			flush(t, &spec, o, mem, 6, one(1))
			want := tt.before + 1
			if tt.checkpoint == nil {
				want = 7 + 1
			}
			if v, err := st.Estimate(6, []byte("k")); err != nil || v != want {
				t.Errorf("epoch 6 reads %d (%v), want %d", v, err, want)
			}
			if eps, _ := st.Epochs(); len(eps) < 2 || eps[len(eps)-2] != (EpochInfo{6, "open"}) || eps[len(eps)-1] != (EpochInfo{7, "prepared"}) {
				t.Errorf("epochs %+v, want 6 open and 7 prepared", eps)
			}
		})
	}
}

// The last epoch (2^32-1) opens with nothing prepared after it: the epochs
// before it read as closed, it reads as open, and epoch 0 does not follow.
func TestTheLastEpochPreparesNoNextOne(t *testing.T) {
	g := sketch.Geometry{Rows: 2, Columns: 64, Kind: sketch.CountMin}
	st, mem := newStore(t, g)
	spec := st.Spec()
	o := NewOpener(&spec)
	one, _ := sketch.New(g)
	one.Update([]byte("k"), 3)
	flush(t, &spec, o, mem, LastEpoch-1, one)
	flush(t, &spec, o, mem, LastEpoch, one)
	eps, _ := st.Epochs()
	if !slices.Equal(eps, []EpochInfo{{LastEpoch - 1, "closed"}, {LastEpoch, "open"}}) {
		t.Errorf("epochs %+v, want %d closed and %d open", eps, uint32(LastEpoch-1), uint32(LastEpoch))
	}
	if l, _ := st.Latest(); l != LastEpoch-1 {
		t.Errorf("latest %d, want %d", l, uint32(LastEpoch-1))
	}
	if v, _ := st.Estimate(LastEpoch-1, []byte("k")); v != 3 {
		t.Errorf("epoch %d estimate %d, want 3", uint32(LastEpoch-1), v)
	}
	if _, err := o.Accept(0); !errors.Is(err, ErrOldEpoch) {
		t.Errorf("epoch 0 after the last: %v, want ErrOldEpoch", err)
	}
}
