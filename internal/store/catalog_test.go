package store_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/appendlist"
	"github.com/dta-go/dta/internal/primitive/keyincrement"
	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/wire/dta"
)

var smallRegions = region.Config{HugePages: region.HugePagesOff}

// openSmall opens a catalogue of a 2 KiB Key-Write store (index 0), a 2 KiB
// Key-Increment store (index 1) and an Append store (index 2).
func openSmall(t *testing.T) *store.Catalog {
	t.Helper()
	cat, err := store.Open([]store.Descriptor{
		{Name: "kw", ID: 10, Primitive: dta.KeyWrite, Default: true,
			KeyWrite: keywrite.Spec{Slots: 256, ValueSize: 4, MaxRedundancy: 4, Hash: hashing.CRC32}},
		{Name: "ki", ID: 20, Primitive: dta.KeyIncrement,
			KeyIncrement: keyincrement.Spec{Slots: 256, Redundancy: 2, Hash: hashing.CRC32}},
		{Name: "ap", ID: 30, Primitive: dta.Append, Default: true,
			Append: appendlist.Spec{Lists: 2, Capacity: 64, EntrySize: 4, Batch: 4}},
	}, smallRegions, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	return cat
}

// snapshot copies every store's bytes.
func snapshot(t *testing.T, cat *store.Catalog) [][]byte {
	t.Helper()
	var out [][]byte
	for _, s := range cat.Stores() {
		b := make([]byte, s.Region.Size())
		if err := s.Region.Read(0, b); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func TestOpenBindsEveryStore(t *testing.T) {
	cat := openSmall(t)
	stores := cat.Stores()
	if len(stores) != 3 {
		t.Fatalf("%d stores", len(stores))
	}
	for i, s := range stores {
		if int(s.Index) != i || s.Region.Size() != s.RegionSize() {
			t.Errorf("store %s: index %d, region %d bytes for %d", s.Name, s.Index, s.Region.Size(), s.RegionSize())
		}
		if cat.ByName(s.Name) != s || cat.ByID(s.ID) != s {
			t.Errorf("store %s not found by name or id", s.Name)
		}
	}
	if stores[0].KeyWrite == nil || stores[1].KeyIncrement == nil || stores[2].Append == nil ||
		stores[0].KeyIncrement != nil || stores[2].Postcard != nil {
		t.Error("query stores not bound to their primitives")
	}
	if cat.Default(dta.KeyWrite) != stores[0] || cat.Default(dta.Append) != stores[2] ||
		cat.Default(dta.KeyIncrement) != nil || cat.Default(dta.Postcard) != nil {
		t.Error("Default returned the wrong stores")
	}
	if cat.ByName("nope") != nil || cat.ByID(99) != nil {
		t.Error("unknown stores found")
	}
	if d := cat.Descriptors(); len(d) != 3 || d[1].Name != "ki" {
		t.Errorf("Descriptors = %+v", d)
	}
	if err := cat.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := cat.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestOpenRejectsAnInvalidDescriptor(t *testing.T) {
	_, err := store.Open([]store.Descriptor{
		{Name: "good", ID: 1, Primitive: dta.KeyIncrement, KeyIncrement: keyincrement.Spec{Slots: 256, Redundancy: 2, Hash: hashing.CRC32}},
		{Name: "bad", ID: 2, Primitive: dta.KeyWrite, KeyWrite: keywrite.Spec{Slots: 100, ValueSize: 4, MaxRedundancy: 2, Hash: hashing.CRC32}},
	}, smallRegions, nil)
	if err == nil || !strings.Contains(err.Error(), "bad") || !strings.Contains(err.Error(), "slots") {
		t.Errorf("Open = %v, want an error naming store bad and slots", err)
	}
}

func TestApplyRejectsBadOpsWithoutChangingAByte(t *testing.T) {
	data := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	for _, tt := range []struct {
		name string
		op   memop.Op
		err  error
	}{
		{"a store index beyond the catalogue", memop.Op{Kind: memop.Write, Store: 3, Data: data}, store.ErrNoStore},
		{"the largest store index", memop.Op{Kind: memop.FetchAdd, Store: math.MaxUint16, Delta: 1}, store.ErrNoStore},
		{"a write starting past the end", memop.Op{Kind: memop.Write, Store: 0, Offset: 2048, Data: data[:1]}, region.ErrOutOfBounds},
		{"a write straddling the end", memop.Op{Kind: memop.Write, Store: 0, Offset: 2044, Data: data}, region.ErrOutOfBounds},
		{"an aligned 8-byte write past the end", memop.Op{Kind: memop.Write, Store: 0, Offset: 2048, Data: data}, region.ErrOutOfBounds},
		{"a write whose end overflows", memop.Op{Kind: memop.Write, Store: 0, Offset: math.MaxUint64 - 3, Data: data}, region.ErrOutOfBounds},
		{"a write with immediate past the end", memop.Op{Kind: memop.WriteImm, Store: 2, Offset: 1 << 20, Data: data, Imm: 1}, region.ErrOutOfBounds},
		{"a fetch-add past the end", memop.Op{Kind: memop.FetchAdd, Store: 1, Offset: 2048, Delta: 1}, region.ErrOutOfBounds},
		{"a misaligned fetch-add", memop.Op{Kind: memop.FetchAdd, Store: 1, Offset: 12, Delta: 1}, region.ErrMisaligned},
		{"an unknown op kind", memop.Op{Kind: 0, Store: 0, Data: data}, store.ErrOpKind},
	} {
		t.Run(tt.name+" is rejected", func(t *testing.T) {
			cat := openSmall(t)
			ch, cancel := cat.Subscribe(1)
			defer cancel()
			// Give every store recognisable content first.
			for _, s := range cat.Stores() {
				fill := bytes.Repeat([]byte{0xA5}, int(s.Region.Size()))
				if err := s.Region.Write(0, fill); err != nil {
					t.Fatal(err)
				}
			}
			before := snapshot(t, cat)
			err := cat.Apply([]memop.Op{tt.op})
			if !errors.Is(err, tt.err) {
				t.Errorf("Apply = %v, want %v", err, tt.err)
			}
			after := snapshot(t, cat)
			for i := range before {
				if !bytes.Equal(before[i], after[i]) {
					t.Errorf("store %d changed", i)
				}
			}
			st := cat.Stats()
			if st.Rejected.Load() != 1 || st.Ops.Load() != 0 || st.Bytes.Load() != 0 {
				t.Errorf("stats: rejected %d ops %d bytes %d", st.Rejected.Load(), st.Ops.Load(), st.Bytes.Load())
			}
			select {
			case n := <-ch:
				t.Errorf("notification %+v for a rejected op", n)
			default:
			}
		})
	}

	t.Run("ops before a rejected one are applied, ops after it are not", func(t *testing.T) {
		cat := openSmall(t)
		err := cat.Apply([]memop.Op{
			{Kind: memop.Write, Store: 0, Offset: 0, Data: []byte{1}},
			{Kind: memop.Write, Store: 0, Offset: 4096, Data: []byte{2}},
			{Kind: memop.Write, Store: 0, Offset: 1, Data: []byte{3}},
		})
		if !errors.Is(err, region.ErrOutOfBounds) || !strings.Contains(err.Error(), "kw") {
			t.Errorf("Apply = %v, want out of bounds naming the store", err)
		}
		got := make([]byte, 2)
		cat.Stores()[0].Region.Read(0, got)
		if got[0] != 1 || got[1] != 0 {
			t.Errorf("bytes = % X, want 01 00", got)
		}
	})
}

func TestApplyWritesAndAdds(t *testing.T) {
	cat := openSmall(t)
	kw, ki := cat.Stores()[0], cat.Stores()[1]
	ops := []memop.Op{
		{Kind: memop.Write, Store: 0, Offset: 8, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}},         // aligned 8 bytes: atomic store
		{Kind: memop.Write, Store: 0, Offset: 20, Data: []byte{9, 10, 11, 12, 13, 14, 15, 16}}, // unaligned: copy
		{Kind: memop.Write, Store: 0, Offset: 2047, Data: []byte{0xEE}},                        // the last byte
		{Kind: memop.FetchAdd, Store: 1, Offset: 2040, Delta: 5},
		{Kind: memop.FetchAdd, Store: 1, Offset: 2040, Delta: math.MaxUint64}, // -1
	}
	if err := cat.Apply(ops); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 2048)
	kw.Region.Read(0, got)
	want := make([]byte, 2048)
	copy(want[8:], []byte{1, 2, 3, 4, 5, 6, 7, 8})
	copy(want[20:], []byte{9, 10, 11, 12, 13, 14, 15, 16})
	want[2047] = 0xEE
	if !bytes.Equal(got, want) {
		t.Errorf("store bytes differ: % X", got[:32])
	}
	if v, _ := ki.Region.Load64(2040); v != 4 {
		t.Errorf("counter = %d, want 4", v)
	}
	counter := make([]byte, 8)
	ki.Region.Read(2040, counter)
	if binary.LittleEndian.Uint64(counter) != 4 {
		t.Errorf("counter bytes % X are not little-endian 4", counter)
	}
	st := cat.Stats()
	if st.Ops.Load() != 5 || st.Bytes.Load() != 8+8+1+8+8 || st.Rejected.Load() != 0 {
		t.Errorf("stats: ops %d bytes %d rejected %d", st.Ops.Load(), st.Bytes.Load(), st.Rejected.Load())
	}
}

// TestAlignedEightByteWritesAreAtomic races 8-byte writes of two patterns
// against atomic loads of the same word: a reader must see one pattern or the
// other, never a mix (as with an RDMA NIC placing an aligned 8-byte write).
func TestAlignedEightByteWritesAreAtomic(t *testing.T) {
	cat := openSmall(t)
	r := cat.Stores()[2].Region
	a := []byte{0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11}
	b := []byte{0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE}
	const off = 64
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		ops := []memop.Op{{Kind: memop.Write, Store: 2, Offset: off, Data: a}, {Kind: memop.Write, Store: 2, Offset: off, Data: b}}
		for !stop.Load() {
			if err := cat.Apply(ops); err != nil {
				t.Error(err)
				return
			}
		}
	})
	defer wg.Wait()
	defer stop.Store(true)
	for range 200_000 {
		v, err := r.Load64(off)
		if err != nil {
			t.Fatal(err)
		}
		if v != 0 && v != 0x1111111111111111 && v != 0xEEEEEEEEEEEEEEEE {
			t.Fatalf("torn word %#016x", v)
		}
	}
}

func TestWriteWithImmediateNotifiesSubscribers(t *testing.T) {
	t.Run("every subscriber gets the store, offset and immediate", func(t *testing.T) {
		cat := openSmall(t)
		ch1, cancel1 := cat.Subscribe(4)
		defer cancel1()
		ch2, cancel2 := cat.Subscribe(4)
		defer cancel2()
		err := cat.Apply([]memop.Op{
			{Kind: memop.Write, Store: 2, Offset: 64, Data: []byte{1, 2, 3, 4}},
			{Kind: memop.WriteImm, Store: 2, Offset: 0, Data: []byte{1, 0, 0, 0, 0, 0, 0, 0}, Imm: 0xC0FFEE},
		})
		if err != nil {
			t.Fatal(err)
		}
		want := store.Notification{Store: "ap", Offset: 0, Imm: 0xC0FFEE}
		for i, ch := range []<-chan store.Notification{ch1, ch2} {
			select {
			case n := <-ch:
				if n != want {
					t.Errorf("subscriber %d got %+v, want %+v", i, n, want)
				}
			default:
				t.Errorf("subscriber %d got nothing", i)
			}
		}
		if h, _ := cat.Stores()[2].Append.Head(0); h != 1 {
			t.Errorf("the write with immediate was not applied before notifying: head %d", h)
		}
		if cat.Stats().Notifications.Load() != 1 {
			t.Errorf("notifications = %d", cat.Stats().Notifications.Load())
		}
	})

	t.Run("a cancelled subscriber gets nothing more, and cancel is idempotent", func(t *testing.T) {
		cat := openSmall(t)
		ch, cancel := cat.Subscribe(4)
		cancel()
		cancel()
		cat.Notify(store.Notification{Store: "x", Imm: 1})
		select {
		case n := <-ch:
			t.Errorf("got %+v after cancel", n)
		default:
		}
	})

	t.Run("a slow subscriber misses notifications beyond its buffer, counted", func(t *testing.T) {
		cat := openSmall(t)
		ch, cancel := cat.Subscribe(2)
		defer cancel()
		for i := range uint32(5) {
			if err := cat.Apply([]memop.Op{{Kind: memop.WriteImm, Store: 0, Offset: 0, Data: []byte{1}, Imm: i}}); err != nil {
				t.Fatal(err)
			}
		}
		if n := <-ch; n.Imm != 0 {
			t.Errorf("first = %+v", n)
		}
		if n := <-ch; n.Imm != 1 {
			t.Errorf("second = %+v", n)
		}
		if got := cat.Stats().NotifyDropped.Load(); got != 3 {
			t.Errorf("dropped = %d, want 3", got)
		}
	})

	t.Run("notifications from a concurrent applier all arrive in order", func(t *testing.T) {
		cat := openSmall(t)
		ch, cancel := cat.Subscribe(1000)
		defer cancel()
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := range uint32(1000) {
				if err := cat.Apply([]memop.Op{{Kind: memop.WriteImm, Store: 1, Offset: 8, Data: []byte{1}, Imm: i}}); err != nil {
					t.Error(err)
					return
				}
			}
		})
		for i := range uint32(1000) {
			if n := <-ch; n.Imm != i || n.Store != "ki" || n.Offset != 8 {
				t.Fatalf("notification %d = %+v", i, n)
			}
		}
		wg.Wait()
	})
}

func TestApplyAllocatesNothing(t *testing.T) {
	cat := openSmall(t)
	ops := []memop.Op{
		{Kind: memop.Write, Store: 0, Offset: 8, Data: make([]byte, 8)},
		{Kind: memop.Write, Store: 0, Offset: 20, Data: make([]byte, 12)},
		{Kind: memop.FetchAdd, Store: 1, Offset: 16, Delta: 1},
	}
	if a := testing.AllocsPerRun(1000, func() { _ = cat.Apply(ops) }); a != 0 {
		t.Errorf("Apply: %v allocs, want 0", a)
	}
}
