package appendlist_test

import (
	"fmt"
	"testing"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/appendlist"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/wire/dta"
)

// BenchmarkTranslate measures Writer.Add of 4-byte entries (INT congestion
// events) to 16 lists, batches of B entries, ops to a sink that discards them.
// One op is one entry.
func BenchmarkTranslate(b *testing.B) {
	for _, batch := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("4B/batch=%d", batch), func(b *testing.B) {
			spec := appendlist.Spec{Lists: 16, Capacity: 1 << 16, EntrySize: 4, Batch: batch}
			w, err := appendlist.NewWriter(spec, 0)
			if err != nil {
				b.Fatal(err)
			}
			mb := memop.NewBatch(4, 256)
			e := make([]byte, 4)
			b.ReportAllocs()
			var i uint32
			for b.Loop() {
				e[0] = byte(i)
				if err := w.Add(i/64%16, e, false, 0, mb, discard{}); err != nil {
					b.Fatal(err)
				}
				i++
			}
			s := b.Elapsed().Seconds()
			st := w.Stats()
			b.ReportMetric(float64(b.N)/s, "reports/s")
			b.ReportMetric(float64(st.Batches.Load()+st.WrapSplits.Load()+st.HeaderWrites.Load())/s, "ops/s")
		})
	}
}

// BenchmarkTranslateRuns measures the translation of 4-byte entries arriving
// in runs for one list (as in a multi-report datagram from one reporter),
// batches of 16, into a pre-faulted 256 MiB store on huge pages through the
// local sink: one Add per entry, or one AddEntries per run. One op is one
// entry.
func BenchmarkTranslateRuns(b *testing.B) {
	spec := appendlist.Spec{Lists: 16, EntrySize: 4, Batch: 16}
	spec.Capacity = spec.CapacityFor(256 << 20)
	cat, err := store.Open([]store.Descriptor{{Name: "ap", ID: 1, Primitive: dta.Append, Append: spec}},
		region.Config{HugePages: region.HugePagesMadvise, Prefault: true}, nil)
	if err != nil {
		b.Skip(err)
	}
	defer cat.Close()
	for _, run := range []int{16, 128} {
		for _, many := range []bool{false, true} {
			name := "Add"
			if many {
				name = "AddEntries"
			}
			b.Run(fmt.Sprintf("%s/run=%d", name, run), func(b *testing.B) {
				w, err := appendlist.NewWriter(spec, 0)
				if err != nil {
					b.Fatal(err)
				}
				mb := memop.NewBatch(4, 256)
				entries := make([]byte, run*4)
				b.ReportAllocs()
				n := 0
				var list uint32
				for b.Loop() {
					entries[0]++
					if many {
						if _, err := w.AddEntries(list, entries, false, 0, mb, cat); err != nil {
							b.Fatal(err)
						}
					} else {
						for i := range run {
							if err := w.Add(list, entries[i*4:i*4+4], false, 0, mb, cat); err != nil {
								b.Fatal(err)
							}
						}
					}
					n += run
					list = (list + 1) % 16
				}
				b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "reports/s")
			})
		}
	}
}

// BenchmarkPoll measures a reader polling a list in chunks of 1024 entries of
// 4 bytes while no writer runs (the copy and the two head checks). One op is
// one poll; entries/s counts the entries returned.
func BenchmarkPoll(b *testing.B) {
	spec := appendlist.Spec{Lists: 1, Capacity: 1 << 20, EntrySize: 4, Batch: 16}
	cat, err := store.Open([]store.Descriptor{{Name: "ap", ID: 1, Primitive: dta.Append, Append: spec}},
		region.Config{HugePages: region.HugePagesMadvise, Prefault: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cat.Close()
	st := cat.Stores()[0].Append
	w, err := appendlist.NewWriter(spec, 0)
	if err != nil {
		b.Fatal(err)
	}
	mb := memop.NewBatch(4, 256)
	e := make([]byte, 4)
	for i := range spec.Capacity {
		e[0] = byte(i)
		if err := w.Add(0, e, false, 0, mb, cat); err != nil {
			b.Fatal(err)
		}
	}
	const limit = 1024
	dst := make([]byte, 0, limit*4)
	var cursor uint64
	entries := 0
	b.ReportAllocs()
	for b.Loop() {
		res, err := st.Poll(0, cursor, limit, dst)
		if err != nil {
			b.Fatal(err)
		}
		entries += res.Count
		cursor = res.Next
		if res.Count < limit {
			cursor = 0
		}
	}
	b.SetBytes(limit * 4)
	b.ReportMetric(float64(entries)/b.Elapsed().Seconds(), "entries/s")
}
