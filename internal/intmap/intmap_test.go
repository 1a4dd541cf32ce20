package intmap

import (
	"bytes"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/wire/dta"
	"github.com/dta-go/dta/wire/intreport"
)

func descriptors(t testing.TB) []store.Descriptor {
	t.Helper()
	d, err := store.DescribeAll([]store.Config{
		{Name: "int-paths", ID: 5, Primitive: "keywrite", Slots: 1024, ValueSize: 12, Redundancy: 2},
		{Name: "int-postcards", ID: 7, Primitive: "postcard", Chunks: 1024, Hops: 8, Redundancy: 2},
		{Name: "int-counters", ID: 8, Primitive: "keyincrement", Slots: 1024, Redundancy: 2},
		{Name: "int-drops", ID: 9, Primitive: "append", Lists: 4, Capacity: 64, EntrySize: DropEntrySize, Batch: 4},
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// collect keeps copies of the reports it gets.
type collect struct{ rs []dta.Report }

func (c *collect) AddReport(r *dta.Report) {
	cp := *r
	cp.Key, cp.Value = bytes.Clone(r.Key), bytes.Clone(r.Value)
	c.rs = append(c.rs, cp)
}

func (c *collect) of(op dta.Opcode) []dta.Report {
	var out []dta.Report
	for _, r := range c.rs {
		if r.Opcode == op {
			out = append(out, r)
		}
	}
	return out
}

var testFlow = intreport.Flow{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"), SrcPort: 5000, DstPort: 80, Proto: 6}

func report(t testing.TB, node uint32, p *intreport.Packet, r intreport.Report) []byte {
	t.Helper()
	var err error
	if r.Contents, err = intreport.AppendPacket(nil, p); err != nil {
		t.Fatal(err)
	}
	r.Type, r.Inner = intreport.RepINT, intreport.InIPv4
	b, err := intreport.AppendReport(intreport.GroupHeader{NodeID: node}.AppendTo(nil), &r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mdPacket(t testing.TB, path ...uint32) []byte {
	p := &intreport.Packet{Flow: testFlow, TTL: 60, INTPort: 5000,
		INT: &intreport.MDHeader{HopML: 3, RemainingHops: 8, Instructions: 0xB000}}
	for i := len(path) - 2; i >= 0; i-- {
		p.Hops = append(p.Hops, intreport.Metadata{NodeID: path[i], HopLatency: 100 * uint32(i+1), QueueID: 2, QueueOccupancy: 7})
	}
	return report(t, path[len(path)-1], p, intreport.Report{Metadata: intreport.Metadata{
		Bits: intreport.Mask(intreport.BitHopLatency), HopLatency: 100 * uint32(len(path))}})
}

func TestAnINTMDReportBecomesAPathAndCounters(t *testing.T) {
	m, err := New(DefaultConfig(), descriptors(t))
	if err != nil {
		t.Fatal(err)
	}
	var c collect
	if err := m.NewWorker().Map(mdPacket(t, 11, 22, 33), 0, &c); err != nil {
		t.Fatal(err)
	}
	paths := c.of(dta.OpKeyWriteExt)
	key := dta.FiveTuple{Src: testFlow.Src, Dst: testFlow.Dst, SrcPort: 5000, DstPort: 80, Proto: 6}.AppendTo(nil)
	if len(paths) != 1 || !bytes.Equal(paths[0].Key, key) || paths[0].Store != 5 {
		t.Fatalf("path reports %+v", paths)
	}
	if got := ParsePath(paths[0].Value); !slices.Equal(got, []uint32{11, 22, 33}) {
		t.Errorf("path %v, want [11 22 33]", got)
	}
	sums := map[string]uint64{}
	for _, r := range c.of(dta.OpKeyIncrementExt) {
		sums[string(r.Key)] += r.Delta
	}
	k := func(kind byte, node uint32, q uint8) string { x := QueueKey(kind, node, q); return string(x[:]) }
	for _, tc := range []struct {
		key  string
		want uint64
	}{
		{k(KindQueueLatency, 11, 2), 100}, {k(KindQueueLatency, 22, 2), 200}, {k(KindQueueCount, 22, 2), 1},
		{k(KindQueueOccupancy, 11, 2), 7}, {k(KindQueueLatency, 33, 0), 300},
		{string(FlowKey(nil, KindFlowLatency, dta.FiveTuple{Src: testFlow.Src, Dst: testFlow.Dst, SrcPort: 5000, DstPort: 80, Proto: 6})), 600},
	} {
		if sums[tc.key] != tc.want {
			t.Errorf("counter % x = %d, want %d", tc.key, sums[tc.key], tc.want)
		}
	}
	if len(c.of(dta.OpPostcardExt)) != 0 || len(c.of(dta.OpAppendExt)) != 0 {
		t.Error("an INT-MD report made postcards or drops")
	}
}

func TestAPathLongerThanTheStoreIsCutAndCounted(t *testing.T) {
	m, _ := New(DefaultConfig(), descriptors(t)) // 12-byte values: three hops
	var c collect
	m.NewWorker().Map(mdPacket(t, 1, 2, 3, 4, 5), 0, &c)
	if got := ParsePath(c.of(dta.OpKeyWriteExt)[0].Value); !slices.Equal(got, []uint32{1, 2, 3}) {
		t.Errorf("path %v", got)
	}
	if m.Stats().Truncated.Load() != 1 {
		t.Error("the cut was not counted")
	}
}

func TestAPostcardTakesItsHopFromTheTTL(t *testing.T) {
	m, _ := New(DefaultConfig(), descriptors(t))
	var c collect
	p := &intreport.Packet{Flow: testFlow, TTL: 62} // the third hop from 64
	m.NewWorker().Map(report(t, 33, p, intreport.Report{Metadata: intreport.Metadata{Bits: intreport.Mask(intreport.BitHopLatency), HopLatency: 5}}), 0, &c)
	pcs := c.of(dta.OpPostcardExt)
	if len(pcs) != 1 || pcs[0].Hop != 3 || !bytes.Equal(pcs[0].Value, []byte{0, 0, 0, 33}) {
		t.Fatalf("postcards %+v", pcs)
	}
}

func TestADropReportBecomesAnEntry(t *testing.T) {
	m, _ := New(DefaultConfig(), descriptors(t))
	var c collect
	p := &intreport.Packet{Flow: testFlow, TTL: 63}
	m.NewWorker().Map(report(t, 22, p, intreport.Report{Dropped: true, Metadata: intreport.Metadata{
		Bits: intreport.Mask(intreport.BitDrop), DropQueueID: 3, DropReason: 71}}), 2e9, &c)
	ds := c.of(dta.OpAppendExt)
	if len(ds) != 1 || ds[0].List != 22%4 || ds[0].Store != 9 {
		t.Fatalf("drop reports %+v", ds)
	}
	e, err := ParseDropEntry(ds[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	if e.Node != 22 || e.Queue != 3 || e.Reason != 71 || e.Flags&FlagDropped == 0 || e.Flow.DstPort != 80 || e.Arrival != 2 {
		t.Errorf("entry %+v", e)
	}
	if len(c.of(dta.OpPostcardExt)) != 0 {
		t.Error("a drop report made a postcard")
	}
}

func TestNewRefusesStoresThatCannotHoldINT(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
		want string
	}{
		{"a missing store", func(c *Config) { c.PathStore = "nope" }, "no such store"},
		{"a store of another primitive", func(c *Config) { c.DropStore = "int-counters" }, "is keyincrement"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.cfg(&cfg)
			if _, err := New(cfg, descriptors(t)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

type discard struct{}

func (discard) AddReport(*dta.Report) {}

func TestMappingAllocatesNothing(t *testing.T) {
	m, _ := New(DefaultConfig(), descriptors(t))
	w := m.NewWorker()
	pkt := mdPacket(t, 11, 22, 33)
	var s Sink = discard{}
	if n := testing.AllocsPerRun(100, func() { w.Map(pkt, 0, s) }); n != 0 {
		t.Errorf("%v allocations per packet", n)
	}
}

func BenchmarkMap(b *testing.B) {
	m, _ := New(DefaultConfig(), descriptors(b))
	w := m.NewWorker()
	pkt := mdPacket(b, 11, 22, 33, 44, 55)
	b.ReportAllocs()
	for b.Loop() {
		w.Map(pkt, 0, discard{})
	}
}

// A sink that pushes its own hop onto the stack and also reports its
// metadata in the header is on the path once and counted once.
func TestASinkOnTopOfItsOwnStackIsOnThePathOnce(t *testing.T) {
	m, _ := New(DefaultConfig(), descriptors(t))
	p := &intreport.Packet{Flow: testFlow, TTL: 60, INTPort: 5000,
		INT: &intreport.MDHeader{HopML: 3, RemainingHops: 8, Instructions: 0xB000}}
	for _, id := range []uint32{33, 22, 11} { // the sink 33 on top
		p.Hops = append(p.Hops, intreport.Metadata{NodeID: id, HopLatency: 10 * id, QueueID: 2})
	}
	var c collect
	m.NewWorker().Map(report(t, 33, p, intreport.Report{Metadata: intreport.Metadata{
		Bits: intreport.Mask(intreport.BitHopLatency), HopLatency: 330}}), 0, &c)
	if got := ParsePath(c.of(dta.OpKeyWriteExt)[0].Value); !slices.Equal(got, []uint32{11, 22, 33}) {
		t.Errorf("path %v, want [11 22 33]", got)
	}
	var samples uint64
	for _, r := range c.of(dta.OpKeyIncrementExt) {
		if r.Key[0] == KindQueueCount {
			samples += r.Delta
		}
	}
	if samples != 3 {
		t.Errorf("%d latency samples for three hops", samples)
	}
}

// An intermediate report (I) carries the path so far: it feeds counters but
// does not replace the flow's path.
func TestAnIntermediateReportDoesNotReplaceThePath(t *testing.T) {
	m, _ := New(DefaultConfig(), descriptors(t))
	p := &intreport.Packet{Flow: testFlow, TTL: 60, INTPort: 5000,
		INT: &intreport.MDHeader{HopML: 3, RemainingHops: 8, Instructions: 0xB000}, Hops: []intreport.Metadata{{NodeID: 11, HopLatency: 5}}}
	var c collect
	m.NewWorker().Map(report(t, 22, p, intreport.Report{Intermediate: true, Metadata: intreport.Metadata{
		Bits: intreport.Mask(intreport.BitHopLatency), HopLatency: 5}}), 0, &c)
	if n := len(c.of(dta.OpKeyWriteExt)); n != 0 {
		t.Errorf("an intermediate report wrote %d paths", n)
	}
	if len(c.of(dta.OpKeyIncrementExt)) == 0 {
		t.Error("an intermediate report fed no counters")
	}
}

// A postcard whose node id the postcard store cannot hold (its value set
// ends at 2^20 - 1 by default) is counted out of range, not written.
func TestAPostcardOfANodeIDTheStoreCannotHoldIsCounted(t *testing.T) {
	m, _ := New(DefaultConfig(), descriptors(t))
	var c collect
	m.NewWorker().Map(report(t, 1<<20, &intreport.Packet{Flow: testFlow, TTL: 62},
		intreport.Report{Metadata: intreport.Metadata{Bits: intreport.Mask(intreport.BitHopLatency), HopLatency: 5}}), 0, &c)
	if n := len(c.of(dta.OpPostcardExt)); n != 0 || m.Stats().OutOfTTL.Load() != 1 {
		t.Errorf("%d postcards written, %d counted out of range", n, m.Stats().OutOfTTL.Load())
	}
}
