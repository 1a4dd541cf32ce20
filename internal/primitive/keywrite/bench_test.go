package keywrite_test

import (
	"fmt"
	"math/bits"
	"os"
	"regexp"
	"slices"
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
// with nothing else to do (see ceilingReads). One op is 4 reads.
func BenchmarkRandomReadCeiling(b *testing.B) {
	for _, size := range querySizes {
		b.Run(size.name, func(b *testing.B) {
			f := queryStore(b, size.bytes, size.big)
			mem := f.mem
			s := uint64(1)
			var sum uint64
			b.ReportAllocs()
			for b.Loop() {
				sum += ceilingReads(mem, &s, ceilingGroup)
			}
			sink.Add(sum)
			b.ReportMetric(float64(b.N*ceilingGroup)/b.Elapsed().Seconds(), "reads/s")
		})
	}
}

var sink atomic.Uint64

// ceilingReads does n random aligned 8-byte reads of mem (n a multiple of
// ceilingGroup) the fastest way we found in Go: a ring of ceilingDistance
// addresses; each step reads the oldest ceilingGroup of them, draws as many
// new ones with wyrand in their places and prefetches those with one
// Region.Prefetch call. It is go-randmem -mode rpp (../shared/tools/limits,
// the best Go mode of ../shared/spec/machine-limits.md) with 4 addresses per
// prefetch call instead of 1, which reads 10–20 % faster here; 2 or 8 per
// call and distances of 16 to 64 measured within a few percent of it. It
// returns the sum of the words read.
func ceilingReads(mem *region.Region, s *uint64, n int) uint64 {
	r := &ceilingState
	words := mem.Size() / 8
	mask := uint64(1)<<(63-bits.LeadingZeros64(words)) - 1
	var sum uint64
	for range n / ceilingGroup {
		j := r.i & (ceilingDistance - 1)
		r.i += ceilingGroup
		ring := r.offs[j : j+ceilingGroup]
		for k, off := range ring {
			w, _ := mem.Load64(off)
			sum += w
			*s += 0xa0761d6478bd642f
			hi, lo := bits.Mul64(*s, *s^0xe7037ed1a0b428db)
			ring[k] = (hi ^ lo) & mask * 8
		}
		mem.Prefetch(ring)
	}
	return sum
}

const (
	ceilingDistance = 32 // reads in flight
	ceilingGroup    = 4  // reads prefetched by one call
)

// ceilingState is the state of ceilingReads between calls: the offsets
// prefetched and not yet read. Benchmarks run one at a time.
var ceilingState struct {
	offs [ceilingDistance]uint64
	i    int
}

// ceilingMeter interleaves the ceiling with a query benchmark: every
// ceilingEvery queries it stops the benchmark's timer and times ceilingSlice
// reads of ceilingReads on the same store, so that queries and ceiling share
// the host's minutes (other VMs move the ceiling by tens of percent from one
// minute to the next). The first slice runs before the benchmark's first query.
type ceilingMeter struct {
	mem     *region.Region
	s       uint64
	next    int
	reads   int
	elapsed time.Duration
}

const (
	ceilingEvery = 1 << 16
	ceilingSlice = 1 << 16
)

func newCeilingMeter(mem *region.Region) *ceilingMeter {
	return &ceilingMeter{mem: mem, s: uint64(time.Now().UnixNano())}
}

// tick runs a slice of the ceiling if queries have reached the next multiple
// of ceilingEvery.
func (m *ceilingMeter) tick(b *testing.B, queries int) {
	if queries < m.next {
		return
	}
	b.StopTimer()
	m.next = queries + ceilingEvery
	start := time.Now()
	sink.Add(ceilingReads(m.mem, &m.s, ceilingSlice))
	m.elapsed += time.Since(start)
	m.reads += ceilingSlice
	b.StartTimer()
}

// rate is the ceiling's reads per second over all slices.
func (m *ceilingMeter) rate() float64 { return float64(m.reads) / m.elapsed.Seconds() }

// BenchmarkQuery measures Key-Write queries reading N = 1..4 copies (the
// worst case: every copy read and voted) of random written keys, one Query per
// key and in QueryBatch calls of 64 and of 1024 keys. One op is one query.
//
// Each run also measures the random-read ceiling on the same store in slices
// between its queries (ceilingMeter), outside the benchmark's timer, and
// reports it (ceiling-reads/s) with the fraction of it the queries reach,
// counting N reads a query (of-ceiling): on a shared host only the fraction
// measured in the same minutes compares.
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
					ceiling := newCeilingMeter(f.mem)
					var found, queries int
					if batch > 0 {
						found, queries = benchQueryBatch(b, f, n, batch, ceiling)
					} else {
						found, queries = benchQuery(b, f, n, ceiling)
					}
					reportQueries(b, found, queries, n, ceiling.rate())
				})
			}
		}
	}
}

func benchQuery(b *testing.B, f *queryFixture, n int, ceiling *ceilingMeter) (found, queries int) {
	dst := make([]byte, 0, 4)
	pos := 0
	b.ReportAllocs()
	for b.Loop() {
		ceiling.tick(b, queries)
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
		queries++
	}
	return found, queries
}

func benchQueryBatch(b *testing.B, f *queryFixture, n, chunk int, ceiling *ceilingMeter) (found, queries int) {
	res := make([]keywrite.Result, chunk)
	vals := make([]byte, chunk*4)
	pos := 0
	b.ReportAllocs()
	for b.Loop() {
		ceiling.tick(b, queries)
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

func reportQueries(b *testing.B, found, queries, n int, ceiling float64) {
	if found < queries*9/10 {
		b.Errorf("%d of %d queries found their key, want nearly all", found, queries)
	}
	rate := float64(queries) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "queries/s")
	b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(queries), "ns/query")
	b.ReportMetric(ceiling, "ceiling-reads/s")
	b.ReportMetric(rate*float64(n)/ceiling, "of-ceiling")
}

// BenchmarkQueryAB runs, in turns of about 1 ms each, QueryBatch, the
// QueryBatch before it was pipelined (QueryBatchChunked) and the ceiling, on
// the 4 GiB store with N=2 and calls of 1024 keys, and reports the median rate
// of each over its turns and the medians of the per-round fractions of the
// ceiling: an A/B in the same minutes on a host whose speed moves. One op is
// one round of the three.
func BenchmarkQueryAB(b *testing.B) {
	const n, chunk, calls = 2, 1024, 8
	f := queryStore(b, 4<<30, true)
	type fn func(keys [][]byte, n, threshold int, res []keywrite.Result, vals []byte) error
	runs := []fn{f.store.QueryBatch, f.store.QueryBatchChunked}
	res := make([]keywrite.Result, chunk)
	vals := make([]byte, chunk*4)
	pos := 0
	var after, before, ceiling, fracAfter, fracBefore []float64
	s := uint64(1)
	for b.Loop() {
		var rates [2]float64
		for i, run := range runs {
			start := time.Now()
			for range calls {
				if pos+chunk > len(f.pool) {
					pos = 0
				}
				if err := run(f.pool[pos:pos+chunk], n, 0, res, vals); err != nil {
					b.Fatal(err)
				}
				pos += chunk
			}
			rates[i] = calls * chunk / time.Since(start).Seconds()
		}
		start := time.Now()
		sink.Add(ceilingReads(f.mem, &s, calls*chunk*n))
		c := calls * chunk * n / time.Since(start).Seconds()
		after, before, ceiling = append(after, rates[0]), append(before, rates[1]), append(ceiling, c)
		fracAfter, fracBefore = append(fracAfter, rates[0]*n/c), append(fracBefore, rates[1]*n/c)
	}
	median := func(x []float64) float64 {
		slices.Sort(x)
		return x[len(x)/2]
	}
	b.ReportMetric(median(after), "queries/s")
	b.ReportMetric(median(before), "before-queries/s")
	b.ReportMetric(median(ceiling), "ceiling-reads/s")
	b.ReportMetric(median(fracAfter), "of-ceiling")
	b.ReportMetric(median(fracBefore), "before-of-ceiling")
}
