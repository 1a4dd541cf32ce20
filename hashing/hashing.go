// Package hashing is the address and checksum contract shared by every writer
// (translation) and reader (query) of a store. Where a report's bytes land is a
// function of the functions in this package and a store's Spec only.
//
// Two families exist, chosen per store:
//
//   - CRC32 ("crc32") is the original Tofino prototype's: checksum = CRC-32/IEEE
//     of the key bytes, slot hash n = CRC-32/IEEE of the key bytes followed by the
//     single byte n. For a 32-bit report key the key bytes are its little-endian
//     encoding, so memory written by the prototype reads back here.
//   - CRC32C ("crc32c") is for extended stores: checksum = CRC-32C (Castagnoli)
//     of the key bytes, and slot hashes from a separate, multiplicative 64-bit
//     hash of the key. The two are independent.
//
// With the prototype's family the slot hash is a function of the checksum
// alone (CRC-32(key||n) continues CRC-32(key)): two keys whose checksums
// collide collide in every slot and are indistinguishable to a query, and
// among keys that share one of S slots the checksum has only 32-log2(S) bits
// left to tell them apart. CRC-32 is a bijection on 4-byte inputs, so 32-bit
// compat keys never collide; stores keyed by longer keys should use CRC32C.
// See docs/PROTOCOL.md.
//
// Per-hop checksums for Postcarding use the prototype's per-hop CRC-32
// polynomials (hops 1..5) extended with three well-known polynomials (hops 6..8).
//
// The functions are pure, allocate nothing, and are pinned by golden vectors in
// testdata/. Changing any output is a breaking change of the memory layout.
//
// The package is public because a DART reporter (package reporter, direct
// mode) writes slots itself, without a translator: it must place them exactly
// where translators write and queries read, so it calls these functions, not
// a copy of them.
package hashing

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/bits"
)

// Algorithm names a slot/checksum hash family.
type Algorithm uint8

// The hash families. The zero value is invalid so that a forgotten field in a
// Spec is caught by validation.
const (
	CRC32  Algorithm = iota + 1 // the prototype's CRC-32/IEEE family
	CRC32C                      // CRC-32C checksum + independent multiplicative slot hash
)

// MaxCopies is the largest number of slot hashes one key can have (redundancy N).
const MaxCopies = 8

// The CRC tables. The functions here run their own slicing-by-8 loop rather
// than crc32.Update: keys are short (≤ 64 bytes), where the loop is as fast as
// the standard library's for IEEE, and crc32.Update makes its argument escape
// (it dispatches through a function variable), which would cost an allocation
// per report for a key held on the stack. CRC-32C uses the CPU's CRC32
// instruction where there is one (crc32cUpdate: SSE4.2 on amd64, through a
// noescape assembly function) and this table elsewhere.
var (
	ieeeTable       = makeSlicing8(crc32.IEEE)
	castagnoliTable = makeSlicing8(crc32.Castagnoli)
)

// ParseAlgorithm maps a configuration name to an Algorithm.
func ParseAlgorithm(s string) (Algorithm, error) {
	switch s {
	case "crc32":
		return CRC32, nil
	case "crc32c":
		return CRC32C, nil
	}
	return 0, fmt.Errorf("unknown hash %q (want crc32 or crc32c)", s)
}

// String returns the configuration name of the algorithm.
func (a Algorithm) String() string {
	switch a {
	case CRC32:
		return "crc32"
	case CRC32C:
		return "crc32c"
	}
	return fmt.Sprintf("hash(%d)", uint8(a))
}

// Valid reports whether a is a known algorithm.
func (a Algorithm) Valid() bool { return a == CRC32 || a == CRC32C }

// Keyed holds the hashes of one key, computed once and then used for the
// checksum and every slot. It is a plain value; the zero value is not useful.
type Keyed struct {
	alg      Algorithm
	checksum uint32
	seed     uint64
}

// Key hashes key once. Slot and Checksum then cost a few instructions each.
func (a Algorithm) Key(key []byte) Keyed {
	switch a {
	case CRC32:
		c := ieeeTable.update(0, key)
		return Keyed{alg: a, checksum: c, seed: uint64(c)}
	case CRC32C:
		return Keyed{alg: a, checksum: crc32cUpdate(0, key), seed: mix64(key)}
	}
	return Keyed{}
}

// Key32 is Key of the 4-byte little-endian encoding of k (a 32-bit compat
// key, as the prototype hashes it), without building the bytes: the same
// Keyed for a few table lookups.
func (a Algorithm) Key32(k uint32) Keyed {
	switch a {
	case CRC32:
		c := ieeeTable.word(k)
		return Keyed{alg: a, checksum: c, seed: uint64(c)}
	case CRC32C:
		// mix64 of 4 bytes: no whole word, the tail is k itself.
		const m uint64 = 0xC6A4A7935BD1E995
		h := uint64(4) // the key's length, times m wrapping as in mix64
		h *= m
		return Keyed{alg: a, checksum: castagnoliTable.word(k), seed: fmix64((h ^ uint64(k)) * m)}
	}
	return Keyed{}
}

// Checksum is the 32-bit key checksum stored beside a value.
func (k Keyed) Checksum() uint32 { return k.checksum }

// Checksum is a.Key(key).Checksum() without the slot hashes' work.
func (a Algorithm) Checksum(key []byte) uint32 {
	switch a {
	case CRC32:
		return ieeeTable.update(0, key)
	case CRC32C:
		return crc32cUpdate(0, key)
	}
	return 0
}

// Slot is the raw 32-bit hash of copy n (0 ≤ n < MaxCopies); reduce it with
// Reduce to get a slot index.
func (k Keyed) Slot(n int) uint32 {
	switch k.alg {
	case CRC32:
		// CRC-32 of key||n, continued from the key's CRC: the prototype's slot
		// hash. It is a function of the checksum alone.
		c := ^uint32(k.seed)
		c = ieeeTable[0][byte(c)^byte(n)] ^ c>>8
		return ^c
	case CRC32C:
		return uint32(fmix64(k.seed+uint64(n+1)*0x9E3779B97F4A7C15) >> 32)
	}
	return 0
}

// Reduce maps a 32-bit hash onto [0, slots). A power-of-two count keeps the low
// bits (hash & (slots-1)), exactly as the prototype's mask table does; any other
// count uses the multiply-shift range reduction (hash*slots)>>32. slots must be
// in [1, 2^32].
func Reduce(h uint32, slots uint64) uint64 {
	if slots&(slots-1) == 0 {
		return uint64(h) & (slots - 1)
	}
	hi, _ := bits.Mul64(uint64(h)<<32, slots)
	return hi
}

// mix64 is a multiplicative, non-linear 64-bit hash of key (8-byte words,
// little-endian, then the tail), finished with fmix64. It is independent of any
// CRC of the key, which is the point of using it for addresses.
func mix64(key []byte) uint64 {
	const m = 0xC6A4A7935BD1E995
	h := uint64(len(key)) * m
	for len(key) >= 8 {
		w := binary.LittleEndian.Uint64(key)
		w *= m
		w ^= w >> 47
		w *= m
		h ^= w
		h *= m
		key = key[8:]
	}
	if len(key) > 0 {
		h ^= tailLE(key)
		h *= m
	}
	return fmix64(h)
}

// tailLE returns the 1..7 bytes of p as a little-endian number, with two
// overlapping loads instead of a loop over the bytes.
func tailLE(p []byte) uint64 {
	switch n := len(p); {
	case n >= 4:
		return uint64(binary.LittleEndian.Uint32(p)) | uint64(binary.LittleEndian.Uint32(p[n-4:]))<<(8*(n-4))
	case n >= 2:
		return uint64(binary.LittleEndian.Uint16(p)) | uint64(binary.LittleEndian.Uint16(p[n-2:]))<<(8*(n-2))
	case n == 1:
		return uint64(p[0])
	}
	return 0
}

// Mix64 is the multiplicative 64-bit key hash the crc32c family's slot
// hashes start from (mix64), for other layouts that need one (the
// Sketch-Merge hash contract, package sketch). Pinned by the same vectors.
func Mix64(key []byte) uint64 { return mix64(key) }

// Fmix64 is the MurmurHash3 64-bit finaliser the slot hashes end with.
func Fmix64(h uint64) uint64 { return fmix64(h) }

// fmix64 is the MurmurHash3 64-bit finaliser (an avalanching bijection).
func fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xFF51AFD7ED558CCD
	h ^= h >> 33
	h *= 0xC4CEB9FE1A85EC53
	h ^= h >> 33
	return h
}

// MaxHops is the number of per-hop checksum polynomials, hence the largest
// Postcarding path length.
const MaxHops = 8

// HopPolynomials are the per-hop CRC-32 polynomials in normal form (without the
// x^32 term). Hops 1..5 are the prototype's (two of them, 0x1E12A700 and
// 0x7A40A908, are even and so weak CRCs; they are kept for compatibility).
// Hops 6..8 are CRC-32C, CRC-32K (Koopman) and CRC-32Q.
var HopPolynomials = [MaxHops]uint32{
	0x1E12A700, 0x65B96595, 0x49CF878B, 0x36518F0D, 0x7A40A908,
	0x1EDC6F41, 0x741B8CD7, 0x814141AB,
}

var hopTables = func() (t [MaxHops]*slicing8) {
	for i, p := range HopPolynomials {
		t[i] = makeSlicing8(bits.Reverse32(p))
	}
	return t
}()

// HopChecksum is the checksum of (key, hop) for hop 1..MaxHops: the CRC-32 with
// the hop's polynomial, reflected, init and xor-out 0xFFFFFFFF, over key. It
// returns 0 for a hop out of range; callers validate hops first.
func HopChecksum(hop int, key []byte) uint32 {
	if hop < 1 || hop > MaxHops {
		return 0
	}
	return hopTables[hop-1].update(0, key)
}

// slicing8 holds the tables of a reflected CRC-32 computed eight bytes at a
// time (the algorithm of hash/crc32's portable code).
type slicing8 [8][256]uint32

// makeSlicing8 builds the tables for the reflected polynomial poly.
func makeSlicing8(poly uint32) *slicing8 {
	t := new(slicing8)
	for i := range 256 {
		crc := uint32(i)
		for range 8 {
			if crc&1 == 1 {
				crc = crc>>1 ^ poly
			} else {
				crc >>= 1
			}
		}
		t[0][i] = crc
	}
	for i := range 256 {
		crc := t[0][i]
		for j := 1; j < 8; j++ {
			crc = t[0][crc&0xFF] ^ crc>>8
			t[j][i] = crc
		}
	}
	return t
}

// word is update(0, p) for the 4 bytes p encoding k little-endian: one
// slicing-by-4 step.
func (t *slicing8) word(k uint32) uint32 {
	c := ^k
	return ^(t[0][c>>24] ^ t[1][c>>16&0xFF] ^ t[2][c>>8&0xFF] ^ t[3][c&0xFF])
}

// update continues the CRC crc (init and xor-out 0xFFFFFFFF, as crc32.Update)
// over p.
func (t *slicing8) update(crc uint32, p []byte) uint32 {
	crc = ^crc
	for len(p) >= 8 {
		crc ^= binary.LittleEndian.Uint32(p)
		crc = t[0][p[7]] ^ t[1][p[6]] ^ t[2][p[5]] ^ t[3][p[4]] ^
			t[4][crc>>24] ^ t[5][crc>>16&0xFF] ^ t[6][crc>>8&0xFF] ^ t[7][crc&0xFF]
		p = p[8:]
	}
	if len(p) >= 4 {
		// One slicing-by-4 step: four independent lookups instead of a
		// chain of four (a compat key is exactly this step).
		crc ^= binary.LittleEndian.Uint32(p)
		crc = t[0][crc>>24] ^ t[1][crc>>16&0xFF] ^ t[2][crc>>8&0xFF] ^ t[3][crc&0xFF]
		p = p[4:]
	}
	for _, v := range p {
		crc = t[0][byte(crc)^v] ^ crc>>8
	}
	return ^crc
}
