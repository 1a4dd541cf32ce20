package sim

import (
	"encoding/binary"
	"errors"
	"math/bits"

	"github.com/dta-go/dta/hashing"
)

// keyGen generates the run's keys and values as pure functions of the key
// index and the seed.
//
// Key i is 13 bytes: [0:8] a bijection of i (so keys are distinct), [8:13]
// pseudo-random, except that with a short checksum [9:13] are solved for so
// that the key's CRC-32C has its top 32−b bits set (see the package doc).
type keyGen struct {
	seed uint64
	bits int    // checksum bits b
	high uint32 // the fixed top bits of every checksum (b < 32)
	// inv maps a wanted change of the checksum to the change of the last
	// four key bytes (as a little-endian word) that makes it; b < 32 only.
	inv [32]uint32
}

func newKeyGen(seed uint64, checksumBits int) (*keyGen, error) {
	g := &keyGen{seed: seed, bits: checksumBits}
	if checksumBits >= 32 {
		return g, nil
	}
	g.high = ^uint32(0) << checksumBits
	// CRC-32C over 13-byte inputs is affine: crc(k ⊕ d) = crc(k) ⊕ L(d) for
	// a linear L. Restricted to the last four bytes, L is invertible (a CRC
	// of a 32-bit tail is a bijection); build its columns and invert them.
	var zero [KeyLen]byte
	base := checksum(zero[:])
	var cols [32]uint32
	for j := range 32 {
		var k [KeyLen]byte
		binary.LittleEndian.PutUint32(k[9:], 1<<j)
		cols[j] = checksum(k[:]) ^ base
	}
	inv, ok := invertGF2(cols)
	if !ok {
		return nil, errors.New("sim: the checksum of the key tail is not invertible")
	}
	g.inv = inv
	return g, nil
}

// checksum is the store's real key checksum (the crc32c family's).
func checksum(key []byte) uint32 { return hashing.CRC32C.Key(key).Checksum() }

// key writes key i into k.
func (g *keyGen) key(i uint64, k *[KeyLen]byte) {
	binary.LittleEndian.PutUint64(k[0:], fmix64(i^g.seed*0x9E3779B97F4A7C15))
	r := fmix64(i + g.seed + 0x632BE59BD9B4E019)
	k[8] = byte(r)
	binary.LittleEndian.PutUint32(k[9:], uint32(r>>32))
	if g.bits >= 32 {
		return
	}
	want := g.high | uint32(r>>8)&^g.high
	diff := checksum(k[:]) ^ want
	var d uint32
	for j := range 32 {
		if diff&(1<<j) != 0 {
			d ^= g.inv[j]
		}
	}
	binary.LittleEndian.PutUint32(k[9:], uint32(r>>32)^d)
}

// value fills v with key i's Key-Write value.
func (g *keyGen) value(i uint64, v []byte) {
	x := i*0xD1B54A32D192ED03 + g.seed
	for len(v) >= 8 {
		x += 0x9E3779B97F4A7C15
		binary.LittleEndian.PutUint64(v, fmix64(x))
		v = v[8:]
	}
	if len(v) > 0 {
		x += 0x9E3779B97F4A7C15
		r := fmix64(x)
		for j := range v {
			v[j] = byte(r >> (8 * j))
		}
	}
}

// hop returns the value of hop h (1-based) of flow i, in [0, values−1].
func (g *keyGen) hop(i uint64, h int, values uint32) uint32 {
	r := fmix64(i*0xBF58476D1CE4E5B9 + uint64(h)*0x94D049BB133111EB + g.seed)
	hi, _ := bits.Mul64(r, uint64(values))
	return uint32(hi)
}

// invertGF2 inverts the 32×32 bit matrix whose column j is cols[j]: it returns
// inv with inv[j] the input whose image is the unit vector 1<<j.
func invertGF2(cols [32]uint32) (inv [32]uint32, ok bool) {
	// Row-reduce pairs (image, preimage), starting from (cols[j], 1<<j).
	var img, pre [32]uint32
	for j := range 32 {
		img[j], pre[j] = cols[j], 1<<j
	}
	for bit := range 32 {
		p := -1
		for r := bit; r < 32; r++ {
			if img[r]&(1<<bit) != 0 {
				p = r
				break
			}
		}
		if p < 0 {
			return inv, false
		}
		img[bit], img[p] = img[p], img[bit]
		pre[bit], pre[p] = pre[p], pre[bit]
		for r := range 32 {
			if r != bit && img[r]&(1<<bit) != 0 {
				img[r] ^= img[bit]
				pre[r] ^= pre[bit]
			}
		}
	}
	return pre, true
}

// fmix64 is the MurmurHash3 64-bit finaliser, a bijection.
func fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xFF51AFD7ED558CCD
	h ^= h >> 33
	h *= 0xC4CEB9FE1A85EC53
	h ^= h >> 33
	return h
}
