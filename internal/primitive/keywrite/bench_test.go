package keywrite_test

import (
	"fmt"
	"math/bits"
	"os"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/region"
)

// BenchmarkTranslate measures Spec.Translate alone (ops into a batch, no
// memory written) for compat reports, N = 1..4. One op is one report.
func BenchmarkTranslate(b *testing.B) {
	for _, h := range []hashing.Algorithm{hashing.CRC32, hashing.CRC32C} {
		for n := 1; n <= 4; n++ {
			b.Run(fmt.Sprintf("%s/N=%d", h, n), func(b *testing.B) {
				spec := keywrite.Spec{Slots: 1 << 29, ValueSize: 4, MaxRedundancy: 4, Hash: h}
				batch := memop.NewBatch(4, 64)
				val := make([]byte, 4)
				b.ReportAllocs()
				var k32 uint32
				for b.Loop() {
					batch.Reset()
					k32++
					key := keywrite.CompatKey(k32)
					if err := spec.Translate(batch, 0, key[:], val, n, false); err != nil {
						b.Fatal(err)
					}
				}
				reportRates(b, n)
			})
		}
	}
}

func reportRates(b *testing.B, opsPerReport int) {
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)/s, "reports/s")
	b.ReportMetric(float64(b.N*opsPerReport)/s, "ops/s")
}

// Query benchmark stores: compat geometry (4-byte values, 8-byte slots, CRC32)
// larger than the last-level cache; 4 GiB is the paper's Fig. 11 store.
var querySizes = []struct {
	name  string
	bytes uint64
	big   bool // skipped with -short
}{
	{"64MiB", 64 << 20, false},
	{"4GiB", 4 << 30, true},
}

type queryFixture struct {
	mem   *region.Region
	store *keywrite.Store
	keys  uint32 // keys 0..keys-1 (a power of two) were written with 4 copies
	// pool holds the keys the query benchmarks ask for, random picks among
	// the written keys made before any timing, so that a benchmark measures
	// queries and not its own key generation. Its slots span far more memory
	// than the last-level cache (2 × 4 M lines of 64 B for 4 GiB).
	pool [][]byte
	err  error
}

var (
	fixturesMu sync.Mutex
	fixtures   = map[uint64]*queryFixture{}
)

// benchKey is the i-th written key: distinct for distinct i.
func benchKey(i uint32) [4]byte { return keywrite.CompatKey(i * 0x9E3779B1) }

// queryStore returns a pre-faulted store of size bytes on transparent huge
// pages holding size/256 keys (at most 16 M; one slot in 8 used, 4 copies
// each), shared by every benchmark of the process. It is never unmapped.
func queryStore(b *testing.B, size uint64, big bool) *queryFixture {
	b.Helper()
	if big && testing.Short() {
		b.Skipf("a %d MiB store is too large for -short", size>>20)
	}
	fixturesMu.Lock()
	defer fixturesMu.Unlock()
	if f := fixtures[size]; f != nil {
		if f.err != nil {
			b.Skip(f.err)
		}
		return f
	}
	f := &queryFixture{}
	fixtures[size] = f
	spec := keywrite.Spec{ValueSize: 4, MaxRedundancy: 4, Hash: hashing.CRC32}
	spec.Slots = spec.SlotsFor(size)
	mem, err := region.New(region.Config{Size: spec.RegionSize(), HugePages: region.HugePagesMadvise, Prefault: true}, nil)
	if err != nil {
		f.err = fmt.Errorf("map %d MiB: %w", size>>20, err)
		b.Skip(f.err)
	}
	f.mem = mem
	if f.store, err = keywrite.NewStore(spec, mem); err != nil {
		b.Fatal(err)
	}
	f.keys = uint32(min(spec.Slots/32, 1<<24))
	batch := memop.NewBatch(4, 64)
	val := make([]byte, 4)
	for i := range f.keys {
		batch.Reset()
		key := benchKey(i)
		val[0], val[1] = byte(i), byte(i>>8)
		if err := spec.Translate(batch, 0, key[:], val, 4, false); err != nil {
			b.Fatal(err)
		}
		for _, op := range batch.Ops {
			if err := mem.Write(op.Offset, op.Data); err != nil {
				b.Fatal(err)
			}
		}
	}
	keyBuf := make([][4]byte, min(f.keys, 1<<22))
	f.pool = make([][]byte, len(keyBuf))
	x, mask := uint32(1), f.keys-1
	for i := range keyBuf {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		keyBuf[i] = benchKey(x & mask)
		f.pool[i] = keyBuf[i][:]
	}
	smaps, _ := os.ReadFile("/proc/self/smaps_rollup")
	b.Logf("%d MiB store on %s pages, %d keys, %d queried (%s)", size>>20, mem.Backing(), f.keys, len(f.pool),
		regexp.MustCompile(`AnonHugePages:\s+\d+ kB`).Find(smaps))
	return f
}

// BenchmarkRandomReadCeiling measures the ceiling of Key-Write queries on
// the query benchmarks' own store: random 8-byte reads of the same region,
// with nothing else to do (see ceilingReads). One op is one read.
func BenchmarkRandomReadCeiling(b *testing.B) {
	for _, size := range querySizes {
		b.Run(size.name, func(b *testing.B) {
			f := queryStore(b, size.bytes, size.big)
			mem := f.mem
			s := uint64(1)
			var sum uint64
			b.ReportAllocs()
			for b.Loop() {
				sum += ceilingReads(mem, &s, 1)
			}
			sink.Add(sum)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
		})
	}
}

var sink atomic.Uint64

// ceilingDistance is how many reads ahead ceilingReads prefetches, as
// go-randmem -mode rpp does by default (../shared/tools/limits).
const ceilingDistance = 32

// ceilingRing is the state of ceilingReads between calls: the offsets
// prefetched and not yet read.
type ceilingRing struct {
	offs [ceilingDistance]uint64
	i    int
}

var ceilingState ceilingRing

// ceilingReads does n random aligned 8-byte reads of mem the fastest way
// this package knows in Go, which is the way of the reference program
// go-randmem -mode rpp (the best Go mode of ../shared/spec/machine-limits.md):
// a ring of 32 addresses; each step reads the oldest, draws a new one with
// wyrand and prefetches it (Region.Prefetch, one address). It returns the sum
// of the words read.
func ceilingReads(mem *region.Region, s *uint64, n int) uint64 {
	r := &ceilingState
	words := mem.Size() / 8
	mask := uint64(1)<<(63-bits.LeadingZeros64(words)) - 1
	var sum uint64
	for range n {
		j := r.i & (ceilingDistance - 1)
		r.i++
		w, _ := mem.Load64(r.offs[j])
		sum += w
		*s += 0xa0761d6478bd642f
		hi, lo := bits.Mul64(*s, *s^0xe7037ed1a0b428db)
		r.offs[j] = (hi ^ lo) & mask * 8
		mem.Prefetch(r.offs[j : j+1])
	}
	return sum
}

// ceilingRate runs ceilingReads for about d and returns reads per second.
func ceilingRate(mem *region.Region, d time.Duration) float64 {
	s := uint64(time.Now().UnixNano())
	var sum uint64
	reads := 0
	start := time.Now()
	for time.Since(start) < d {
		sum += ceilingReads(mem, &s, 1<<16)
		reads += 1 << 16
	}
	sink.Add(sum)
	return float64(reads) / time.Since(start).Seconds()
}

// BenchmarkQuery measures Key-Write queries reading N = 1..4 copies (the
// worst case: every copy read and voted) of random written keys, one Query per
// key and in QueryBatch calls of 64 and of 1024 keys. One op is one query.
//
// Each run measures the random-read ceiling on the same store for 0.2 s just
// before and just after its own loop (ceilingRate) and reports the mean
// (ceiling-reads/s) and the fraction of it the queries reach, counting N reads
// a query (of-ceiling): on a shared host the ceiling moves by tens of percent
// between minutes, so only the fraction measured beside it compares.
func BenchmarkQuery(b *testing.B) {
	for _, size := range querySizes {
		for n := 1; n <= 4; n++ {
			for _, batch := range []int{0, 64, 1024} {
				mode := "single"
				if batch > 0 {
					mode = fmt.Sprintf("batch%d", batch)
				}
				b.Run(fmt.Sprintf("%s/N=%d/%s", size.name, n, mode), func(b *testing.B) {
					f := queryStore(b, size.bytes, size.big)
					ceiling := ceilingRate(f.mem, 200*time.Millisecond)
					var found, queries int
					if batch > 0 {
						found, queries = benchQueryBatch(b, f, n, batch)
					} else {
						found, queries = benchQuery(b, f, n)
					}
					elapsed := b.Elapsed()
					ceiling = (ceiling + ceilingRate(f.mem, 200*time.Millisecond)) / 2
					reportQueries(b, elapsed, found, queries, n, ceiling)
				})
			}
		}
	}
}

func benchQuery(b *testing.B, f *queryFixture, n int) (found, queries int) {
	dst := make([]byte, 0, 4)
	pos := 0
	b.ReportAllocs()
	for b.Loop() {
		res, err := f.store.Query(f.pool[pos], n, 0, dst)
		if err != nil {
			b.Fatal(err)
		}
		if res.Status == keywrite.Found {
			found++
		}
		if pos++; pos == len(f.pool) {
			pos = 0
		}
	}
	return found, b.N
}

func benchQueryBatch(b *testing.B, f *queryFixture, n, chunk int) (found, queries int) {
	res := make([]keywrite.Result, chunk)
	vals := make([]byte, chunk*4)
	pos := 0
	b.ReportAllocs()
	for b.Loop() {
		if pos+chunk > len(f.pool) {
			pos = 0
		}
		if err := f.store.QueryBatch(f.pool[pos:pos+chunk], n, 0, res, vals); err != nil {
			b.Fatal(err)
		}
		pos += chunk
		for i := range res {
			if res[i].Status == keywrite.Found {
				found++
			}
		}
		queries += chunk
	}
	return found, queries
}

func reportQueries(b *testing.B, elapsed time.Duration, found, queries, n int, ceiling float64) {
	if found < queries*9/10 {
		b.Errorf("%d of %d queries found their key, want nearly all", found, queries)
	}
	rate := float64(queries) / elapsed.Seconds()
	b.ReportMetric(rate, "queries/s")
	b.ReportMetric(elapsed.Seconds()*1e9/float64(queries), "ns/query")
	b.ReportMetric(ceiling, "ceiling-reads/s")
	b.ReportMetric(rate*float64(n)/ceiling, "of-ceiling")
}
