package store_test

import (
	"slices"
	"testing"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/appendlist"
	"github.com/dta-go/dta/internal/primitive/keyincrement"
	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/wire/dta"
)

// A checkpoint writer or exporter that tracks a store's region must see every
// block the local sink wrote, whatever the kind of op.
func TestTheLocalSinkRecordsEveryWriteForTrackers(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   memop.Op
	}{
		{"a Key-Write slot", memop.Op{Kind: memop.Write, Store: 0, Offset: 4096 + 8, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}}},
		{"a short write", memop.Op{Kind: memop.Write, Store: 0, Offset: 4096 + 1, Data: []byte{1, 2, 3}}},
		{"a write with immediate", memop.Op{Kind: memop.WriteImm, Store: 0, Offset: 4096, Data: []byte{1, 2, 3, 4}, Imm: 7}},
		{"a fetch-and-add", memop.Op{Kind: memop.FetchAdd, Store: 1, Offset: 4096, Delta: 3}},
		{"an Append head word", memop.Op{Kind: memop.Write, Store: 2, Offset: 0, Data: []byte{1, 0, 0, 0, 0, 0, 0, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cat := openLarger(t)
			s := cat.Stores()[tc.op.Store]
			tr, err := s.Region.Track(4096)
			if err != nil {
				t.Fatal(err)
			}
			for _, batch := range [][]memop.Op{{tc.op}, {tc.op, tc.op, tc.op}} { // with and without the prefetch pass
				if err := cat.Apply(batch); err != nil {
					t.Fatal(err)
				}
				want := []uint64{tc.op.Offset / 4096}
				if got, _ := tr.Take(nil); !slices.Equal(got, want) {
					t.Errorf("%d ops: tracker took %v, want %v", len(batch), got, want)
				}
			}
		})
	}
}

// openLarger is openSmall's catalogue with stores of several 4 KiB blocks.
func openLarger(t *testing.T) *store.Catalog {
	t.Helper()
	cat, err := store.Open([]store.Descriptor{
		{Name: "kw", ID: 10, Primitive: dta.KeyWrite, Default: true,
			KeyWrite: keywrite.Spec{Slots: 4096, ValueSize: 4, MaxRedundancy: 4, Hash: hashing.CRC32}},
		{Name: "ki", ID: 20, Primitive: dta.KeyIncrement,
			KeyIncrement: keyincrement.Spec{Slots: 4096, Redundancy: 2, Hash: hashing.CRC32}},
		{Name: "ap", ID: 30, Primitive: dta.Append, Default: true,
			Append: appendlist.Spec{Lists: 2, Capacity: 64, EntrySize: 4, Batch: 4}},
	}, smallRegions, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	return cat
}
