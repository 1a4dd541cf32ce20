// Package keywrite is the Key-Write primitive: a key's value is written as N
// redundant copies of (checksum(key), value) at N hash-chosen slots, and read
// back by a plurality vote over the copies whose checksum matches.
//
// Spec is the pure geometry shared by the writer (Translate) and the reader
// (Store); nothing else decides where a byte goes. The package does no I/O and
// keeps no state beyond a Store's region.
//
// Memory layout, one slot of SlotSize bytes (docs/PROTOCOL.md):
//
//	[0:4]   checksum(key), little-endian (as the prototype stores it)
//	[4:4+V] the value, byte for byte as reported (compat: big-endian data)
//	        then zero padding up to a multiple of 4
//
// For a 32-bit compat key the hashed key bytes are its little-endian encoding
// (CompatKey), so a store with Hash CRC32, 4-byte values and a power-of-two slot
// count has exactly the original prototype's layout.
package keywrite

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/wire/dta"
)

// ChecksumLen is the size of the key checksum at the start of a slot.
const ChecksumLen = 4

// MaxSlots is the largest slot count (slot hashes are 32-bit).
const MaxSlots = 1 << 32

// Spec is the geometry of one Key-Write store.
type Spec struct {
	Slots         uint64            // number of slots; a power of two for Hash CRC32
	ValueSize     int               // bytes of a value, 1..dta.MaxValueLen
	MaxRedundancy int               // largest N a report may ask for, 1..8; the query default
	Hash          hashing.Algorithm // slot and checksum family
}

// Validate reports the first thing wrong with s, naming the field.
func (s Spec) Validate() error {
	switch {
	case s.Slots < 2 || s.Slots > MaxSlots:
		return fmt.Errorf("slots: %d out of range [2, 2^32]", s.Slots)
	case s.Hash == hashing.CRC32 && s.Slots&(s.Slots-1) != 0:
		return fmt.Errorf("slots: %d is not a power of two, which hash crc32 (the prototype's mask) needs", s.Slots)
	case !s.Hash.Valid():
		return fmt.Errorf("hash: %v is not a known hash", s.Hash)
	case s.ValueSize < 1 || s.ValueSize > dta.MaxValueLen:
		return fmt.Errorf("value_size: %d out of range [1, %d]", s.ValueSize, dta.MaxValueLen)
	case s.MaxRedundancy < 1 || s.MaxRedundancy > dta.MaxRedundancy:
		return fmt.Errorf("redundancy: %d out of range [1, %d]", s.MaxRedundancy, dta.MaxRedundancy)
	}
	return nil
}

// SlotSize is the bytes of one slot: checksum, value, padding to 4 bytes.
func (s Spec) SlotSize() uint64 { return uint64(ChecksumLen+s.ValueSize+3) &^ 3 }

// RegionSize is the bytes of memory the store needs.
func (s Spec) RegionSize() uint64 { return s.Slots * s.SlotSize() }

// SlotsFor returns how many slots of spec's value size fit in memory bytes,
// rounded down to a power of two when the hash needs it.
func (s Spec) SlotsFor(memory uint64) uint64 {
	n := memory / s.SlotSize()
	if n > MaxSlots {
		n = MaxSlots
	}
	if s.Hash == hashing.CRC32 && n > 0 {
		for n&(n-1) != 0 {
			n &= n - 1
		}
	}
	return n
}

// Offset returns the byte offset of copy n of a key hashed as k.
func (s Spec) Offset(k hashing.Keyed, n int) uint64 {
	return hashing.Reduce(k.Slot(n), s.Slots) * s.SlotSize()
}

// CompatKey returns the key bytes hashed for a 32-bit compat key: its
// little-endian encoding, as the prototype hashes it.
func CompatKey(key32 uint32) [4]byte {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], key32)
	return b
}

// Translation errors; each is a reason a report is dropped.
var (
	ErrRedundancy = errors.New("redundancy above the store's maximum")
	ErrValueSize  = errors.New("value size differs from the store's")
)

// Translate appends the ops that write value under key with n copies (1 ≤ n
// ≤ MaxRedundancy) to b. key is the hashed key bytes (CompatKey for compat
// reports). With imm, the first copy is a write with immediate carrying the key
// checksum. It changes nothing in b on error.
func (s *Spec) Translate(b *memop.Batch, store uint16, key, value []byte, n int, imm bool) error {
	return s.TranslateKeyed(b, store, s.Hash.Key(key), value, n, imm)
}

// TranslateKeyed is Translate for a key already hashed with s.Hash (for a
// compat key: s.Hash.Key32, which skips building its bytes).
func (s *Spec) TranslateKeyed(b *memop.Batch, store uint16, k hashing.Keyed, value []byte, n int, imm bool) error {
	if n < 1 || n > s.MaxRedundancy {
		return ErrRedundancy
	}
	if len(value) != s.ValueSize {
		return ErrValueSize
	}
	slot := b.Alloc(int(s.SlotSize()))
	binary.LittleEndian.PutUint32(slot, k.Checksum())
	copy(slot[ChecksumLen:], value)
	for i := range n {
		if imm && i == 0 {
			b.WriteImm(store, s.Offset(k, i), slot, k.Checksum())
		} else {
			b.Write(store, s.Offset(k, i), slot)
		}
	}
	return nil
}
