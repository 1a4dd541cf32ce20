package keyincrement_test

import (
	"fmt"
	"testing"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/keyincrement"
	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/region"
)

// BenchmarkTranslate measures Spec.Translate alone (fetch-and-add ops into a
// batch, no memory touched) for compat keys, N = 1..4. One op is one report.
func BenchmarkTranslate(b *testing.B) {
	for _, h := range []hashing.Algorithm{hashing.CRC32, hashing.CRC32C} {
		for n := 1; n <= 4; n++ {
			b.Run(fmt.Sprintf("%s/N=%d", h, n), func(b *testing.B) {
				spec := keyincrement.Spec{Slots: 1 << 27, Redundancy: n, Hash: h}
				batch := memop.NewBatch(4, 0)
				b.ReportAllocs()
				var k32 uint32
				for b.Loop() {
					batch.Reset()
					k32++
					key := keywrite.CompatKey(k32)
					spec.Translate(batch, 0, key[:], 1)
				}
				s := b.Elapsed().Seconds()
				b.ReportMetric(float64(b.N)/s, "reports/s")
				b.ReportMetric(float64(b.N*n)/s, "ops/s")
			})
		}
	}
}

// BenchmarkQuery measures count-min queries (N = 2 counters read) of random
// keys in stores larger than the last-level cache, on transparent huge pages.
// One op is one query.
func BenchmarkQuery(b *testing.B) {
	for _, size := range []struct {
		name  string
		bytes uint64
		big   bool
	}{{"64MiB", 64 << 20, false}, {"1GiB", 1 << 30, true}} {
		b.Run(size.name+"/N=2", func(b *testing.B) {
			if size.big && testing.Short() {
				b.Skip("large store in -short mode")
			}
			spec := keyincrement.Spec{Slots: size.bytes / keyincrement.CounterSize, Redundancy: 2, Hash: hashing.CRC32C}
			mem, err := region.New(region.Config{Size: spec.RegionSize(), HugePages: region.HugePagesMadvise, Prefault: true}, nil)
			if err != nil {
				b.Skip(err)
			}
			defer mem.Close()
			st, err := keyincrement.NewStore(spec, mem)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			var sum uint64
			x := uint32(1)
			for b.Loop() {
				x ^= x << 13
				x ^= x >> 17
				x ^= x << 5
				key := keywrite.CompatKey(x)
				v, err := st.Query(key[:], 0)
				if err != nil {
					b.Fatal(err)
				}
				sum += v
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
			_ = sum
		})
	}
}
