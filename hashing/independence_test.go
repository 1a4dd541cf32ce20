package hashing_test

import (
	"encoding/binary"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/dta-go/dta/hashing"
)

// sharedSlotStats draws keys random 13-byte keys (IPv4 5-tuples) and, over
// the pairs of keys that share one of 256 slots (copy 0), counts how many also
// agree in the low checkBits bits of their checksum. If slot and checksum are
// independent that happens to a fraction 2^-checkBits of the pairs.
func sharedSlotStats(a hashing.Algorithm, keys int, checkBits uint) (observed, expected float64) {
	rng := rand.New(rand.NewPCG(13, 13))
	const slots = 256
	perSlot := make([]float64, slots)
	perSlotSum := make(map[uint64]float64)
	var key [13]byte
	for range keys {
		for i := range key {
			key[i] = byte(rng.Uint32())
		}
		k := a.Key(key[:])
		s := hashing.Reduce(k.Slot(0), slots)
		c := uint64(k.Checksum() & (1<<checkBits - 1))
		perSlot[s]++
		perSlotSum[s<<32|c]++
	}
	pairs := func(n float64) float64 { return n * (n - 1) / 2 }
	var sharing float64
	for _, n := range perSlot {
		sharing += pairs(n)
	}
	for _, n := range perSlotSum {
		observed += pairs(n)
	}
	return observed, sharing / float64(uint64(1)<<checkBits)
}

func TestCRC32CSlotsAreIndependentOfChecksums(t *testing.T) {
	// 2^15 keys give about 2^21 pairs sharing a slot; 2^-12 of them, about
	// 512, should also share 12 checksum bits. Allow 5 standard deviations.
	obs, exp := sharedSlotStats(hashing.CRC32C, 1<<15, 12)
	if math.Abs(obs-exp) > 5*math.Sqrt(exp) {
		t.Errorf("pairs sharing a slot and 12 checksum bits: %.0f, want %.0f ± %.0f (chance)", obs, exp, 5*math.Sqrt(exp))
	}
	t.Logf("crc32c: %.0f pairs share a slot and 12 checksum bits; chance predicts %.0f", obs, exp)
}

// TestCRC32SlotsDependOnChecksums pins a finding about the prototype's hash
// family: its slot hash CRC-32(key||n) is a function of CRC-32(key), so keys
// that share a slot of 2^k agree in k linear combinations of checksum bits,
// and keys with equal checksums share every slot.
func TestCRC32SlotsDependOnChecksums(t *testing.T) {
	t.Run("keys sharing a slot share checksum bits far more often than chance", func(t *testing.T) {
		// With S = 256, sharing a slot fixes 8 of the low 16 checksum bits,
		// so agreeing in the low 12 is 16 times as likely as chance.
		obs, exp := sharedSlotStats(hashing.CRC32, 1<<15, 12)
		if obs < 8*exp {
			t.Errorf("pairs sharing a slot and 12 checksum bits: %.0f, chance %.0f; want at least 8x chance", obs, exp)
		}
		t.Logf("crc32: %.0f pairs share a slot and 12 checksum bits; chance predicts %.0f (%.1fx)", obs, exp, obs/exp)
	})

	rng := rand.New(rand.NewPCG(7, 7))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}

	t.Run("equal-length keys with equal checksums share every slot", func(t *testing.T) {
		for range 200 {
			a := random(13)
			b := forge(hashing.CRC32, random(9), hashing.CRC32.Key(a).Checksum())
			assertSameSlots(t, hashing.CRC32, a, b)
		}
	})

	t.Run("keys of different lengths with equal checksums share every slot too", func(t *testing.T) {
		for range 200 {
			a := random(13)
			b := forge(hashing.CRC32, random(33), hashing.CRC32.Key(a).Checksum())
			assertSameSlots(t, hashing.CRC32, a, b)
		}
	})

	t.Run("4-byte keys never collide: CRC-32 is a bijection on them", func(t *testing.T) {
		// A 4-byte input is forged only by itself.
		for range 200 {
			a := random(4)
			if b := forge(hashing.CRC32, nil, hashing.CRC32.Key(a).Checksum()); string(a) != string(b) {
				t.Fatalf("4-byte keys % X and % X share a checksum", a, b)
			}
		}
	})

	t.Run("with crc32c, keys with equal checksums land in unrelated slots", func(t *testing.T) {
		const pairs, slots = 2000, 256
		same := 0
		for range pairs {
			a := random(13)
			b := forge(hashing.CRC32C, random(9), hashing.CRC32C.Key(a).Checksum())
			ka, kb := hashing.CRC32C.Key(a), hashing.CRC32C.Key(b)
			if ka.Checksum() != kb.Checksum() {
				t.Fatal("forge did not produce equal crc32c checksums")
			}
			if hashing.Reduce(ka.Slot(0), slots) == hashing.Reduce(kb.Slot(0), slots) {
				same++
			}
		}
		// Chance: pairs/slots ≈ 8.
		if same > 30 {
			t.Errorf("%d of %d checksum-colliding pairs share a slot, want about %d", same, pairs, pairs/slots)
		}
	})
}

func assertSameSlots(t *testing.T, a hashing.Algorithm, x, y []byte) {
	t.Helper()
	kx, ky := a.Key(x), a.Key(y)
	if string(x) == string(y) || kx.Checksum() != ky.Checksum() {
		t.Fatalf("forge failed: % X vs % X", x, y)
	}
	for n := range hashing.MaxCopies {
		if kx.Slot(n) != ky.Slot(n) {
			t.Fatalf("keys % X and % X share checksum %#08x but not slot hash %d", x, y, kx.Checksum(), n)
		}
	}
}

// forge returns prefix followed by the 4 bytes that give the key the checksum
// target under a. A CRC of fixed-length input is affine over GF(2), so the
// checksum as a function of the last 4 bytes is c0 ⊕ M·s for an invertible
// 32×32 matrix M, solved here by Gaussian elimination.
func forge(a hashing.Algorithm, prefix []byte, target uint32) []byte {
	buf := append(append([]byte(nil), prefix...), 0, 0, 0, 0)
	tail := buf[len(prefix):]
	sum := func(s uint32) uint32 {
		binary.LittleEndian.PutUint32(tail, s)
		return a.Key(buf).Checksum()
	}
	base := sum(0)
	type row struct {
		v, s uint32
		ok   bool
	}
	var pivot [32]row // pivot[b]: a combination whose image has top bit b
	for i := range 32 {
		v, s := sum(1<<i)^base, uint32(1)<<i
		for v != 0 {
			b := 31 - bits.LeadingZeros32(v)
			if !pivot[b].ok {
				pivot[b] = row{v, s, true}
				break
			}
			v, s = v^pivot[b].v, s^pivot[b].s
		}
	}
	var s uint32
	for want := target ^ base; want != 0; {
		b := 31 - bits.LeadingZeros32(want)
		if !pivot[b].ok {
			panic("forge: checksum is not invertible in the last 4 bytes")
		}
		want, s = want^pivot[b].v, s^pivot[b].s
	}
	if sum(s) != target {
		panic("forge: solution does not reach the target")
	}
	return buf
}
