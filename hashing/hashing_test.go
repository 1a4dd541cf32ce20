package hashing_test

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/dta-go/dta/hashing"
)

// le32 is a 32-bit compat key as Key-Write hashes it (little-endian).
func le32(k uint32) []byte { return binary.LittleEndian.AppendUint32(nil, k) }

// be32 is a 32-bit compat key as Postcarding hashes it (big-endian).
func be32(k uint32) []byte { return binary.BigEndian.AppendUint32(nil, k) }

// TestPrototypeKeyWriteVectors pins spec/original-prototype.md §2.1 literally:
// CRC-32 of the little-endian key, slot hash n = CRC-32(LE key || n), and the
// slot index for S = 256 and S = 2^20.
func TestPrototypeKeyWriteVectors(t *testing.T) {
	tests := []struct {
		key      uint32
		checksum uint32
		raw      [4]uint32
		s256     [4]uint64
		s1m      [4]uint64
	}{
		{0, 0x2144DF1C, [4]uint32{0xC622F71D, 0xB125C78B, 0x282C9631, 0x5F2BA6A7}, [4]uint64{29, 139, 49, 167}, [4]uint64{194333, 378763, 824881, 763559}},
		{1, 0x99F8B879, [4]uint32{0xFB42DEAD, 0x8C45EE3B, 0x154CBF81, 0x624B8F17}, [4]uint64{173, 59, 129, 23}, [4]uint64{188077, 388667, 835457, 757527}},
		{2, 0x8B4D1797, [4]uint32{0xBCE2A47D, 0xCBE594EB, 0x52ECC551, 0x25EBF5C7}, [4]uint64{125, 235, 81, 199}, [4]uint64{173181, 365803, 836945, 783815}},
		{1000, 0x30C90892, [4]uint32{0xCC33D4ED, 0xBB34E47B, 0x223DB5C1, 0x553A8557}, [4]uint64{237, 123, 193, 87}, [4]uint64{251117, 320635, 898497, 689495}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("key %d hashes as the prototype does", tt.key), func(t *testing.T) {
			k := hashing.CRC32.Key(le32(tt.key))
			if got := k.Checksum(); got != tt.checksum {
				t.Errorf("checksum = %#08x, want %#08x", got, tt.checksum)
			}
			for n := range 4 {
				if got := k.Slot(n); got != tt.raw[n] {
					t.Errorf("raw slot hash n=%d = %#08x, want %#08x", n, got, tt.raw[n])
				}
				if got := hashing.Reduce(k.Slot(n), 256); got != tt.s256[n] {
					t.Errorf("slot n=%d for S=256 = %d, want %d", n, got, tt.s256[n])
				}
				if got := hashing.Reduce(k.Slot(n), 1<<20); got != tt.s1m[n] {
					t.Errorf("slot n=%d for S=2^20 = %d, want %d", n, got, tt.s1m[n])
				}
			}
		})
	}

	t.Run("the stored checksum of key 1 reads 79 B8 F8 99 little-endian", func(t *testing.T) {
		got := binary.LittleEndian.AppendUint32(nil, hashing.CRC32.Key(le32(1)).Checksum())
		if want := []byte{0x79, 0xB8, 0xF8, 0x99}; string(got) != string(want) {
			t.Errorf("bytes = % X, want % X", got, want)
		}
	})
}

// TestPrototypePostcardVectors pins spec/original-prototype.md §2.4: the
// CRC-32 of the big-endian key (the prototype's cache and chunk index) and the
// per-hop checksums h1..h5.
func TestPrototypePostcardVectors(t *testing.T) {
	tests := []struct {
		key   uint32
		crc   uint32
		cache uint64 // low 15 bits (32768 cache entries)
		chunk uint64 // S = 256
		hops  [5]uint32
	}{
		{0x00000001, 0x5643EF8A, 0x6F8A, 138, [5]uint32{0xFFFDD680, 0x119CA20C, 0x55F952F3, 0xF4B8DA4A, 0xFE06C36C}},
		{0x0A000065, 0x7321AAAF, 0x2AAF, 0xAF, [5]uint32{0xFFD39529, 0x54C0CC6D, 0x707F157F, 0x28ADAF89, 0xEA0831AD}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("key %08X hashes as the prototype's postcarder does", tt.key), func(t *testing.T) {
			key := be32(tt.key)
			c := hashing.CRC32.Key(key).Checksum()
			if c != tt.crc {
				t.Errorf("CRC-32(BE key) = %#08x, want %#08x", c, tt.crc)
			}
			if got := hashing.Reduce(c, 32768); got != tt.cache {
				t.Errorf("cache index = %#x, want %#x", got, tt.cache)
			}
			if got := hashing.Reduce(c, 256); got != tt.chunk {
				t.Errorf("chunk for S=256 = %d, want %d", got, tt.chunk)
			}
			for i, want := range tt.hops {
				if got := hashing.HopChecksum(i+1, key); got != want {
					t.Errorf("h%d = %#08x, want %#08x", i+1, got, want)
				}
			}
		})
	}
}

// TestMatchesStandardLibrary checks the package's own CRC loop against
// hash/crc32 for every length up to past the longest key, so that the
// slicing-by-8 loop and its tail are both covered.
func TestMatchesStandardLibrary(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	var hopTables [hashing.MaxHops]*crc32.Table
	for i, p := range hashing.HopPolynomials {
		hopTables[i] = crc32.MakeTable(bits.Reverse32(p))
	}
	buf := make([]byte, 200)
	for n := range len(buf) {
		for range 4 {
			for i := range buf[:n] {
				buf[i] = byte(rng.Uint32())
			}
			key := buf[:n]
			if got, want := hashing.CRC32.Key(key).Checksum(), crc32.ChecksumIEEE(key); got != want {
				t.Fatalf("len %d: crc32 checksum = %#08x, want %#08x", n, got, want)
			}
			if got, want := hashing.CRC32C.Key(key).Checksum(), crc32.Checksum(key, castagnoli); got != want {
				t.Fatalf("len %d: crc32c checksum = %#08x, want %#08x", n, got, want)
			}
			for _, a := range []hashing.Algorithm{hashing.CRC32, hashing.CRC32C, 0} {
				if got, want := a.Checksum(key), a.Key(key).Checksum(); got != want {
					t.Fatalf("len %d: %v Checksum = %#08x, Key().Checksum() = %#08x", n, a, got, want)
				}
			}
			k := hashing.CRC32.Key(key)
			for s := range hashing.MaxCopies {
				want := crc32.ChecksumIEEE(append(key[:n:n], byte(s)))
				if got := k.Slot(s); got != want {
					t.Fatalf("len %d: crc32 slot %d = %#08x, want CRC-32(key||n) %#08x", n, s, got, want)
				}
			}
			for h := 1; h <= hashing.MaxHops; h++ {
				if got, want := hashing.HopChecksum(h, key), crc32.Checksum(key, hopTables[h-1]); got != want {
					t.Fatalf("len %d: hop %d = %#08x, want %#08x", n, h, got, want)
				}
			}
		}
	}
}

func TestHopChecksumOutOfRangeIsZero(t *testing.T) {
	for _, hop := range []int{-1, 0, hashing.MaxHops + 1, 255} {
		if got := hashing.HopChecksum(hop, be32(1)); got != 0 {
			t.Errorf("HopChecksum(%d) = %#x, want 0", hop, got)
		}
	}
}

func TestAlgorithmNames(t *testing.T) {
	for _, a := range []hashing.Algorithm{hashing.CRC32, hashing.CRC32C} {
		t.Run(a.String()+" round-trips through its name", func(t *testing.T) {
			got, err := hashing.ParseAlgorithm(a.String())
			if err != nil || got != a || !got.Valid() {
				t.Errorf("ParseAlgorithm(%q) = %v, %v", a.String(), got, err)
			}
		})
	}
	t.Run("unknown names and the zero value are rejected", func(t *testing.T) {
		for _, s := range []string{"", "CRC32", "xxhash", "crc32 "} {
			if _, err := hashing.ParseAlgorithm(s); err == nil {
				t.Errorf("ParseAlgorithm(%q) succeeded", s)
			}
		}
		var zero hashing.Algorithm
		if zero.Valid() {
			t.Error("the zero Algorithm is valid")
		}
		if k := zero.Key([]byte{1}); k.Checksum() != 0 || k.Slot(0) != 0 {
			t.Error("an invalid algorithm hashes to non-zero")
		}
	})
}

func TestReduce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	hashes := []uint32{0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF}
	for range 1000 {
		hashes = append(hashes, rng.Uint32())
	}

	t.Run("a power-of-two slot count keeps the low bits", func(t *testing.T) {
		for _, slots := range []uint64{1, 2, 256, 1 << 20, 1 << 31, 1 << 32} {
			for _, h := range hashes {
				if got, want := hashing.Reduce(h, slots), uint64(h)&(slots-1); got != want {
					t.Fatalf("Reduce(%#x, %d) = %d, want %d", h, slots, got, want)
				}
			}
		}
	})

	t.Run("any other slot count uses multiply-shift", func(t *testing.T) {
		for _, slots := range []uint64{3, 5, 1000, 1_000_003, 3 << 20, 1<<32 - 1} {
			for _, h := range hashes {
				if got, want := hashing.Reduce(h, slots), uint64(h)*slots>>32; got != want {
					t.Fatalf("Reduce(%#x, %d) = %d, want %d", h, slots, got, want)
				}
			}
			if got := hashing.Reduce(0xFFFFFFFF, slots); got != slots-1 {
				t.Errorf("Reduce(max, %d) = %d, want the last slot", slots, got)
			}
		}
	})

	t.Run("the result is always below the slot count", func(t *testing.T) {
		for _, slots := range []uint64{1, 2, 3, 7, 100, 4096, 65535, 1 << 24, 1<<24 + 1, 1<<32 - 1, 1 << 32} {
			for _, h := range hashes {
				if got := hashing.Reduce(h, slots); got >= slots {
					t.Fatalf("Reduce(%#x, %d) = %d, not below the slot count", h, slots, got)
				}
			}
		}
	})

	t.Run("multiply-shift spreads hashes evenly over a non-power-of-two count", func(t *testing.T) {
		const slots = 12
		var count [slots]int
		for range 120_000 {
			count[hashing.Reduce(rng.Uint32(), slots)]++
		}
		for i, c := range count {
			if c < 9_500 || c > 10_500 {
				t.Errorf("slot %d got %d of 120000 hashes, want about 10000", i, c)
			}
		}
	})
}

func TestHashingAllocatesNothing(t *testing.T) {
	for _, a := range []hashing.Algorithm{hashing.CRC32, hashing.CRC32C} {
		t.Run(a.String()+" with a key on the stack", func(t *testing.T) {
			var sink uint32
			allocs := testing.AllocsPerRun(1000, func() {
				key := [13]byte{10, 0, 0, 1, 10, 0, 0, 2, 0x1F, 0x90, 0x00, 0x50, 6}
				k := a.Key(key[:])
				for n := range hashing.MaxCopies {
					sink += k.Slot(n)
				}
				sink += k.Checksum() + hashing.HopChecksum(3, key[:])
			})
			if allocs != 0 {
				t.Errorf("Key+Slot+Checksum+HopChecksum: %v allocs per run, want 0", allocs)
			}
			_ = sink
		})
	}
}

func TestKey32HashesAsTheLittleEndianBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 32))
	keys := []uint32{0, 1, 0xFFFFFFFF, 0x80000000, 0x12345678}
	for range 10000 {
		keys = append(keys, rng.Uint32())
	}
	for _, a := range []hashing.Algorithm{hashing.CRC32, hashing.CRC32C} {
		t.Run(a.String()+": Key32(k) equals Key of k's 4 little-endian bytes", func(t *testing.T) {
			for _, k := range keys {
				want, got := a.Key(le32(k)), a.Key32(k)
				if got.Checksum() != want.Checksum() {
					t.Fatalf("key %#x: checksum %#x, want %#x", k, got.Checksum(), want.Checksum())
				}
				for n := range hashing.MaxCopies {
					if got.Slot(n) != want.Slot(n) {
						t.Fatalf("key %#x copy %d: slot hash %#x, want %#x", k, n, got.Slot(n), want.Slot(n))
					}
				}
			}
		})
	}
}
