package appendlist_test

import (
	"bytes"
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
	if a := testing.AllocsPerRun(100, func() { _, _ = w.AddEntries(1, make([]byte, 40), false, 0, b, discard{}) }); a != 0 {
		t.Errorf("AddEntries: %v allocs", a)
	}
}
