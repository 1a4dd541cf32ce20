package keywrite_test

import (
	"fmt"
	"os"
	"regexp"
	"sync"
	"testing"

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
// larger than the 32 MiB last-level cache; 4 GiB is the paper's Fig. 11 store.
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
	err   error
}

var (
	fixturesMu sync.Mutex
	fixtures   = map[uint64]*queryFixture{}
)

// benchKey is the i-th written key: distinct for distinct i.
func benchKey(i uint32) [4]byte { return keywrite.CompatKey(i * 0x9E3779B1) }

// queryStore returns a pre-faulted store of size bytes on transparent huge
// pages holding size/256 keys (one slot in 8 used, 4 copies each), shared by
// every benchmark of the process. It is never unmapped.
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
	f.keys = uint32(min(spec.Slots/32, 1<<22))
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
	smaps, _ := os.ReadFile("/proc/self/smaps_rollup")
	b.Logf("%d MiB store on %s pages, %d keys (%s)", size>>20, mem.Backing(), f.keys,
		regexp.MustCompile(`AnonHugePages:\s+\d+ kB`).Find(smaps))
	return f
}

// BenchmarkQuery measures Key-Write queries reading N = 1..4 copies (the
// worst case: every copy read and voted) of random written keys, one Query per
// key and in QueryBatch calls of 64 and of 1024 keys. One op is one query.
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
					if batch > 0 {
						benchQueryBatch(b, f, n, batch)
					} else {
						benchQuery(b, f, n)
					}
				})
			}
		}
	}
}

func benchQuery(b *testing.B, f *queryFixture, n int) {
	dst := make([]byte, 0, 4)
	x, mask := uint32(1), f.keys-1
	var found int
	b.ReportAllocs()
	for b.Loop() {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		key := benchKey(x & mask)
		res, err := f.store.Query(key[:], n, 0, dst)
		if err != nil {
			b.Fatal(err)
		}
		if res.Status == keywrite.Found {
			found++
		}
	}
	reportQueries(b, found, b.N)
}

func benchQueryBatch(b *testing.B, f *queryFixture, n, chunk int) {
	keyBuf := make([][4]byte, chunk)
	keys := make([][]byte, chunk)
	for i := range keys {
		keys[i] = keyBuf[i][:]
	}
	res := make([]keywrite.Result, chunk)
	vals := make([]byte, chunk*4)
	x, mask := uint32(1), f.keys-1
	var found, queries int
	b.ReportAllocs()
	for b.Loop() {
		for i := range keyBuf {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			keyBuf[i] = benchKey(x & mask)
		}
		if err := f.store.QueryBatch(keys, n, 0, res, vals); err != nil {
			b.Fatal(err)
		}
		for i := range res {
			if res[i].Status == keywrite.Found {
				found++
			}
		}
		queries += chunk
	}
	reportQueries(b, found, queries)
}

func reportQueries(b *testing.B, found, queries int) {
	if found < queries*9/10 {
		b.Errorf("%d of %d queries found their key, want nearly all", found, queries)
	}
	b.ReportMetric(float64(queries)/b.Elapsed().Seconds(), "queries/s")
	b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(queries), "ns/query")
}
