package hashing_test

import (
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/dta-go/dta/hashing"
)

// benchKeyLens are a compat key (4 B), an IPv4 5-tuple (13 B) and an IPv6
// 5-tuple (37 B).
var benchKeyLens = []int{4, 13, 37}

func benchKey(n int) []byte {
	key := make([]byte, n)
	for i := range key {
		key[i] = byte(i*7 + 1)
	}
	return key
}

// BenchmarkKey measures what a Key-Write report with N=2 costs in hashing:
// the key's checksum and two slot hashes. One op is one key.
func BenchmarkKey(b *testing.B) {
	for _, n := range benchKeyLens {
		for _, a := range []hashing.Algorithm{hashing.CRC32, hashing.CRC32C} {
			b.Run(fmt.Sprintf("%s/%dB", a, n), func(b *testing.B) {
				key := benchKey(n)
				b.SetBytes(int64(n))
				b.ReportAllocs()
				var sink uint32
				for b.Loop() {
					k := a.Key(key)
					sink += k.Checksum() + k.Slot(0) + k.Slot(1)
				}
				_ = sink
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "keys/s")
			})
		}
	}
}

// BenchmarkChecksum compares the checksum alone with the standard library's
// CRC-32 (IEEE: table-driven for short inputs; Castagnoli: SSE4.2 on amd64),
// the ceilings of machine-limits.md. One op is one checksum.
func BenchmarkChecksum(b *testing.B) {
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	for _, n := range benchKeyLens {
		key := benchKey(n)
		fns := []struct {
			name string
			fn   func([]byte) uint32
		}{
			{"crc32", func(k []byte) uint32 { return hashing.CRC32.Key(k).Checksum() }},
			{"crc32c", func(k []byte) uint32 { return hashing.CRC32C.Key(k).Checksum() }},
			{"stdlib-ieee", crc32.ChecksumIEEE},
			{"stdlib-castagnoli", func(k []byte) uint32 { return crc32.Checksum(k, castagnoli) }},
			{"hop3", func(k []byte) uint32 { return hashing.HopChecksum(3, k) }},
		}
		for _, f := range fns {
			b.Run(fmt.Sprintf("%s/%dB", f.name, n), func(b *testing.B) {
				b.SetBytes(int64(n))
				b.ReportAllocs()
				var sink uint32
				for b.Loop() {
					sink += f.fn(key)
				}
				_ = sink
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "hashes/s")
			})
		}
	}
}
