package postcard_test

import (
	"encoding/binary"
	"testing"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/internal/region"
)

// regionSink writes ops into one region.
type regionSink struct{ mem *region.Region }

func (s regionSink) Apply(ops []memop.Op) error {
	for i := range ops {
		if err := s.mem.Write(ops[i].Offset, ops[i].Data); err != nil {
			return err
		}
	}
	return nil
}

// flowKey is the compat key of flow i.
func flowKey(i uint32) [4]byte {
	var k [4]byte
	binary.BigEndian.PutUint32(k[:], i*0x9E3779B1)
	return k
}

// BenchmarkTranslate measures the Postcarding cache: 5-hop paths (N = 2) of
// 8 interleaved flows, postcards arriving hop by hop, each completed path
// encoded into two chunk writes (ops into a batch, to a sink that discards
// them). One op is one postcard.
func BenchmarkTranslate(b *testing.B) {
	spec := postcard.Spec{Chunks: 1 << 26, Hops: 5, Redundancy: 2, MinValue: 1, MaxValue: 1<<20 - 1, Hash: hashing.CRC32C}
	cache, err := postcard.NewCache(postcard.DefaultCacheEntries)
	if err != nil {
		b.Fatal(err)
	}
	batch := memop.NewBatch(8, 256)
	b.ReportAllocs()
	var i uint32
	for b.Loop() {
		// Postcard i: flow i/40*8 + i%8, hop (i/8)%5+1.
		flow := i/40*8 + i%8
		hop := int(i/8%5) + 1
		key := flowKey(flow)
		if err := cache.Add(&spec, 0, key[:], hop, 0, uint32(hop), false, 0, batch, discard{}); err != nil {
			b.Fatal(err)
		}
		i++
	}
	s := b.Elapsed().Seconds()
	st := cache.Stats()
	b.ReportMetric(float64(b.N)/s, "reports/s")
	b.ReportMetric(float64(st.Chunks.Load())/s, "ops/s")
	b.ReportMetric(float64(st.Complete.Load())/s, "paths/s")
}

// BenchmarkQuery measures path queries of random written flows (5 hops, both
// N = 2 chunks decoded) in stores larger than the last-level cache, on
// transparent huge pages. One op is one query.
func BenchmarkQuery(b *testing.B) {
	for _, size := range []struct {
		name  string
		bytes uint64
		big   bool
	}{{"64MiB", 64 << 20, false}, {"1GiB", 1 << 30, true}} {
		b.Run(size.name, func(b *testing.B) {
			if size.big && testing.Short() {
				b.Skip("large store in -short mode")
			}
			spec := postcard.Spec{Hops: 5, Redundancy: 2, MinValue: 1, MaxValue: 1<<20 - 1, Hash: hashing.CRC32C}
			spec.Chunks = spec.ChunksFor(size.bytes)
			mem, err := region.New(region.Config{Size: spec.RegionSize(), HugePages: region.HugePagesMadvise, Prefault: true}, nil)
			if err != nil {
				b.Skip(err)
			}
			defer mem.Close()
			st, err := postcard.NewStore(spec, mem)
			if err != nil {
				b.Fatal(err)
			}
			cache, err := postcard.NewCache(1024)
			if err != nil {
				b.Fatal(err)
			}
			flows := uint32(min(spec.Chunks/32, 1<<20))
			batch := memop.NewBatch(8, 256)
			for f := range flows {
				key := flowKey(f)
				for hop := 1; hop <= 5; hop++ {
					if err := cache.Add(&spec, 0, key[:], hop, 0, f%1000+1, false, 0, batch, regionSink{mem}); err != nil {
						b.Fatal(err)
					}
				}
			}
			dst := make([]postcard.Hop, 0, 8)
			found := 0
			x, mask := uint32(1), flows-1
			b.ReportAllocs()
			for b.Loop() {
				x ^= x << 13
				x ^= x >> 17
				x ^= x << 5
				key := flowKey(x & mask)
				res, err := st.Query(key[:], dst)
				if err != nil {
					b.Fatal(err)
				}
				if res.Status == postcard.Found {
					found++
				}
			}
			if found < b.N*9/10 {
				b.Errorf("%d of %d paths found", found, b.N)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
		})
	}
}
