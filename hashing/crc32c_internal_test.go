package hashing

import (
	"math/rand/v2"
	"testing"
)

// TestCRC32CMatchesPortable checks the CPU's CRC-32C path (where there is
// one) against the portable slicing-by-8 loop, for every length across the
// 8-byte loop and its 4/2/1-byte tail, from arbitrary starting CRCs and
// unaligned starts.
func TestCRC32CMatchesPortable(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	buf := make([]byte, 160)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for start := range 8 {
		for n := range 100 {
			p := buf[start : start+n]
			for _, crc := range []uint32{0, 0xFFFFFFFF, rng.Uint32()} {
				if got, want := crc32cUpdate(crc, p), castagnoliTable.update(crc, p); got != want {
					t.Fatalf("start %d len %d crc %#x: %#08x, want %#08x", start, n, crc, got, want)
				}
			}
		}
	}
}
