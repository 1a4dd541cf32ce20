package keywrite_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/wire/dta"
)

// open maps a Key-Write store with spec in a one-store catalogue, which is
// also the sink the tests apply ops to.
func open(t *testing.T, spec keywrite.Spec) (*store.Catalog, *store.Store) {
	t.Helper()
	cat, err := store.Open([]store.Descriptor{{Name: "kw", ID: 1, Primitive: dta.KeyWrite, KeyWrite: spec}},
		region.Config{HugePages: region.HugePagesOff}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	return cat, cat.Stores()[0]
}

// write translates one report and applies it.
func write(t *testing.T, cat *store.Catalog, s *store.Store, key, value []byte, n int) {
	t.Helper()
	b := memop.NewBatch(8, 64)
	spec := s.KeyWrite.Spec()
	if err := spec.Translate(b, s.Index, key, value, n, false); err != nil {
		t.Fatalf("Translate: %v", err)
	}
	if err := cat.Apply(b.Ops); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

func query(t *testing.T, s *store.Store, key []byte, n, threshold int) keywrite.Result {
	t.Helper()
	res, err := s.KeyWrite.Query(key, n, threshold, nil)
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	return res
}

func value(size int, seed byte) []byte {
	v := make([]byte, size)
	for i := range v {
		v[i] = seed + byte(i)
	}
	return v
}

func TestWrittenKeysAreFound(t *testing.T) {
	for _, hash := range []hashing.Algorithm{hashing.CRC32, hashing.CRC32C} {
		for _, size := range []int{1, 4, 20, 64} {
			for n := 1; n <= hashing.MaxCopies; n++ {
				t.Run(fmt.Sprintf("%s store with %d-byte values finds keys written with N=%d", hash, size, n), func(t *testing.T) {
					spec := keywrite.Spec{Slots: 1 << 12, ValueSize: size, MaxRedundancy: 8, Hash: hash}
					cat, s := open(t, spec)
					for k := range uint32(50) {
						key := keywrite.CompatKey(k)
						write(t, cat, s, key[:], value(size, byte(k)), n)
					}
					for k := range uint32(50) {
						key := keywrite.CompatKey(k)
						res := query(t, s, key[:], n, 0)
						if res.Status != keywrite.Found || !bytes.Equal(res.Value, value(size, byte(k))) {
							t.Fatalf("key %d: %v value % X, want found % X", k, res.Status, res.Value, value(size, byte(k)))
						}
						if res.Copies != n || res.Votes < 1 || res.Checks < res.Votes {
							t.Errorf("key %d: copies %d votes %d checks %d", k, res.Copies, res.Votes, res.Checks)
						}
					}
				})
			}
		}
	}
}

func TestQueryOutcomes(t *testing.T) {
	spec := keywrite.Spec{Slots: 1 << 10, ValueSize: 4, MaxRedundancy: 4, Hash: hashing.CRC32C}
	key := []byte("flow-a")
	a, b := []byte{0, 0, 0, 0xAA}, []byte{0, 0, 0, 0xBB}

	// setCopy overwrites copy i of key with (checksum(key), v), as a colliding
	// writer that happened to have the same checksum would.
	setCopy := func(t *testing.T, s *store.Store, i int, v []byte) {
		k := spec.Hash.Key(key)
		slot := make([]byte, spec.SlotSize())
		binary.LittleEndian.PutUint32(slot, k.Checksum())
		copy(slot[keywrite.ChecksumLen:], v)
		if err := s.Region.Write(spec.Offset(k, i), slot); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("an overwrite returns the new value", func(t *testing.T) {
		cat, s := open(t, spec)
		write(t, cat, s, key, a, 4)
		write(t, cat, s, key, b, 4)
		if res := query(t, s, key, 4, 0); res.Status != keywrite.Found || !bytes.Equal(res.Value, b) || res.Votes != 4 {
			t.Errorf("got %v % X votes %d, want found % X with 4 votes", res.Status, res.Value, res.Votes, b)
		}
	})

	t.Run("an unknown key is empty", func(t *testing.T) {
		cat, s := open(t, spec)
		write(t, cat, s, key, a, 4)
		res := query(t, s, []byte("flow-b"), 4, 0)
		if res.Status != keywrite.Empty || res.Value != nil || res.Checks != 0 {
			t.Errorf("got %+v, want empty", res)
		}
	})

	t.Run("a key in a fresh store is empty", func(t *testing.T) {
		_, s := open(t, spec)
		if res := query(t, s, key, 0, 0); res.Status != keywrite.Empty || res.Copies != 4 {
			t.Errorf("got %+v, want empty over 4 copies", res)
		}
	})

	t.Run("copies overwritten by other keys do not vote", func(t *testing.T) {
		cat, s := open(t, spec)
		write(t, cat, s, key, a, 4)
		k := spec.Hash.Key(key)
		if err := s.Region.Write(spec.Offset(k, 1), make([]byte, spec.SlotSize())); err != nil {
			t.Fatal(err)
		}
		res := query(t, s, key, 4, 0)
		if res.Status != keywrite.Found || !bytes.Equal(res.Value, a) || res.Checks != 3 || res.Votes != 3 {
			t.Errorf("got %+v, want found with 3 checks and 3 votes", res)
		}
	})

	tests := []struct {
		name      string
		copies    [][]byte // value of each copy written directly; nil leaves the copy empty
		threshold int
		status    keywrite.Status
		value     []byte
		votes     int
	}{
		{"a plurality wins over a minority", [][]byte{a, a, a, b}, 0, keywrite.Found, a, 3},
		{"a plurality meeting the threshold wins", [][]byte{a, a, a, b}, 3, keywrite.Found, a, 3},
		{"a plurality below the threshold is empty", [][]byte{a, a, a, b}, 4, keywrite.Empty, nil, 3},
		{"a single matching copy is found without a threshold", [][]byte{a, nil, nil, nil}, 1, keywrite.Found, a, 1},
		{"a single matching copy is empty with threshold 2", [][]byte{a, nil, nil, nil}, 2, keywrite.Empty, nil, 1},
		{"two values with two votes each are a conflict", [][]byte{a, b, a, b}, 0, keywrite.Conflict, nil, 2},
		{"two single disagreeing copies are a conflict", [][]byte{a, b, nil, nil}, 0, keywrite.Conflict, nil, 1},
		{"a conflict below the threshold is empty", [][]byte{a, b, nil, nil}, 2, keywrite.Empty, nil, 1},
		{"a tie for first among three values is a conflict", [][]byte{a, b, []byte{1, 2, 3, 4}, nil}, 0, keywrite.Conflict, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, s := open(t, spec)
			for i, v := range tt.copies {
				if v != nil {
					setCopy(t, s, i, v)
				}
			}
			res := query(t, s, key, 4, tt.threshold)
			if res.Status != tt.status || !bytes.Equal(res.Value, tt.value) || res.Votes != tt.votes {
				t.Errorf("got %v % X votes %d, want %v % X votes %d", res.Status, res.Value, res.Votes, tt.status, tt.value, tt.votes)
			}
			batch := make([]keywrite.Result, 1)
			if err := s.KeyWrite.QueryBatch([][]byte{key}, 4, tt.threshold, batch, make([]byte, 4)); err != nil {
				t.Fatal(err)
			}
			if b := batch[0]; b.Status != res.Status || !bytes.Equal(b.Value, res.Value) || b.Votes != res.Votes || b.Checks != res.Checks {
				t.Errorf("QueryBatch %+v, Query %+v", b, res)
			}
		})
	}
}

func TestQueryAppendsToDst(t *testing.T) {
	spec := keywrite.Spec{Slots: 256, ValueSize: 4, MaxRedundancy: 2, Hash: hashing.CRC32}
	cat, s := open(t, spec)
	key := keywrite.CompatKey(7)
	write(t, cat, s, key[:], []byte{1, 2, 3, 4}, 2)
	dst := make([]byte, 3, 16)
	res, err := s.KeyWrite.Query(key[:], 2, 0, dst)
	if err != nil || !bytes.Equal(res.Value, []byte{1, 2, 3, 4}) || &res.Value[0] != &dst[:1][0] {
		t.Errorf("Query = % X, %v; want the value in dst's array", res.Value, err)
	}
	// The value is a copy: changing the store afterwards does not change it.
	s.Region.Zero()
	if !bytes.Equal(res.Value, []byte{1, 2, 3, 4}) {
		t.Error("the returned value aliases the region")
	}
	allocs := testing.AllocsPerRun(100, func() {
		_, _ = s.KeyWrite.Query(key[:], 2, 0, dst)
	})
	if allocs != 0 {
		t.Errorf("Query with room in dst: %v allocs, want 0", allocs)
	}
}

func TestQueryRejectsBadArguments(t *testing.T) {
	_, s := open(t, keywrite.Spec{Slots: 256, ValueSize: 4, MaxRedundancy: 3, Hash: hashing.CRC32})
	for _, tt := range []struct {
		name         string
		n, threshold int
	}{
		{"redundancy above the maximum", 4, 0},
		{"negative redundancy", -1, 0},
		{"threshold above the redundancy", 2, 3},
		{"negative threshold", 2, -1},
	} {
		t.Run(tt.name+" is an error", func(t *testing.T) {
			if _, err := s.KeyWrite.Query([]byte{1}, tt.n, tt.threshold, nil); err == nil {
				t.Error("Query succeeded")
			}
		})
	}
}

// TestCompatLayoutIsByteExact pins the prototype's memory image (spec §2.1): for
// key 1 and data DE AD BE EF in a CRC-32 store of 256 slots, the four copies
// are at slots 173, 59, 129 and 23 and hold 79 B8 F8 99 DE AD BE EF; nothing
// else is written.
func TestCompatLayoutIsByteExact(t *testing.T) {
	spec := keywrite.Spec{Slots: 256, ValueSize: 4, MaxRedundancy: 4, Hash: hashing.CRC32}
	if spec.SlotSize() != 8 || spec.RegionSize() != 2048 {
		t.Fatalf("slot size %d region %d, want 8 and 2048", spec.SlotSize(), spec.RegionSize())
	}
	cat, s := open(t, spec)
	key := keywrite.CompatKey(1)
	write(t, cat, s, key[:], []byte{0xDE, 0xAD, 0xBE, 0xEF}, 4)

	want := make([]byte, 2048)
	for _, slot := range []int{173, 59, 129, 23} {
		copy(want[slot*8:], []byte{0x79, 0xB8, 0xF8, 0x99, 0xDE, 0xAD, 0xBE, 0xEF})
	}
	got := make([]byte, 2048)
	if err := s.Region.Read(0, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		for i := 0; i < len(got); i += 8 {
			if !bytes.Equal(got[i:i+8], want[i:i+8]) {
				t.Errorf("slot %d = % X, want % X", i/8, got[i:i+8], want[i:i+8])
			}
		}
	}
}

func TestTranslate(t *testing.T) {
	spec := keywrite.Spec{Slots: 1000, ValueSize: 6, MaxRedundancy: 3, Hash: hashing.CRC32C}
	key := []byte("some key")
	val := []byte{1, 2, 3, 4, 5, 6}

	t.Run("N copies are N writes of one padded slot at the Spec's offsets", func(t *testing.T) {
		b := memop.NewBatch(0, 0)
		if err := spec.Translate(b, 5, key, val, 3, false); err != nil {
			t.Fatal(err)
		}
		if len(b.Ops) != 3 {
			t.Fatalf("%d ops, want 3", len(b.Ops))
		}
		k := spec.Hash.Key(key)
		slot := binary.LittleEndian.AppendUint32(nil, k.Checksum())
		slot = append(append(slot, val...), 0, 0) // padded to 12 bytes
		for i, op := range b.Ops {
			if op.Kind != memop.Write || op.Store != 5 || op.Offset != spec.Offset(k, i) || !bytes.Equal(op.Data, slot) {
				t.Errorf("op %d = %+v, want write of % X at %d", i, op, slot, spec.Offset(k, i))
			}
			if op.Offset%spec.SlotSize() != 0 || op.Offset+op.Len() > spec.RegionSize() {
				t.Errorf("op %d at %d is not a slot of the store", i, op.Offset)
			}
		}
	})

	t.Run("with imm the first copy is a write with immediate carrying the checksum", func(t *testing.T) {
		b := memop.NewBatch(0, 0)
		if err := spec.Translate(b, 0, key, val, 2, true); err != nil {
			t.Fatal(err)
		}
		k := spec.Hash.Key(key)
		if b.Ops[0].Kind != memop.WriteImm || b.Ops[0].Imm != k.Checksum() || b.Ops[1].Kind != memop.Write {
			t.Errorf("ops = %+v", b.Ops)
		}
	})

	for _, tt := range []struct {
		name  string
		n     int
		value []byte
		err   error
	}{
		{"redundancy 0", 0, val, keywrite.ErrRedundancy},
		{"redundancy above the maximum", 4, val, keywrite.ErrRedundancy},
		{"a short value", 2, val[:5], keywrite.ErrValueSize},
		{"a long value", 2, append(val, 7), keywrite.ErrValueSize},
	} {
		t.Run(tt.name+" is rejected and emits nothing", func(t *testing.T) {
			b := memop.NewBatch(0, 0)
			if err := spec.Translate(b, 0, key, tt.value, tt.n, false); !errors.Is(err, tt.err) {
				t.Errorf("err = %v, want %v", err, tt.err)
			}
			if len(b.Ops) != 0 {
				t.Errorf("%d ops emitted", len(b.Ops))
			}
		})
	}
}

func TestSpec(t *testing.T) {
	valid := keywrite.Spec{Slots: 1 << 10, ValueSize: 4, MaxRedundancy: 4, Hash: hashing.CRC32}
	for _, tt := range []struct {
		name   string
		modify func(*keywrite.Spec)
		field  string // "" = valid
	}{
		{"the reference spec is valid", func(*keywrite.Spec) {}, ""},
		{"one slot is too few", func(s *keywrite.Spec) { s.Slots = 1 }, "slots"},
		{"more than 2^32 slots are too many", func(s *keywrite.Spec) { s.Slots = 1<<32 + 1; s.Hash = hashing.CRC32C }, "slots"},
		{"crc32 needs a power-of-two slot count", func(s *keywrite.Spec) { s.Slots = 1000 }, "slots"},
		{"crc32c takes any slot count", func(s *keywrite.Spec) { s.Slots = 1000; s.Hash = hashing.CRC32C }, ""},
		{"a missing hash is invalid", func(s *keywrite.Spec) { s.Hash = 0 }, "hash"},
		{"a zero value size is invalid", func(s *keywrite.Spec) { s.ValueSize = 0 }, "value_size"},
		{"a value larger than the wire allows is invalid", func(s *keywrite.Spec) { s.ValueSize = dta.MaxValueLen + 1 }, "value_size"},
		{"redundancy 0 is invalid", func(s *keywrite.Spec) { s.MaxRedundancy = 0 }, "redundancy"},
		{"redundancy 9 is invalid", func(s *keywrite.Spec) { s.MaxRedundancy = 9 }, "redundancy"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := valid
			tt.modify(&s)
			err := s.Validate()
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tt.field != "" && (err == nil || !hasKey(err, tt.field)):
				t.Errorf("Validate = %v, want an error naming %q", err, tt.field)
			}
		})
	}

	t.Run("slots are the checksum, the value and padding to 4 bytes", func(t *testing.T) {
		for size, want := range map[int]uint64{1: 8, 4: 8, 5: 12, 8: 12, 20: 24, 28: 32} {
			s := valid
			s.ValueSize = size
			if got := s.SlotSize(); got != want {
				t.Errorf("value size %d: slot size %d, want %d", size, got, want)
			}
		}
	})

	t.Run("SlotsFor fits slots in memory, rounding down to a power of two for crc32", func(t *testing.T) {
		s := valid // 8-byte slots
		for mem, want := range map[uint64]uint64{0: 0, 7: 0, 8: 1, 64 << 10: 8192, 100 << 10: 8192} {
			if got := s.SlotsFor(mem); got != want {
				t.Errorf("crc32 SlotsFor(%d) = %d, want %d", mem, got, want)
			}
		}
		s.Hash = hashing.CRC32C
		if got := s.SlotsFor(100 << 10); got != 12800 {
			t.Errorf("crc32c SlotsFor(100KiB) = %d, want 12800", got)
		}
		if got := s.SlotsFor(1 << 40); got != keywrite.MaxSlots {
			t.Errorf("SlotsFor(1TiB) = %d, want the maximum", got)
		}
	})
}

// hasKey reports whether err's message starts with "key:".
func hasKey(err error, key string) bool {
	msg := err.Error()
	return len(msg) > len(key) && msg[:len(key)+1] == key+":"
}

func TestTranslateAllocatesNothing(t *testing.T) {
	spec := keywrite.Spec{Slots: 1 << 16, ValueSize: 20, MaxRedundancy: 4, Hash: hashing.CRC32}
	b := memop.NewBatch(4, 64)
	val := make([]byte, 20)
	var k32 uint32
	translate := func() {
		b.Reset()
		k32++
		key := keywrite.CompatKey(k32) // on the stack
		if err := spec.Translate(b, 0, key[:], val, 4, false); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		translate()
	}
	if allocs := testing.AllocsPerRun(1000, translate); allocs != 0 {
		t.Errorf("Translate: %v allocs per report, want 0", allocs)
	}
}
