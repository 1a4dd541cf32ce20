package keyincrement_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/keyincrement"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/wire/dta"
)

func open(t *testing.T, spec keyincrement.Spec) (*store.Catalog, *store.Store) {
	t.Helper()
	cat, err := store.Open([]store.Descriptor{{Name: "ki", ID: 1, Primitive: dta.KeyIncrement, KeyIncrement: spec}},
		region.Config{HugePages: region.HugePagesOff}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	return cat, cat.Stores()[0]
}

func add(t *testing.T, cat *store.Catalog, s *store.Store, key []byte, delta uint64) {
	t.Helper()
	b := memop.NewBatch(8, 0)
	spec := s.KeyIncrement.Spec()
	spec.Translate(b, s.Index, key, delta)
	if err := cat.Apply(b.Ops); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

func get(t *testing.T, s *store.Store, key []byte, n int) uint64 {
	t.Helper()
	v, err := s.KeyIncrement.Query(key, n)
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	return v
}

func TestIncrementsSum(t *testing.T) {
	for _, hash := range []hashing.Algorithm{hashing.CRC32, hashing.CRC32C} {
		for _, n := range []int{1, 2, 4, 8} {
			t.Run(fmt.Sprintf("%s store with N=%d sums the deltas of each key", hash, n), func(t *testing.T) {
				cat, s := open(t, keyincrement.Spec{Slots: 1 << 14, Redundancy: n, Hash: hash})
				want := map[uint32]uint64{}
				rng := rand.New(rand.NewPCG(1, uint64(n)))
				for range 500 {
					k := rng.Uint32N(40)
					d := rng.Uint64N(1000)
					key := binary.LittleEndian.AppendUint32(nil, k)
					add(t, cat, s, key, d)
					want[k] += d
				}
				for k, sum := range want {
					if got := get(t, s, binary.LittleEndian.AppendUint32(nil, k), n); got != sum {
						t.Errorf("key %d: %d, want %d", k, got, sum)
					}
				}
			})
		}
	}

	t.Run("deltas wrap modulo 2^64", func(t *testing.T) {
		cat, s := open(t, keyincrement.Spec{Slots: 256, Redundancy: 2, Hash: hashing.CRC32})
		add(t, cat, s, []byte{1}, 1<<63)
		add(t, cat, s, []byte{1}, 1<<63+5)
		if got := get(t, s, []byte{1}, 2); got != 5 {
			t.Errorf("got %d, want 5", got)
		}
	})

	t.Run("a key never counted reads 0", func(t *testing.T) {
		_, s := open(t, keyincrement.Spec{Slots: 256, Redundancy: 2, Hash: hashing.CRC32})
		if got := get(t, s, []byte("nobody"), 0); got != 0 {
			t.Errorf("got %d, want 0", got)
		}
	})
}

func TestQueryIsTheMinimumOverN(t *testing.T) {
	spec := keyincrement.Spec{Slots: 1 << 10, Redundancy: 4, Hash: hashing.CRC32C}
	key := []byte("host-1")
	k := spec.Hash.Key(key)

	t.Run("a collision on some counters does not change the answer", func(t *testing.T) {
		cat, s := open(t, spec)
		add(t, cat, s, key, 10)
		// Another key shares counters 0, 1 and 3 and adds to them.
		for _, i := range []int{0, 1, 3} {
			if _, err := s.Region.Add64(spec.Offset(k, i), uint64(100*(i+1))); err != nil {
				t.Fatal(err)
			}
		}
		if got := get(t, s, key, 4); got != 10 {
			t.Errorf("got %d, want 10 (the uncollided counter)", got)
		}
	})

	t.Run("collisions on every counter overestimate by the smallest", func(t *testing.T) {
		cat, s := open(t, spec)
		add(t, cat, s, key, 10)
		for i := range 4 {
			if _, err := s.Region.Add64(spec.Offset(k, i), uint64(7+i)); err != nil {
				t.Fatal(err)
			}
		}
		if got := get(t, s, key, 4); got != 17 {
			t.Errorf("got %d, want 17", got)
		}
	})

	t.Run("a count-min sketch never underestimates in a crowded store", func(t *testing.T) {
		cat, s := open(t, keyincrement.Spec{Slots: 64, Redundancy: 3, Hash: hashing.CRC32C})
		truth := map[uint16]uint64{}
		rng := rand.New(rand.NewPCG(2, 2))
		for range 2000 {
			k := uint16(rng.Uint32N(500))
			d := 1 + rng.Uint64N(10)
			add(t, cat, s, binary.BigEndian.AppendUint16(nil, k), d)
			truth[k] += d
		}
		for k, sum := range truth {
			if got := get(t, s, binary.BigEndian.AppendUint16(nil, k), 3); got < sum {
				t.Fatalf("key %d: %d, below its true sum %d", k, got, sum)
			}
		}
	})
}

// TestEveryReportUsesTheStoresN pins why a store has one N: counters carry no
// checksum, so a query over counters a key never touched would read 0. Every
// report increments all N of the store's counters, so any query n ≤ N is at or
// above the truth.
func TestEveryReportUsesTheStoresN(t *testing.T) {
	cat, s := open(t, keyincrement.Spec{Slots: 1 << 12, Redundancy: 4, Hash: hashing.CRC32C})
	add(t, cat, s, []byte("host"), 10)
	for _, n := range []int{0, 1, 2, 4} {
		if got := get(t, s, []byte("host"), n); got != 10 {
			t.Errorf("query with n=%d: %d, want 10", n, got)
		}
	}
}

func TestReset(t *testing.T) {
	cat, s := open(t, keyincrement.Spec{Slots: 256, Redundancy: 2, Hash: hashing.CRC32})
	add(t, cat, s, []byte{1}, 42)
	s.KeyIncrement.Reset()
	if got := get(t, s, []byte{1}, 2); got != 0 {
		t.Errorf("after Reset: %d, want 0", got)
	}
	add(t, cat, s, []byte{1}, 3)
	if got := get(t, s, []byte{1}, 2); got != 3 {
		t.Errorf("after Reset and an add: %d, want 3", got)
	}
}

func TestTranslate(t *testing.T) {
	spec := keyincrement.Spec{Slots: 1000, Redundancy: 4, Hash: hashing.CRC32C}

	t.Run("a report is N aligned fetch-adds and nothing else", func(t *testing.T) {
		b := memop.NewBatch(0, 0)
		spec.Translate(b, 3, []byte("k"), 99)
		k := spec.Hash.Key([]byte("k"))
		if len(b.Ops) != 4 {
			t.Fatalf("%d ops, want 4", len(b.Ops))
		}
		for i, op := range b.Ops {
			if op.Kind != memop.FetchAdd || op.Store != 3 || op.Delta != 99 || op.Data != nil ||
				op.Offset != spec.Offset(k, i) || op.Offset%8 != 0 || op.Offset+8 > spec.RegionSize() {
				t.Errorf("op %d = %+v", i, op)
			}
		}
	})

	t.Run("compat keys use Key-Write's slots", func(t *testing.T) {
		// Key 1 (LE) in 256 counters: slots 173, 59, 129, 23 (spec §2.1).
		s := keyincrement.Spec{Slots: 256, Redundancy: 4, Hash: hashing.CRC32}
		b := memop.NewBatch(0, 0)
		s.Translate(b, 0, []byte{1, 0, 0, 0}, 1)
		for i, slot := range []uint64{173, 59, 129, 23} {
			if b.Ops[i].Offset != slot*8 {
				t.Errorf("copy %d at %d, want slot %d", i, b.Ops[i].Offset, slot)
			}
		}
	})

}

func TestQueryRejectsBadRedundancy(t *testing.T) {
	_, s := open(t, keyincrement.Spec{Slots: 256, Redundancy: 2, Hash: hashing.CRC32})
	for _, n := range []int{-1, 3} {
		if _, err := s.KeyIncrement.Query([]byte{1}, n); err == nil {
			t.Errorf("Query with redundancy %d succeeded", n)
		}
	}
}

func TestSpec(t *testing.T) {
	valid := keyincrement.Spec{Slots: 1 << 10, Redundancy: 4, Hash: hashing.CRC32}
	for _, tt := range []struct {
		name   string
		modify func(*keyincrement.Spec)
		field  string
	}{
		{"the reference spec is valid", func(*keyincrement.Spec) {}, ""},
		{"one counter is too few", func(s *keyincrement.Spec) { s.Slots = 1 }, "slots"},
		{"crc32 needs a power-of-two count", func(s *keyincrement.Spec) { s.Slots = 3000 }, "slots"},
		{"crc32c takes any count", func(s *keyincrement.Spec) { s.Slots = 3000; s.Hash = hashing.CRC32C }, ""},
		{"a missing hash is invalid", func(s *keyincrement.Spec) { s.Hash = 0 }, "hash"},
		{"redundancy 0 is invalid", func(s *keyincrement.Spec) { s.Redundancy = 0 }, "redundancy"},
		{"redundancy 9 is invalid", func(s *keyincrement.Spec) { s.Redundancy = 9 }, "redundancy"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := valid
			tt.modify(&s)
			err := s.Validate()
			if (tt.field == "") != (err == nil) || (err != nil && err.Error()[:len(tt.field)+1] != tt.field+":") {
				t.Errorf("Validate = %v, want error naming %q", err, tt.field)
			}
		})
	}
	t.Run("SlotsFor fits 8-byte counters in memory", func(t *testing.T) {
		if got := valid.SlotsFor(100 << 10); got != 8192 {
			t.Errorf("crc32: %d, want 8192", got)
		}
		c := valid
		c.Hash = hashing.CRC32C
		if got := c.SlotsFor(100 << 10); got != 12800 {
			t.Errorf("crc32c: %d, want 12800", got)
		}
	})
}

func TestTranslateAllocatesNothing(t *testing.T) {
	spec := keyincrement.Spec{Slots: 1 << 16, Redundancy: 4, Hash: hashing.CRC32}
	b := memop.NewBatch(4, 0)
	var k32 uint32
	translate := func() {
		b.Reset()
		k32++
		var key [4]byte
		binary.LittleEndian.PutUint32(key[:], k32)
		spec.Translate(b, 0, key[:], 1)
	}
	for range 10 {
		translate()
	}
	if allocs := testing.AllocsPerRun(1000, translate); allocs != 0 {
		t.Errorf("Translate: %v allocs per report, want 0", allocs)
	}
}
