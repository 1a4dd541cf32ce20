package tea

import (
	"fmt"
	"hash/crc64"
	"math/bits"
)

// Limits of a Spec.
const (
	MaxBuckets    = 1 << 40 // buckets in one table
	MaxCells      = 64      // cells per bucket
	MaxKeySize    = 64      // bytes of a key
	MaxValueSize  = 1024    // bytes of a value
	MaxScratchpad = 9000    // bytes of packet a scratchpad holds: the path MTU of the paper's prototype
)

// ScratchpadHeaderLen is the bytes before the packet in a scratchpad: the
// parking lookup's tag (8), the packet length (2) and 6 zero bytes.
const ScratchpadHeaderLen = 16

// FlagValid is bit 0 of a cell's flag byte: the cell holds an entry. The
// other bits are zero.
const FlagValid = 0x01

// Hash names the function that maps a key to its home bucket. The zero value
// is invalid.
type Hash uint8

// The bucket hashes.
const (
	// CRC64 is CRC-64/XZ over the key bytes: the ECMA-182 polynomial
	// 0x42F0E1EBA9EA3693, reflected, initial value and final XOR all ones,
	// as Go's hash/crc64 computes it with crc64.ECMA (check value of
	// "123456789": 0x995DC9BBDF1939FA). The paper's prototype used the
	// Tofino's built-in CRC-64 the same way. A key's home bucket is the high
	// 64 bits of the 128-bit product Sum(key) × Buckets.
	CRC64 Hash = 1
)

var crc64Table = crc64.MakeTable(crc64.ECMA)

// Valid reports whether h is a known hash.
func (h Hash) Valid() bool { return h == CRC64 }

// String returns the configuration name of h.
func (h Hash) String() string {
	if h == CRC64 {
		return "crc64"
	}
	return fmt.Sprintf("hash(%d)", uint8(h))
}

// ParseHash parses a configuration name of a hash.
func ParseHash(s string) (Hash, error) {
	if s == "crc64" {
		return CRC64, nil
	}
	return 0, fmt.Errorf("unknown hash %q (known: crc64)", s)
}

// Sum returns the 64-bit hash of key. It does not allocate.
func (h Hash) Sum(key []byte) uint64 { return crc64.Checksum(key, crc64Table) }

// Spec is the geometry of one TEA-TABLE. It is pure and comparable; the
// control plane (Table), the placement and the lookup engine all compute
// addresses from it and from nothing else.
type Spec struct {
	Buckets    uint64 // n: buckets (and rows) in the table, 2..MaxBuckets
	Cells      int    // cells per bucket, 1..MaxCells
	KeySize    int    // bytes of every key, 1..MaxKeySize
	ValueSize  int    // bytes of every value, 0..MaxValueSize (0: a set, e.g. a firewall's allowed flows)
	Scratchpad int    // bytes of packet a row's scratchpad holds (an MTU, e.g. 1500); 0: no scratchpad
	Hash       Hash   // the bucket hash
}

// Validate reports the first thing wrong with s, naming the field.
func (s Spec) Validate() error {
	switch {
	case s.Buckets < 2 || s.Buckets > MaxBuckets:
		return fmt.Errorf("buckets: %d out of range [2, 2^40]", s.Buckets)
	case s.Cells < 1 || s.Cells > MaxCells:
		return fmt.Errorf("cells: %d out of range [1, %d]", s.Cells, MaxCells)
	case s.KeySize < 1 || s.KeySize > MaxKeySize:
		return fmt.Errorf("key_size: %d out of range [1, %d]", s.KeySize, MaxKeySize)
	case s.ValueSize < 0 || s.ValueSize > MaxValueSize:
		return fmt.Errorf("value_size: %d out of range [0, %d]", s.ValueSize, MaxValueSize)
	case s.Scratchpad < 0 || s.Scratchpad > MaxScratchpad:
		return fmt.Errorf("scratchpad: %d out of range [0, %d]", s.Scratchpad, MaxScratchpad)
	case !s.Hash.Valid():
		return fmt.Errorf("hash: %v is not a known hash", s.Hash)
	}
	return nil
}

// CellSize is the bytes of one cell: flag, key, value.
func (s Spec) CellSize() uint64 { return uint64(1 + s.KeySize + s.ValueSize) }

// BucketSize is the bytes of one bucket.
func (s Spec) BucketSize() uint64 { return uint64(s.Cells) * s.CellSize() }

// ScratchpadSize is the bytes of one row's scratchpad: 0 without one,
// otherwise ScratchpadHeaderLen + Scratchpad.
func (s Spec) ScratchpadSize() uint64 {
	if s.Scratchpad == 0 {
		return 0
	}
	return ScratchpadHeaderLen + uint64(s.Scratchpad)
}

// RowSize is the bytes of one row: a bucket, the shadow copy of the next
// bucket and the scratchpad, rounded up to a multiple of 8.
func (s Spec) RowSize() uint64 { return (2*s.BucketSize() + s.ScratchpadSize() + 7) &^ 7 }

// TableSize is the bytes of the whole table.
func (s Spec) TableSize() uint64 { return s.Buckets * s.RowSize() }

// Entries is the number of cells in the table, the most entries it holds
// outside the stash.
func (s Spec) Entries() uint64 { return s.Buckets * uint64(s.Cells) }

// RowOffset is the byte offset of row i (i < Buckets).
func (s Spec) RowOffset(i uint64) uint64 { return i * s.RowSize() }

// BucketOffset is the byte offset of bucket i's original, at the start of
// row i.
func (s Spec) BucketOffset(i uint64) uint64 { return s.RowOffset(i) }

// ShadowOffset is the byte offset of the shadow copy of bucket i: right after
// bucket (i−1) mod n in row (i−1) mod n.
func (s Spec) ShadowOffset(i uint64) uint64 {
	return s.RowOffset(s.prev(i)) + s.BucketSize()
}

// CellOffset is the byte offset of cell c of bucket i's original.
func (s Spec) CellOffset(i uint64, c int) uint64 {
	return s.BucketOffset(i) + uint64(c)*s.CellSize()
}

// ShadowCellOffset is the byte offset of cell c of bucket i's shadow copy.
func (s Spec) ShadowCellOffset(i uint64, c int) uint64 {
	return s.ShadowOffset(i) + uint64(c)*s.CellSize()
}

// ScratchpadOffset is the byte offset of row i's scratchpad (meaningful only
// when Scratchpad > 0).
func (s Spec) ScratchpadOffset(i uint64) uint64 { return s.RowOffset(i) + 2*s.BucketSize() }

// ReadLen is the bytes of the one read that looks up a key: the two buckets,
// and, when a packet of packetLen bytes was parked, the scratchpad header and
// the packet.
func (s Spec) ReadLen(packetLen int) uint64 {
	n := 2 * s.BucketSize()
	if packetLen > 0 {
		n += ScratchpadHeaderLen + uint64(packetLen)
	}
	return n
}

// Home returns the home bucket of a key hashing to h: the high 64 bits of
// h × Buckets (a multiply-shift reduction, uniform for a uniform h).
func (s Spec) Home(h uint64) uint64 {
	hi, _ := bits.Mul64(h, s.Buckets)
	return hi
}

// HomeOf returns the home bucket of key.
func (s Spec) HomeOf(key []byte) uint64 { return s.Home(s.Hash.Sum(key)) }

// Next returns (i+1) mod Buckets: the second bucket a key whose home is i may
// live in.
func (s Spec) Next(i uint64) uint64 {
	if i+1 == s.Buckets {
		return 0
	}
	return i + 1
}

func (s Spec) prev(i uint64) uint64 {
	if i == 0 {
		return s.Buckets - 1
	}
	return i - 1
}
