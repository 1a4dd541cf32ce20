package appendlist_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/appendlist"
)

// opLog records a copy of every op applied, and refuses the calls listed.
type opLog struct {
	ops    []memop.Op
	calls  int
	refuse map[int]bool
}

func (s *opLog) Apply(ops []memop.Op) error {
	s.calls++
	if s.refuse[s.calls] {
		return errors.New("refused")
	}
	for _, op := range ops {
		op.Data = bytes.Clone(op.Data)
		s.ops = append(s.ops, op)
	}
	return nil
}

func TestAddEntriesIsAddOneByOne(t *testing.T) {
	spec := appendlist.Spec{Lists: 3, Capacity: 40, EntrySize: 5, Batch: 4}
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 50 {
		one, _ := appendlist.NewWriter(spec, 2)
		many, _ := appendlist.NewWriter(spec, 2)
		refuse := map[int]bool{3: round%2 == 1, 7: round%3 == 0}
		sinkOne, sinkMany := &opLog{refuse: refuse}, &opLog{refuse: refuse}
		b1, b2 := memop.NewBatch(4, 64), memop.NewBatch(4, 64)
		var refusedOne, refusedMany int
		seq := 0
		for range 30 {
			list := uint32(rng.IntN(3))
			n := rng.IntN(11)
			imm := rng.IntN(8) == 0
			entries := make([]byte, 0, n*spec.EntrySize)
			for range n {
				seq++
				entries = append(entries, entry(uint64(seq), spec.EntrySize)...)
			}
			for i := range n {
				if err := one.Add(list, entries[i*spec.EntrySize:(i+1)*spec.EntrySize], imm, int64(seq), b1, sinkOne); err != nil {
					refusedOne++
				}
			}
			r, err := many.AddEntries(list, entries, imm, int64(seq), b2, sinkMany)
			if (r == 0) != (err == nil) {
				t.Fatalf("round %d: %d refused but error %v", round, r, err)
			}
			refusedMany += r
		}
		if refusedOne != refusedMany {
			t.Fatalf("round %d: %d refused one by one, %d in runs", round, refusedOne, refusedMany)
		}
		if len(sinkOne.ops) != len(sinkMany.ops) {
			t.Fatalf("round %d: %d ops one by one, %d in runs", round, len(sinkOne.ops), len(sinkMany.ops))
		}
		for i := range sinkOne.ops {
			a, b := sinkOne.ops[i], sinkMany.ops[i]
			if a.Kind != b.Kind || a.Store != b.Store || a.Offset != b.Offset || !bytes.Equal(a.Data, b.Data) || a.Imm != b.Imm {
				t.Fatalf("round %d op %d: %+v one by one, %+v in runs", round, i, a, b)
			}
		}
		s1, s2 := one.Stats(), many.Stats()
		if s1.Entries.Load() != s2.Entries.Load() || s1.Batches.Load() != s2.Batches.Load() || s1.Partial.Load() != s2.Partial.Load() {
			t.Fatalf("round %d: stats differ", round)
		}
	}
}

func TestAddEntriesRefusesBadRuns(t *testing.T) {
	spec := appendlist.Spec{Lists: 2, Capacity: 16, EntrySize: 4, Batch: 4}
	w, _ := appendlist.NewWriter(spec, 0)
	b := memop.NewBatch(4, 64)
	if _, err := w.AddEntries(2, make([]byte, 4), false, 0, b, discard{}); !errors.Is(err, appendlist.ErrList) {
		t.Errorf("list beyond the store: %v", err)
	}
	if _, err := w.AddEntries(0, make([]byte, 6), false, 0, b, discard{}); !errors.Is(err, appendlist.ErrEntrySize) {
		t.Errorf("a partial entry: %v", err)
	}
	if n, err := w.AddEntries(0, nil, false, 0, b, discard{}); n != 0 || err != nil || w.Stats().Entries.Load() != 0 {
		t.Errorf("no entries: %d %v", n, err)
	}
	run := make([]byte, 40) // the caller's buffer: whole batches are written from it
	if a := testing.AllocsPerRun(100, func() { _, _ = w.AddEntries(1, run, false, 0, b, discard{}) }); a != 0 {
		t.Errorf("AddEntries: %v allocs", a)
	}
}

// memSink applies ops to a byte image of one Append store (store index 0),
// refusing the calls listed before applying anything, and after every op
// checks what a reader may rely on: each list's entries from Spec.Lowest of
// its published head up to that head are the entries of their indices.
type memSink struct {
	t      *testing.T
	spec   appendlist.Spec
	mem    []byte
	calls  int
	ops    int
	heads  int
	refuse map[int]bool
}

func newMemSink(t *testing.T, spec appendlist.Spec) *memSink {
	return &memSink{t: t, spec: spec, mem: make([]byte, spec.RegionSize())}
}

func (s *memSink) Apply(ops []memop.Op) error {
	s.calls++
	if s.refuse[s.calls] {
		return errors.New("refused")
	}
	for _, op := range ops {
		if op.Kind != memop.Write && op.Kind != memop.WriteImm {
			s.t.Fatalf("op kind %v", op.Kind)
		}
		copy(s.mem[op.Offset:], op.Data)
		s.ops++
		if len(op.Data) == 8 && op.Offset%s.spec.ListStride() == 0 {
			s.heads++
		}
		s.check()
	}
	return nil
}

func (s *memSink) head(list uint32) uint64 {
	return binary.LittleEndian.Uint64(s.mem[s.spec.HeadOffset(list):])
}

func (s *memSink) check() {
	s.t.Helper()
	es := s.spec.EntrySize
	want := make([]byte, es)
	// The writer places entries from the head on, which in the ring are the
	// oldest readable ones: a placement beyond Window shows there; the
	// newest are checked too. The whole store is compared at the end.
	span := s.spec.Window() + 2*uint64(s.spec.Batch)
	for list := range s.spec.Lists {
		h := s.head(list)
		low := s.spec.Lowest(h, 0)
		for i := low; i < h; i++ {
			if i == low+span && h > span {
				i = max(i, h-span)
			}
			off := s.spec.EntryOffset(list, i)
			if got := s.mem[off : off+uint64(es)]; !bytes.Equal(got, fillEntry(want, i)) {
				s.t.Fatalf("list %d head %d: readable entry %d is % X, want % X", list, h, i, got, want)
			}
		}
	}
}

func TestAddEntriesWritesWholeBatchesTogetherAndReadersStaySafe(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec appendlist.Spec
	}{
		{"4-byte entries in batches of 4, a ring of 512", appendlist.Spec{Lists: 2, Capacity: 512, EntrySize: 4, Batch: 4}},
		{"4-byte entries in batches of 16, a ring of 4100", appendlist.Spec{Lists: 2, Capacity: 4100, EntrySize: 4, Batch: 16}},
		{"64-byte entries in batches of 3, a ring of 300", appendlist.Spec{Lists: 3, Capacity: 300, EntrySize: 64, Batch: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			if spec.Window() <= uint64(spec.Batch) {
				t.Fatalf("window %d: this case must let whole batches go together", spec.Window())
			}
			es := spec.EntrySize
			rng := rand.New(rand.NewPCG(11, uint64(es)))
			one, _ := appendlist.NewWriter(spec, 0)
			many, _ := appendlist.NewWriter(spec, 0)
			sinkOne, sinkMany := newMemSink(t, spec), newMemSink(t, spec)
			b1, b2 := memop.NewBatch(4, 64), memop.NewBatch(4, 64)
			next := make([]uint64, spec.Lists)
			for range 400 {
				list := uint32(rng.IntN(int(spec.Lists)))
				n := rng.IntN(int(spec.Window()) * 3)
				imm := rng.IntN(20) == 0
				entries := make([]byte, 0, n*es)
				for range n {
					entries = append(entries, entry(next[list], es)...)
					next[list]++
				}
				for i := range n {
					if err := one.Add(list, entries[i*es:(i+1)*es], imm, 0, b1, sinkOne); err != nil {
						t.Fatal(err)
					}
				}
				if r, err := many.AddEntries(list, entries, imm, 0, b2, sinkMany); r != 0 || err != nil {
					t.Fatalf("refused %d: %v", r, err)
				}
				if rng.IntN(10) == 0 {
					if _, err := one.Flush(0, 0, b1, sinkOne); err != nil {
						t.Fatal(err)
					}
					if _, err := many.Flush(0, 0, b2, sinkMany); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := one.Flush(0, 0, b1, sinkOne); err != nil {
				t.Fatal(err)
			}
			if _, err := many.Flush(0, 0, b2, sinkMany); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(sinkOne.mem, sinkMany.mem) {
				t.Fatal("the store differs from what one Add per entry leaves")
			}
			s1, s2 := one.Stats(), many.Stats()
			if s1.Entries.Load() != s2.Entries.Load() || s1.Written.Load() != s2.Written.Load() || s2.Pending() != 0 {
				t.Fatalf("entries %d/%d written %d/%d pending %d", s1.Entries.Load(), s2.Entries.Load(), s1.Written.Load(), s2.Written.Load(), s2.Pending())
			}
			if sinkMany.heads*2 > sinkOne.heads || sinkMany.ops*2 > sinkOne.ops {
				t.Errorf("together %d heads in %d ops; one by one %d heads in %d ops: want at most half", sinkMany.heads, sinkMany.ops, sinkOne.heads, sinkOne.ops)
			}
			if got := s2.HeaderWrites.Load(); got != uint64(sinkMany.heads) {
				t.Errorf("HeaderWrites %d, heads written %d", got, sinkMany.heads)
			}
			t.Logf("one by one: %d ops, %d heads; together: %d ops, %d heads", sinkOne.ops, sinkOne.heads, sinkMany.ops, sinkMany.heads)
		})
	}
}

func TestARefusedGroupIsNeverPublishedAndItsSlotsAreRewritten(t *testing.T) {
	spec := appendlist.Spec{Lists: 1, Capacity: 512, EntrySize: 4, Batch: 4}
	w, _ := appendlist.NewWriter(spec, 0)
	s := newMemSink(t, spec)
	s.refuse = map[int]bool{2: true}
	b := memop.NewBatch(4, 64)
	run := func(from, n uint64) []byte {
		var e []byte
		for i := range n {
			e = append(e, entry(from+i, spec.EntrySize)...)
		}
		return e
	}
	if r, err := w.AddEntries(0, run(0, 12), false, 0, b, s); r != 0 || err != nil {
		t.Fatalf("first group: %d refused, %v", r, err)
	}
	if r, err := w.AddEntries(0, run(100, 8), false, 0, b, s); r != 2 || err == nil {
		t.Fatalf("refused group of 2 batches: %d refused, %v", r, err)
	}
	if h := s.head(0); h != 12 {
		t.Fatalf("head %d after a refused group, want 12", h)
	}
	if r, err := w.AddEntries(0, run(12, 8), false, 0, b, s); r != 0 || err != nil {
		t.Fatalf("group after the refusal: %d refused, %v", r, err)
	}
	if h := s.head(0); h != 20 {
		t.Fatalf("head %d, want 20", h)
	}
	s.check()
}
