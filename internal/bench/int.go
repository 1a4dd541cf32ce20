package bench

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/dta-go/dta/internal/ingest"
	"github.com/dta-go/dta/internal/intmap"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/translator"
	"github.com/dta-go/dta/internal/transport/udp"
	"github.com/dta-go/dta/reporter"
	"github.com/dta-go/dta/wire/dta"
)

// Collector names of the INT comparison (Config.INT).
const (
	// INTNative is DTA fed the path reports the INT reports stand for, as
	// native Key-Write reports (int-path: 20-byte values, one report per
	// datagram, the same flows).
	INTNative = "dta-native"
	// INTInput is DTA fed P4.org INT-MD telemetry reports (one per
	// datagram) on its INT input, mapped onto the same stores: each gives a
	// path and the hop counters.
	INTInput = "dta-int"
)

// intDescriptors are the stores INT maps into, sized from memory.
func intDescriptors(memory uint64) ([]store.Descriptor, error) {
	mem := store.ByteSize(max(memory/4, 16<<20))
	return store.DescribeAll([]store.Config{
		{Name: "int-paths", ID: 5, Primitive: "keywrite", Default: true, Memory: mem, ValueSize: 20, Redundancy: 2},
		{Name: "int-postcards", ID: 7, Primitive: "postcard", Default: true, Memory: mem, Hops: 8, Redundancy: 2},
		{Name: "int-counters", ID: 8, Primitive: "keyincrement", Default: true, Memory: mem, Redundancy: 2},
		{Name: "int-drops", ID: 9, Primitive: "append", Default: true, Lists: 16, Capacity: 16384, EntrySize: intmap.DropEntrySize, Batch: 4},
	})
}

// intWorkloads builds the two pools of the INT comparison over the same
// flows: INT-MD telemetry reports, and the native path reports they carry.
func intWorkloads(n int) (native, intw *Workload, err error) {
	gi, err := reporter.NewINTGenerator(reporter.GenConfig{Seed: 1}, reporter.INTMD)
	if err != nil {
		return nil, nil, err
	}
	gp, err := reporter.NewGenerator(reporter.GenConfig{Kind: reporter.INTPath, Seed: 1})
	if err != nil {
		return nil, nil, err
	}
	intw = &Workload{Primitive: dta.KeyWrite, PerDgram: 1, Keys: reporter.DefaultFlows, reports: n}
	native = &Workload{Primitive: dta.KeyWrite, PerDgram: 1, Keys: reporter.DefaultFlows, reports: n}
	rs := make([]dta.Report, 1)
	for range n {
		intw.offs = append(intw.offs, uint32(len(intw.buf)))
		intw.buf = append(intw.buf, gi.Next()...)
		native.offs = append(native.offs, uint32(len(native.buf)))
		gp.Fill(rs)
		rs[0].Store = 5
		if native.buf, err = dta.AppendDatagram(native.buf, dta.Header{}, &rs[0]); err != nil {
			return nil, nil, err
		}
	}
	intw.offs = append(intw.offs, uint32(len(intw.buf)))
	native.offs = append(native.offs, uint32(len(native.buf)))
	return native, intw, nil
}

// intRuns measures the INT comparison in every mode: native path reports,
// then INT-MD reports, into one catalogue.
func (b *bench) intRuns(ctx context.Context, rep *Report) error {
	descs, err := intDescriptors(b.cfg.Memory)
	if err != nil {
		return err
	}
	cat, err := store.Open(descs, b.cfg.Region, nil)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	defer cat.Close()
	native, intw, err := intWorkloads(min(b.cfg.Pool, 1<<18))
	if err != nil {
		return err
	}
	for _, m := range b.cfg.Modes {
		if m.PerDatagram != 1 {
			continue // INT reports are one per datagram here
		}
		var runs [2]*Result
		for i, name := range []string{INTNative, INTInput} {
			w := native
			if name == INTInput {
				w = intw
			}
			r, err := b.run(ctx, name, m, w, cat)
			if r != nil {
				r.Primitive = "int"
				rep.Results = append(rep.Results, *r)
				runs[i] = r
			}
			if err != nil {
				return err
			}
		}
		if runs[0] != nil && runs[1] != nil {
			rep.Ratios = append(rep.Ratios, Ratio{Primitive: "int", Mode: m.String(),
				INTOfNative: ratio(runs[1].Accepted, runs[0].Accepted), INTOfNativePerCore: ratio(runs[1].PerCore, runs[0].PerCore)})
		}
	}
	return nil
}

// intCollector is DTA with its INT input: reports are counted as INT
// reports mapped, not as the DTA reports derived from them.
type intCollector struct {
	*dtaCollector
	m *intmap.Mapper
}

func newINTCollector(uc udp.Config, cat *store.Catalog) (*intCollector, error) {
	tr, err := translator.New(translator.DefaultConfig(), cat.Descriptors(), cat, nil)
	if err != nil {
		return nil, err
	}
	m, err := intmap.New(intmap.DefaultConfig(), cat.Descriptors())
	if err != nil {
		return nil, err
	}
	main := uc
	main.Addr = "127.0.0.1:0"
	main.Readers = 1
	in, err := ingest.New(ingest.Config{UDP: main, Tick: time.Millisecond, INT: &ingest.INTConfig{UDP: uc, Mapper: m}}, tr, nil)
	if err != nil {
		return nil, err
	}
	return &intCollector{dtaCollector: &dtaCollector{in: in, tr: tr, cat: cat}, m: m}, nil
}

func (c *intCollector) addr() netip.AddrPort    { return c.in.INTAddr() }
func (c *intCollector) listener() *udp.Listener { return c.in.INTListener() }
func (c *intCollector) counts() (uint64, uint64) {
	st := c.m.Stats()
	var bad uint64
	for i := range st.Malformed {
		bad += st.Malformed[i].Load()
	}
	_, dropped := c.dtaCollector.counts()
	return st.Reports.Load(), bad + dropped
}
