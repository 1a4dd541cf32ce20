package translator_test

import (
	"fmt"
	"net/netip"
	"sync"
	"testing"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/bench"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/translator"
	"github.com/dta-go/dta/wire/dta"
)

// benchStoreBytes is the store each primitive's benchmarks write to: far
// larger than the last-level cache (Key-Write: the paper's 4 GiB), or 64 MiB
// with -short.
func benchStoreBytes(p dta.Primitive) uint64 {
	switch {
	case testing.Short():
		return 64 << 20
	case p == dta.KeyWrite:
		return 4 << 30
	case p == dta.Append:
		return 256 << 20
	}
	return 1 << 30
}

type catalogKey struct {
	p     dta.Primitive
	small bool
}

var (
	catalogsMu sync.Mutex
	catalogs   = map[catalogKey]*store.Catalog{}
)

// benchCatalog returns the process-wide catalogue holding p's store on
// pre-faulted transparent huge pages: 1 MiB (small: it stays in the caches,
// so only the CPU's work is measured) or benchStoreBytes. It is never closed.
func benchCatalog(b *testing.B, p dta.Primitive, small bool) *store.Catalog {
	b.Helper()
	catalogsMu.Lock()
	defer catalogsMu.Unlock()
	k := catalogKey{p, small}
	if c := catalogs[k]; c != nil {
		return c
	}
	size := benchStoreBytes(p)
	if small {
		size = 1 << 20
	}
	d, err := bench.Descriptor(p, size, hashing.CRC32)
	if err != nil {
		b.Fatal(err)
	}
	c, err := store.Open([]store.Descriptor{d}, region.Config{HugePages: region.HugePagesMadvise, Prefault: true}, nil)
	if err != nil {
		b.Skip(err)
	}
	catalogs[k] = c
	return c
}

// BenchmarkHandle measures the whole in-process translation of datagrams
// received elsewhere: decode, route, translate, and the local sink writing
// into a pre-faulted store on huge pages, larger than the caches ("big") or
// of 1 MiB ("cached": the CPU's work alone), hashed with the prototype's
// CRC-32 as compat stores are. Reports are compat reports of one
// primitive (N = 2, 5-hop paths, Append batches of 16), one per datagram or
// as many as fit a 1472-byte datagram, over 2^20 keys. One op is one datagram.
func BenchmarkHandle(b *testing.B) {
	from := netip.MustParseAddrPort("192.0.2.1:40041")
	for _, p := range bench.Primitives {
		for _, small := range []bool{false, true} {
			for _, per := range []int{1, bench.MaxPerDatagram(p)} {
				size := "big"
				if small {
					size = "cached"
				}
				b.Run(fmt.Sprintf("%v/%s/per=%d", p, size, per), func(b *testing.B) {
					benchHandle(b, from, p, small, per, 0)
				})
				if per == 1 {
					// As the ingest drives it: a batch of 64 datagrams
					// (one recvmmsg or AF_XDP ring batch), then EndBatch.
					b.Run(fmt.Sprintf("%v/%s/per=1/batch=64", p, size), func(b *testing.B) {
						benchHandle(b, from, p, small, per, 64)
					})
				}
			}
		}
	}
}

func benchHandle(b *testing.B, from netip.AddrPort, p dta.Primitive, small bool, per, batch int) {
	cat := benchCatalog(b, p, small)
	w, err := bench.NewWorkload(p, per, 1<<20, 1<<20)
	if err != nil {
		b.Fatal(err)
	}
	tr, err := translator.New(translator.DefaultConfig(), cat.Descriptors(), cat, nil)
	if err != nil {
		b.Fatal(err)
	}
	wk := tr.NewWorker()
	if batch > 0 {
		wk.DeferToBatch()
	}
	n := w.Datagrams()
	ops0 := cat.Stats().Ops.Load()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		wk.Handle(w.Datagram(i), from, 1)
		if i++; i == n {
			i = 0
		}
		if batch > 0 && i%batch == 0 {
			wk.EndBatch()
		}
	}
	wk.EndBatch()
	st := tr.Stats()
	if st.Dropped() != 0 {
		b.Fatalf("%d reports dropped: %v", st.Dropped(), st.Drops)
	}
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(st.Reports[p])/s, "reports/s")
	b.ReportMetric(float64(cat.Stats().Ops.Load()-ops0)/s, "ops/s")
	b.ReportMetric(s*1e9/float64(st.Reports[p]), "ns/report")
}
