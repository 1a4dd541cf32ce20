package hashing

import (
	"fmt"
	"testing"
)

// BenchmarkCRC32C isolates the CRC-32C of a key: the CPU instruction path
// (crc32cUpdate) against the portable slicing-by-8 loop it replaced, and the
// IEEE loop of the compat family. One op is one key.
func BenchmarkCRC32C(b *testing.B) {
	for _, n := range []int{4, 13, 37} {
		key := make([]byte, n)
		for i := range key {
			key[i] = byte(i*7 + 1)
		}
		for _, f := range []struct {
			name string
			fn   func(uint32, []byte) uint32
		}{
			{"hw", crc32cUpdate},
			{"slicing8", castagnoliTable.update},
			{"ieee-slicing8", ieeeTable.update},
		} {
			b.Run(fmt.Sprintf("%s/%dB", f.name, n), func(b *testing.B) {
				b.ReportAllocs()
				var sink uint32
				for b.Loop() {
					sink += f.fn(sink, key)
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "hashes/s")
			})
		}
	}
}

// BenchmarkMix64 is the CRC32C family's slot hash seed.
func BenchmarkMix64(b *testing.B) {
	for _, n := range []int{4, 13, 37} {
		keys := make([]byte, 256*n)
		for i := range keys {
			keys[i] = byte(i * 13)
		}
		b.Run(fmt.Sprintf("%dB", n), func(b *testing.B) {
			b.ReportAllocs()
			var sink uint64
			i := 0
			for b.Loop() {
				sink += mix64(keys[i*n : i*n+n])
				i = (i + 1) & 255
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "hashes/s")
		})
	}
}
