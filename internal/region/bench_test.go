package region

import (
	"encoding/binary"
	"testing"
)

const (
	benchSizeLog2 = 30 // 1 GiB: far larger than the L3 cache
	benchSize     = 1 << benchSizeLog2
)

// newBenchRegion maps a pre-faulted 1 GiB region for a benchmark.
func newBenchRegion(b *testing.B, hp HugePages) *Region {
	b.Helper()
	if testing.Short() {
		b.Skip("maps and pre-faults 1 GiB")
	}
	r, err := New(Config{Size: benchSize, HugePages: hp, Prefault: true}, nil)
	if err != nil {
		b.Skipf("New: %v", err)
	}
	b.Cleanup(func() { r.Close() })
	b.Logf("backing %s", r.Backing())
	return r
}

// nextWord advances an LCG and returns a random word offset of the 1 GiB
// region (from the LCG's high bits) and the new state.
func nextWord(x uint64) (off, next uint64) {
	next = x*6364136223846793005 + 1442695040888963407
	return next >> (64 - benchSizeLog2 + 3) << 3, next
}

// BenchmarkRandomStore64 measures random 8-byte atomic stores into a 1 GiB
// pre-faulted region, on transparent huge pages and on base pages.
func BenchmarkRandomStore64(b *testing.B) {
	for _, hp := range []HugePages{HugePagesMadvise, HugePagesOff} {
		b.Run(hp.String(), func(b *testing.B) {
			r := newBenchRegion(b, hp)
			b.ReportAllocs()
			b.SetBytes(8)
			var off uint64
			x := uint64(0x9E3779B97F4A7C15)
			for b.Loop() {
				off, x = nextWord(x)
				if err := r.Store64(off, x); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mops/s")
		})
	}
}

// BenchmarkRandomWrite64 measures random 8-byte plain stores (Write64, what
// the local sink does for Key-Write slots) into the same region on
// transparent huge pages, for comparison with the atomic Store64.
func BenchmarkRandomWrite64(b *testing.B) {
	r := newBenchRegion(b, HugePagesMadvise)
	b.ReportAllocs()
	b.SetBytes(8)
	var off uint64
	x := uint64(0x9E3779B97F4A7C15)
	for b.Loop() {
		off, x = nextWord(x)
		if err := r.Write64(off, x); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mops/s")
}

// BenchmarkRandomWrite8 measures random 8-byte plain copies (Write) into the
// same region on transparent huge pages, for comparison with the atomic store.
func BenchmarkRandomWrite8(b *testing.B) {
	r := newBenchRegion(b, HugePagesMadvise)
	b.ReportAllocs()
	b.SetBytes(8)
	buf := make([]byte, 8)
	var off uint64
	x := uint64(0x9E3779B97F4A7C15)
	for b.Loop() {
		off, x = nextWord(x)
		binary.LittleEndian.PutUint64(buf, x)
		if err := r.Write(off, buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mops/s")
}

// BenchmarkRandomLoad measures random 8-byte loads from the 1 GiB region on
// transparent huge pages through Slice (the path of Key-Write queries): one
// at a time (naive: the loads of successive iterations still overlap), in
// batches whose addresses are computed first, and in batches prefetched
// (Prefetch) before they are loaded.
func BenchmarkRandomLoad(b *testing.B) {
	r := newBenchRegion(b, HugePagesMadvise)
	b.Run("naive", func(b *testing.B) {
		b.ReportAllocs()
		var off, sum uint64
		x := uint64(0x9E3779B97F4A7C15)
		for b.Loop() {
			off, x = nextWord(x)
			s, err := r.Slice(off, 8)
			if err != nil {
				b.Fatal(err)
			}
			sum += binary.LittleEndian.Uint64(s)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mops/s")
		_ = sum
	})
	b.Run("prefetch32", func(b *testing.B) {
		b.ReportAllocs()
		var offs [32]uint64
		var sum uint64
		x := uint64(0x9E3779B97F4A7C15)
		n := 0
		for b.Loop() {
			for i := range offs {
				offs[i], x = nextWord(x)
			}
			r.Prefetch(offs[:])
			for _, off := range offs {
				s, err := r.Slice(off, 8)
				if err != nil {
					b.Fatal(err)
				}
				sum += binary.LittleEndian.Uint64(s)
			}
			n += len(offs)
		}
		b.ReportMetric(float64(n)/b.Elapsed().Seconds()/1e6, "Mops/s")
		_ = sum
	})
	b.Run("batch32", func(b *testing.B) {
		b.ReportAllocs()
		var offs [32]uint64
		var sum uint64
		x := uint64(0x9E3779B97F4A7C15)
		n := 0
		for b.Loop() {
			for i := range offs {
				offs[i], x = nextWord(x)
			}
			for _, off := range offs {
				s, err := r.Slice(off, 8)
				if err != nil {
					b.Fatal(err)
				}
				sum += binary.LittleEndian.Uint64(s)
			}
			n += len(offs)
		}
		b.ReportMetric(float64(n)/b.Elapsed().Seconds()/1e6, "Mops/s")
		_ = sum
	})
}
