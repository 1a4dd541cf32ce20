package appendlist_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/appendlist"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/wire/dta"
)

// recorder is a sink that keeps a copy of every op and passes them on.
type recorder struct {
	mu   sync.Mutex
	next memop.Sink
	ops  []memop.Op
}

func (r *recorder) Apply(ops []memop.Op) error {
	r.mu.Lock()
	for _, op := range ops {
		op.Data = bytes.Clone(op.Data)
		r.ops = append(r.ops, op)
	}
	r.mu.Unlock()
	return r.next.Apply(ops)
}

func (r *recorder) take() []memop.Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	ops := r.ops
	r.ops = nil
	return ops
}

type discard struct{}

func (discard) Apply([]memop.Op) error { return nil }

// fixture is one Append store in a catalogue, its writer and a recording sink.
type fixture struct {
	spec appendlist.Spec
	cat  *store.Catalog
	st   *appendlist.Store
	w    *appendlist.Writer
	sink *recorder
	b    *memop.Batch
}

func newFixture(t *testing.T, spec appendlist.Spec) *fixture {
	t.Helper()
	cat, err := store.Open([]store.Descriptor{{Name: "ap", ID: 1, Primitive: dta.Append, Append: spec}},
		region.Config{HugePages: region.HugePagesOff}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	w, err := appendlist.NewWriter(spec, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{spec: spec, cat: cat, st: cat.Stores()[0].Append, w: w, sink: &recorder{next: cat}, b: memop.NewBatch(4, 256)}
}

// entry is the content of entry i: its index (little-endian, as many bytes as
// fit in 8) followed by a filler derived from i, so that a stale or torn
// entry never passes for entry i.
func entry(i uint64, size int) []byte { return fillEntry(make([]byte, size), i) }

func fillEntry(e []byte, i uint64) []byte {
	var idx [8]byte
	binary.LittleEndian.PutUint64(idx[:], i)
	n := copy(e, idx[:])
	for j := n; j < len(e); j++ {
		e[j] = byte(i) ^ byte(j*37)
	}
	return e
}

func (f *fixture) add(t *testing.T, list uint32, i uint64, now int64) {
	t.Helper()
	if err := f.w.Add(list, entry(i, f.spec.EntrySize), false, now, f.b, f.sink); err != nil {
		t.Fatalf("Add(%d): %v", i, err)
	}
}

func (f *fixture) poll(t *testing.T, list uint32, cursor uint64, limit int) appendlist.PollResult {
	t.Helper()
	res, err := f.st.Poll(list, cursor, limit, nil)
	if err != nil {
		t.Fatalf("Poll(%d): %v", cursor, err)
	}
	checkEntries(t, f.spec, res)
	return res
}

// checkEntries asserts that every polled entry is the entry of its index.
func checkEntries(t testing.TB, spec appendlist.Spec, res appendlist.PollResult) {
	t.Helper()
	es := spec.EntrySize
	if len(res.Data) != res.Count*es || res.Next != res.First+uint64(res.Count) {
		t.Fatalf("poll shape: %d bytes for %d entries, first %d next %d", len(res.Data), res.Count, res.First, res.Next)
	}
	want := make([]byte, es)
	for j := range res.Count {
		i := res.First + uint64(j)
		if got := res.Data[j*es : (j+1)*es]; !bytes.Equal(got, fillEntry(want, i)) {
			t.Fatalf("entry %d = % X, want % X", i, got, entry(i, es))
		}
	}
}

func TestEntriesArriveInOrderWithoutLoss(t *testing.T) {
	for _, tt := range []struct {
		batch, size int
		capacity    uint64
	}{
		{1, 4, 64}, {3, 8, 64}, {4, 8, 64}, {4, 13, 50}, {16, 4, 64}, {16, 20, 100},
	} {
		spec := appendlist.Spec{Lists: 3, Capacity: tt.capacity, EntrySize: tt.size, Batch: tt.batch}
		n := tt.capacity - spec.Window() // what a reader can count on
		t.Run(fmt.Sprintf("%d entries of %d bytes in batches of %d come back in order", n, tt.size, tt.batch), func(t *testing.T) {
			f := newFixture(t, spec)
			// Interleave three lists; list 1 gets twice as many adds of its own.
			for i := range n {
				for list := range uint32(3) {
					f.add(t, list, i, 0)
				}
			}
			if _, err := f.w.Flush(0, 0, f.b, f.sink); err != nil {
				t.Fatal(err)
			}
			for list := range uint32(3) {
				res := f.poll(t, list, 0, 1<<20)
				if res.Count != int(n) || res.First != 0 || res.Lost != 0 || res.Next != n || res.Head != n {
					t.Errorf("list %d: count %d first %d lost %d next %d head %d, want all %d", list, res.Count, res.First, res.Lost, res.Next, res.Head, n)
				}
			}
		})
	}
}

func TestBatchIsOneWriteAndAHeadWrite(t *testing.T) {
	spec := appendlist.Spec{Lists: 4, Capacity: 64, EntrySize: 8, Batch: 4}
	f := newFixture(t, spec)
	for i := range uint64(3) {
		f.add(t, 2, i, 0)
	}
	if ops := f.sink.take(); len(ops) != 0 {
		t.Fatalf("%d ops before the batch is full", len(ops))
	}
	if h, _ := f.st.Head(2); h != 0 {
		t.Fatalf("head %d before the batch is written", h)
	}
	f.add(t, 2, 3, 0)
	ops := f.sink.take()
	want := append(append(append(entry(0, 8), entry(1, 8)...), entry(2, 8)...), entry(3, 8)...)
	if len(ops) != 2 ||
		ops[0].Kind != memop.Write || ops[0].Offset != spec.EntryOffset(2, 0) || !bytes.Equal(ops[0].Data, want) ||
		ops[1].Kind != memop.Write || ops[1].Offset != spec.HeadOffset(2) || !bytes.Equal(ops[1].Data, []byte{4, 0, 0, 0, 0, 0, 0, 0}) {
		t.Fatalf("ops = %+v, want one 32-byte write and the head 4", ops)
	}
	if spec.HeadOffset(2)%8 != 0 || spec.EntryOffset(2, 0) != spec.HeadOffset(2)+appendlist.HeaderSize {
		t.Errorf("head at %d, first entry at %d", spec.HeadOffset(2), spec.EntryOffset(2, 0))
	}
	if h, _ := f.st.Head(2); h != 4 {
		t.Errorf("head = %d, want 4", h)
	}
	st := f.w.Stats()
	if st.Entries.Load() != 4 || st.Batches.Load() != 1 || st.Partial.Load() != 0 || st.HeaderWrites.Load() != 1 {
		t.Errorf("stats %d entries %d batches %d partial %d headers", st.Entries.Load(), st.Batches.Load(), st.Partial.Load(), st.HeaderWrites.Load())
	}
}

func TestImmediateWritesThePartialBatchAndNotifies(t *testing.T) {
	spec := appendlist.Spec{Lists: 4, Capacity: 64, EntrySize: 8, Batch: 4}
	f := newFixture(t, spec)
	ch, cancel := f.cat.Subscribe(4)
	defer cancel()
	f.add(t, 3, 0, 0)
	if err := f.w.Add(3, entry(1, 8), true, 0, f.b, f.sink); err != nil {
		t.Fatal(err)
	}
	ops := f.sink.take()
	if len(ops) != 2 || len(ops[0].Data) != 16 || ops[1].Kind != memop.WriteImm || ops[1].Imm != 3 {
		t.Fatalf("ops = %+v, want a 2-entry write and a head write with immediate 3", ops)
	}
	select {
	case n := <-ch:
		if n.Store != "ap" || n.Offset != spec.HeadOffset(3) || n.Imm != 3 {
			t.Errorf("notification = %+v", n)
		}
	default:
		t.Error("no notification")
	}
	if res := f.poll(t, 3, 0, 10); res.Count != 2 {
		t.Errorf("polled %d entries, want 2", res.Count)
	}
	// The next batch is a normal one again.
	for i := uint64(2); i < 6; i++ {
		f.add(t, 3, i, 0)
	}
	if ops := f.sink.take(); len(ops) != 2 || ops[1].Kind != memop.Write {
		t.Errorf("ops after the immediate batch = %+v", ops)
	}
}

func TestPartialBatchIsFlushedAfterTheDelay(t *testing.T) {
	spec := appendlist.Spec{Lists: 130, Capacity: 64, EntrySize: 4, Batch: 8}
	f := newFixture(t, spec)
	f.add(t, 129, 0, 1000) // a list in the third word of the dirty bitmap
	f.add(t, 129, 1, 1500)
	f.add(t, 5, 0, 1800)
	if n, err := f.w.Flush(1999, 1000, f.b, f.sink); n != 0 || err != nil {
		t.Fatalf("Flush before the delay = %d, %v", n, err)
	}
	if h, _ := f.st.Head(129); h != 0 {
		t.Fatalf("head %d before the delay", h)
	}
	if n, err := f.w.Flush(2000, 1000, f.b, f.sink); n != 1 || err != nil {
		t.Fatalf("Flush at the delay = %d, %v; want 1 batch", n, err)
	}
	if res := f.poll(t, 129, 0, 10); res.Count != 2 || res.Head != 2 {
		t.Errorf("list 129: %d entries, head %d; want 2", res.Count, res.Head)
	}
	if h, _ := f.st.Head(5); h != 0 {
		t.Errorf("list 5 was flushed before its delay")
	}
	if n, _ := f.w.Flush(0, 0, f.b, f.sink); n != 1 {
		t.Errorf("Flush(all) = %d, want list 5", n)
	}
	if n, _ := f.w.Flush(0, 0, f.b, f.sink); n != 0 {
		t.Errorf("second Flush(all) = %d, want 0", n)
	}
	// Later entries continue after the partial batch.
	for i := uint64(2); i < 10; i++ {
		f.add(t, 129, i, 3000)
	}
	if res := f.poll(t, 129, 2, 100); res.Count != 8 || res.First != 2 {
		t.Errorf("after the partial batch: %+v", res)
	}
	if got := f.w.Stats().Partial.Load(); got != 2 {
		t.Errorf("partial batches = %d, want 2", got)
	}
}

func TestBatchWrappingTheRingIsSplitAndNothingIsLost(t *testing.T) {
	t.Run("a batch crossing the ring's end becomes two writes", func(t *testing.T) {
		spec := appendlist.Spec{Lists: 1, Capacity: 10, EntrySize: 4, Batch: 4}
		f := newFixture(t, spec)
		for i := range uint64(8) {
			f.add(t, 0, i, 0)
		}
		f.sink.take()
		for i := uint64(8); i < 12; i++ {
			f.add(t, 0, i, 0)
		}
		ops := f.sink.take()
		if len(ops) != 3 ||
			ops[0].Offset != spec.EntryOffset(0, 8) || len(ops[0].Data) != 8 ||
			ops[1].Offset != spec.EntryOffset(0, 0) || len(ops[1].Data) != 8 ||
			ops[2].Offset != spec.HeadOffset(0) {
			t.Fatalf("ops = %+v, want entries 8-9 at the end, 10-11 at the start, then the head", ops)
		}
		if f.w.Stats().WrapSplits.Load() != 1 {
			t.Errorf("wrap splits = %d", f.w.Stats().WrapSplits.Load())
		}
	})

	for _, tt := range []struct {
		capacity uint64
		batch    int
	}{{10, 4}, {16, 4}, {64, 16}, {9, 2}, {8, 1}} {
		t.Run(fmt.Sprintf("a reader keeping up with a ring of %d in batches of %d loses nothing over many wraps", tt.capacity, tt.batch), func(t *testing.T) {
			spec := appendlist.Spec{Lists: 2, Capacity: tt.capacity, EntrySize: 4, Batch: tt.batch}
			f := newFixture(t, spec)
			var cursor, got uint64
			const total = 1000
			for i := range uint64(total) {
				f.add(t, 1, i, 0)
				if (i+1)%uint64(tt.batch) == 0 {
					res := f.poll(t, 1, cursor, 1000)
					if res.Lost != 0 {
						t.Fatalf("after entry %d: lost %d", i, res.Lost)
					}
					cursor, got = res.Next, got+uint64(res.Count)
				}
			}
			f.w.Flush(0, 0, f.b, f.sink)
			res := f.poll(t, 1, cursor, 1000)
			if got += uint64(res.Count); got != total || res.Lost != 0 {
				t.Errorf("read %d of %d entries", got, total)
			}
		})
	}
}

func TestLappedReaderCountsLostEntries(t *testing.T) {
	for _, tt := range []struct {
		capacity uint64
		batch    int
	}{{64, 4}, {50, 4}, {32, 16}, {8, 1}} {
		t.Run(fmt.Sprintf("3x a ring of %d entries unread: only still-valid entries return", tt.capacity), func(t *testing.T) {
			spec := appendlist.Spec{Lists: 1, Capacity: tt.capacity, EntrySize: 12, Batch: tt.batch}
			f := newFixture(t, spec)
			total := 3 * tt.capacity
			for i := range total {
				f.add(t, 0, i, 0)
			}
			f.w.Flush(0, 0, f.b, f.sink)
			res := f.poll(t, 0, 0, 1<<20)
			if res.Lost+uint64(res.Count) != total || res.Next != total || res.First != res.Lost {
				t.Errorf("lost %d + count %d != %d (first %d next %d)", res.Lost, res.Count, total, res.First, res.Next)
			}
			// 2 rings were overwritten. The reader also gives up the oldest
			// batch of the ring, which a writer may be overwriting while the
			// head says otherwise (it cannot tell an idle writer).
			if want := 2*tt.capacity + uint64(tt.batch); res.Lost != want {
				t.Errorf("lost %d, want 2 rings and a batch, %d", res.Lost, want)
			}
			// A cursor inside the valid window loses nothing.
			res = f.poll(t, 0, total-5, 100)
			if res.Lost != 0 || res.Count != 5 {
				t.Errorf("poll from head-5: %+v", res)
			}
		})
	}
}

func TestPollLimitsAndCursors(t *testing.T) {
	spec := appendlist.Spec{Lists: 2, Capacity: 64, EntrySize: 8, Batch: 4}
	f := newFixture(t, spec)
	for i := range uint64(20) {
		f.add(t, 0, i, 0)
	}

	t.Run("a limit returns that many and a cursor to continue", func(t *testing.T) {
		var cursor uint64
		for want := uint64(0); want < 20; want += 7 {
			res := f.poll(t, 0, cursor, 7)
			if res.First != want || res.Count != int(min(7, 20-want)) {
				t.Fatalf("poll from %d: first %d count %d", cursor, res.First, res.Count)
			}
			cursor = res.Next
		}
		if res := f.poll(t, 0, cursor, 7); res.Count != 0 || res.Next != 20 {
			t.Errorf("poll at the head: %+v", res)
		}
	})

	t.Run("a zero limit returns nothing", func(t *testing.T) {
		if res := f.poll(t, 0, 0, 0); res.Count != 0 || res.Next != 0 {
			t.Errorf("%+v", res)
		}
	})

	t.Run("a cursor ahead of the head is an error", func(t *testing.T) {
		res, err := f.st.Poll(0, 21, 10, nil)
		if !errors.Is(err, appendlist.ErrCursorAhead) || res.Head != 20 {
			t.Errorf("Poll(21) = %+v, %v", res, err)
		}
	})

	t.Run("after a reset the old cursor is ahead", func(t *testing.T) {
		g := newFixture(t, spec)
		for i := range uint64(8) {
			g.add(t, 1, i, 0)
		}
		g.st.Reset()
		if _, err := g.st.Poll(1, 8, 10, nil); !errors.Is(err, appendlist.ErrCursorAhead) {
			t.Errorf("Poll after Reset: %v", err)
		}
		// A writer told about the reset starts again from 0.
		g.w.Resume(1, 0)
		for i := range uint64(4) {
			g.add(t, 1, i, 0)
		}
		if res := g.poll(t, 1, 0, 10); res.Count != 4 {
			t.Errorf("after Resume(0): %+v", res)
		}
	})

	t.Run("a resumed writer continues from the given head", func(t *testing.T) {
		g := newFixture(t, spec)
		g.w.Resume(0, 1000)
		for i := uint64(1000); i < 1004; i++ {
			g.add(t, 0, i, 0)
		}
		if res := g.poll(t, 0, 1000, 10); res.Count != 4 || res.Head != 1004 {
			t.Errorf("%+v", res)
		}
		g.w.Resume(99, 5) // out of range: ignored
	})

	t.Run("the returned data is appended to dst", func(t *testing.T) {
		dst := make([]byte, 0, 64)
		res, err := f.st.Poll(0, 0, 8, dst)
		if err != nil || res.Count != 8 || &res.Data[0] != &dst[:1][0] {
			t.Errorf("Poll did not use dst: %v", err)
		}
		if a := testing.AllocsPerRun(100, func() { _, _ = f.st.Poll(0, 0, 8, dst) }); a != 0 {
			t.Errorf("Poll with room in dst: %v allocs", a)
		}
	})
}

func TestErrors(t *testing.T) {
	spec := appendlist.Spec{Lists: 2, Capacity: 64, EntrySize: 8, Batch: 4}
	f := newFixture(t, spec)
	if err := f.w.Add(2, entry(0, 8), false, 0, f.b, f.sink); !errors.Is(err, appendlist.ErrList) {
		t.Errorf("Add to list 2: %v", err)
	}
	if err := f.w.Add(0, entry(0, 7), false, 0, f.b, f.sink); !errors.Is(err, appendlist.ErrEntrySize) {
		t.Errorf("Add of 7 bytes: %v", err)
	}
	if _, err := f.st.Head(2); !errors.Is(err, appendlist.ErrList) {
		t.Errorf("Head(2): %v", err)
	}
	if _, err := f.st.Poll(2, 0, 1, nil); !errors.Is(err, appendlist.ErrList) {
		t.Errorf("Poll(2): %v", err)
	}
	if f.w.Stats().Entries.Load() != 0 {
		t.Error("a rejected entry was counted")
	}
}

func TestSpec(t *testing.T) {
	valid := appendlist.Spec{Lists: 4, Capacity: 64, EntrySize: 4, Batch: 4}
	for _, tt := range []struct {
		name   string
		modify func(*appendlist.Spec)
		field  string
	}{
		{"the reference spec is valid", func(*appendlist.Spec) {}, ""},
		{"no lists is invalid", func(s *appendlist.Spec) { s.Lists = 0 }, "lists"},
		{"too many lists is invalid", func(s *appendlist.Spec) { s.Lists = appendlist.MaxLists + 1 }, "lists"},
		{"a zero entry size is invalid", func(s *appendlist.Spec) { s.EntrySize = 0 }, "entry_size"},
		{"an entry larger than the wire allows is invalid", func(s *appendlist.Spec) { s.EntrySize = dta.MaxValueLen + 1 }, "entry_size"},
		{"batch 0 is invalid", func(s *appendlist.Spec) { s.Batch = 0 }, "batch"},
		{"batch 17 is invalid", func(s *appendlist.Spec) { s.Batch = 17 }, "batch"},
		{"a ring of one batch is invalid: no entry would ever be safe to read", func(s *appendlist.Spec) { s.Capacity = 4 }, "capacity"},
		{"a ring of two batches is valid", func(s *appendlist.Spec) { s.Capacity = 8 }, ""},
		{"a ring over 1 TiB is invalid", func(s *appendlist.Spec) { s.Capacity = 1 << 39 }, "capacity"},
		{"too much translator memory for batches is invalid", func(s *appendlist.Spec) { s.Lists = 1 << 24; s.Batch = 16; s.EntrySize = 2 }, "lists"},
		{"a store over 1 TiB is invalid", func(s *appendlist.Spec) { s.Lists = 1 << 20; s.Capacity = 1 << 20 }, "lists"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := valid
			tt.modify(&s)
			err := s.Validate()
			if (tt.field == "") != (err == nil) || (err != nil && !bytes.HasPrefix([]byte(err.Error()), []byte(tt.field))) {
				t.Errorf("Validate = %v, want error naming %q", err, tt.field)
			}
		})
	}
	t.Run("lists are 64-byte aligned: header plus ring rounded up", func(t *testing.T) {
		s := appendlist.Spec{Lists: 3, Capacity: 10, EntrySize: 13, Batch: 4}
		if s.ListStride() != 64+192 || s.RegionSize() != 3*256 || s.HeadOffset(2) != 512 || s.EntryOffset(1, 12) != 256+64+2*13 {
			t.Errorf("stride %d region %d head2 %d entry(1,12) %d", s.ListStride(), s.RegionSize(), s.HeadOffset(2), s.EntryOffset(1, 12))
		}
	})
	t.Run("CapacityFor fits every list in memory", func(t *testing.T) {
		s := appendlist.Spec{Lists: 3, EntrySize: 13, Batch: 4}
		for _, mem := range []uint64{1 << 10, 1 << 16, 1<<20 + 7} {
			s.Capacity = s.CapacityFor(mem)
			if s.RegionSize() > mem || s.Capacity == 0 {
				t.Errorf("memory %d: capacity %d needs %d bytes", mem, s.Capacity, s.RegionSize())
			}
		}
		if got := s.CapacityFor(3 * 100); got != 0 {
			t.Errorf("CapacityFor(tiny) = %d", got)
		}
	})
}

// TestConcurrentReaderNeverSeesAStaleOrTornEntry runs one writer and one
// polling reader at full speed over small rings. Every entry carries its own
// index, so any entry returned that is not the entry of its index is a stale
// or torn read. A reader that keeps up must account for every entry (read or
// lost); a lagging reader always polls from the oldest readable entry, the
// next the writer overwrites, with a copy long enough for the writer to
// overtake it. Run it under -race.
func TestConcurrentReaderNeverSeesAStaleOrTornEntry(t *testing.T) {
	for _, tt := range []struct {
		capacity uint64
		batch    int
		size     int
		lagging  bool
	}{
		{64, 4, 8, false}, {30, 4, 12, false}, {16, 1, 8, false}, {48, 16, 4, false},
		{256, 4, 64, true}, {100, 3, 24, true}, {64, 16, 8, true},
	} {
		mode := "keeping up"
		if tt.lagging {
			mode = "lagging"
		}
		t.Run(fmt.Sprintf("a reader %s with a ring of %d, batch %d, %d-byte entries", mode, tt.capacity, tt.batch, tt.size), func(t *testing.T) {
			spec := appendlist.Spec{Lists: 2, Capacity: tt.capacity, EntrySize: tt.size, Batch: tt.batch}
			f := newFixture(t, spec)
			polls := 20_000
			if tt.lagging {
				polls = 2_000 // each copies a whole ring
			}
			if testing.Short() {
				polls /= 10
			}
			var stop atomic.Bool
			var written uint64
			var wg sync.WaitGroup
			// However the reader ends, stop the writer before the store closes.
			defer wg.Wait()
			defer stop.Store(true)
			wg.Go(func() {
				b := memop.NewBatch(4, 256)
				i := uint64(0)
				for ; !stop.Load(); i++ {
					if err := f.w.Add(1, entry(i, tt.size), false, int64(i), b, f.cat); err != nil {
						t.Error(err)
						return
					}
					if i%97 == 0 { // partial batches too
						if _, err := f.w.Flush(0, 0, b, f.cat); err != nil {
							t.Error(err)
							return
						}
					}
				}
				if _, err := f.w.Flush(0, 0, b, f.cat); err != nil {
					t.Error(err)
				}
				written = i
			})
			var cursor, read, lost uint64
			dst := make([]byte, 0, int(tt.capacity)*tt.size)
			poll := func() appendlist.PollResult {
				limit := 32
				if tt.lagging {
					cursor, limit = 0, int(tt.capacity)
				}
				res, err := f.st.Poll(1, cursor, limit, dst)
				if err != nil {
					t.Fatal(err)
				}
				checkEntries(t, spec, res)
				if res.First != cursor+res.Lost {
					t.Fatalf("cursor %d lost %d but first %d", cursor, res.Lost, res.First)
				}
				cursor, read, lost = res.Next, read+uint64(res.Count), lost+res.Lost
				return res
			}
			for range polls {
				poll()
			}
			stop.Store(true)
			wg.Wait()
			if tt.lagging {
				t.Logf("%d polls read %d entries while %d were written", polls, read, written)
				return
			}
			for poll().Next != written {
			}
			if read+lost != written {
				t.Errorf("read %d + lost %d != %d written", read, lost, written)
			}
			t.Logf("%d written: read %d, lost %d to laps", written, read, lost)
		})
	}
}

func TestWriterAddAllocatesNothing(t *testing.T) {
	spec := appendlist.Spec{Lists: 16, Capacity: 1024, EntrySize: 13, Batch: 4}
	w, _ := appendlist.NewWriter(spec, 0)
	b := memop.NewBatch(4, 256)
	var i uint32
	add := func() {
		i++
		var e [13]byte
		binary.LittleEndian.PutUint32(e[:], i)
		if err := w.Add(i%16, e[:], false, int64(i), b, discard{}); err != nil {
			t.Fatal(err)
		}
	}
	for range 1000 {
		add()
	}
	if allocs := testing.AllocsPerRun(1000, add); allocs != 0 {
		t.Errorf("Writer.Add: %v allocs per entry, want 0", allocs)
	}
}

func TestPendingCountsEntriesHeldInPartialBatches(t *testing.T) {
	spec := appendlist.Spec{Lists: 4, Capacity: 64, EntrySize: 8, Batch: 4}
	f := newFixture(t, spec)
	st := f.w.Stats()
	pending := func(want uint64, when string) {
		t.Helper()
		if got := st.Pending(); got != want {
			t.Errorf("%s: Pending() = %d, want %d (entries %d, written %d, discarded %d)",
				when, got, want, st.Entries.Load(), st.Written.Load(), st.Discarded.Load())
		}
	}
	pending(0, "a new writer")
	for i := range uint64(3) {
		f.add(t, 0, i, 0)
	}
	pending(3, "three entries of a batch of four")
	f.add(t, 0, 3, 0)
	pending(0, "the batch filled and was written")
	f.add(t, 1, 0, 0)
	f.add(t, 1, 1, 0)
	if _, err := f.w.AddEntries(2, append(entry(0, 8), entry(1, 8)...), false, 0, f.b, f.sink); err != nil {
		t.Fatal(err)
	}
	pending(4, "two partial batches of two")
	if _, err := f.w.Flush(0, 0, f.b, f.sink); err != nil {
		t.Fatal(err)
	}
	pending(0, "after a flush")
	f.add(t, 3, 0, 0)
	f.w.Resume(3, 0)
	pending(0, "after Resume discarded the partial batch")
	if st.Written.Load() != 8 || st.Discarded.Load() != 1 || st.Entries.Load() != 9 {
		t.Errorf("entries %d written %d discarded %d, want 9, 8, 1", st.Entries.Load(), st.Written.Load(), st.Discarded.Load())
	}
}

// FuzzPollOverAnyHeader writes arbitrary head and low words into a list's
// header, as a faulty RDMA peer or a damaged checkpoint could, and polls:
// whatever the words, a poll returns a well-formed result within the limit
// and never an index at or past the head it read, nor panics.
func FuzzPollOverAnyHeader(f *testing.F) {
	le := func(head, low uint64) []byte {
		return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, head), low)
	}
	be := func(head, low uint64) []byte {
		return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, head), low)
	}
	f.Add([]byte("00000000\xff\xff\xff\xff\xff\xff\xff\xff"), uint64(3), uint16(100)) // low 2^64-1 above the head
	f.Add(le(10, 78), uint64(3), uint16(80))                                          // low above the head
	f.Add(be(10, 78), uint64(3), uint16(80))
	f.Add(le(1<<64-1, 0), uint64(1<<64-2), uint16(10)) // a head near 2^64
	f.Add(le(20, 4), uint64(0), uint16(100))           // a plausible header
	spec := appendlist.Spec{Lists: 1, Capacity: 64, EntrySize: 4, Batch: 4}
	cat, err := store.Open([]store.Descriptor{{Name: "ap", ID: 1, Primitive: dta.Append, Append: spec}},
		region.Config{HugePages: region.HugePagesOff}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { cat.Close() })
	st := cat.Stores()[0].Append
	f.Fuzz(func(t *testing.T, header []byte, cursor uint64, limit uint16) {
		if len(header) < 16 {
			return
		}
		if err := cat.Apply([]memop.Op{{Kind: memop.Write, Offset: spec.HeadOffset(0), Data: header[:16]}}); err != nil {
			t.Fatal(err)
		}
		head, _ := st.Head(0)
		res, err := st.Poll(0, cursor, int(limit), nil)
		if err != nil {
			if !errors.Is(err, appendlist.ErrCursorAhead) || cursor <= head {
				t.Fatalf("Poll(%d) over head %d: %v", cursor, head, err)
			}
			return
		}
		if len(res.Data) != res.Count*spec.EntrySize || res.Count > int(limit) || res.Next != res.First+uint64(res.Count) ||
			res.First < cursor || res.Next > head {
			t.Fatalf("Poll(%d, %d) over head %d: %d bytes, count %d, first %d, next %d", cursor, limit, head, len(res.Data), res.Count, res.First, res.Next)
		}
	})
}
