package translator

import (
	"net/netip"
	"testing"

	"github.com/dta-go/dta/internal/intmap"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/store/storetest"
	"github.com/dta-go/dta/wire/dta"
	"github.com/dta-go/dta/wire/intreport"
)

// FuzzHandle feeds arbitrary datagrams through decode, routing, translation
// and the local sink over real regions. Nothing may panic, and the sink must
// never refuse an op: every op the translator emits has to be inside its
// store (a refused op would be a translation bug, not bad input).
func FuzzHandle(f *testing.F) {
	var bw dta.BatchWriter
	bw.Reset(make([]byte, 0, 256), dta.Header{Flags: dta.FlagRetransmit})
	for _, r := range []dta.Report{
		{Opcode: dta.OpKeyWriteExt, Store: 1, Redundancy: 4, Key: []byte("five-tuple-13"), Value: []byte{1, 2, 3, 4}},
		{Opcode: dta.OpPostcardExt, Store: 3, Hop: 2, PathLen: 3, Key: []byte{9}, Value: []byte{7}},
		{Opcode: dta.OpAppendExt, Store: 4, List: 15, Value: []byte{1, 2, 3, 4}},
		{Opcode: dta.OpKeyIncrementExt, Store: 2, Redundancy: 1, Key: []byte{1, 2}, Delta: 1 << 60},
	} {
		if err := bw.Add(&r); err != nil {
			f.Fatal(err)
		}
	}
	for _, seed := range [][]byte{
		{0x01, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1},
		{0x02, 0, 0x80, 0, 0, 0, 3, 0, 0, 0, 1},
		{0x03, 0, 0, 4, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 5},
		{0x04, 0, 0, 0, 0, 0, 42, 5, 0, 0, 0, 9},
		bw.Bytes(),
	} {
		f.Add(seed)
	}
	tr, cat := newTestTranslator(f, nil)
	w := tr.NewWorker()
	f.Fuzz(func(t *testing.T, b []byte) {
		w.Handle(b, reporter, 1)
		tr.Tick(1 << 40)
		if n := cat.Stats().Rejected.Load(); n != 0 {
			t.Fatalf("the sink refused %d ops emitted for %x", n, b)
		}
	})
}

// intPacket encodes one INT telemetry report of node about packet p.
func intPacket(f *testing.F, node uint32, p *intreport.Packet, r intreport.Report, inner intreport.InType) []byte {
	var err error
	if r.Contents, err = intreport.AppendPacket(nil, p); err != nil {
		f.Fatal(err)
	}
	r.Type, r.Inner = intreport.RepINT, inner
	b, err := intreport.AppendReport(intreport.GroupHeader{NodeID: node}.AppendTo(nil), &r)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// FuzzINTReportsThroughTheMapper feeds arbitrary INT telemetry report
// datagrams through the INT mapper into a translator worker over real
// regions, as the int_listen ingest does. Nothing may panic, and the sink
// must never refuse an op the mapping emitted.
func FuzzINTReportsThroughTheMapper(f *testing.F) {
	flow := intreport.Flow{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"), SrcPort: 5000, DstPort: 80, Proto: 6}
	flow6 := intreport.Flow{Src: netip.MustParseAddr("2001:db8::1"), Dst: netip.MustParseAddr("2001:db8::2"), SrcPort: 5000, DstPort: 80, Proto: 17}
	md := &intreport.Packet{Flow: flow, TTL: 60, INTPort: 5000, INT: &intreport.MDHeader{HopML: 3, RemainingHops: 8, Instructions: 0xB000}}
	for i := range 6 {
		md.Hops = append(md.Hops, intreport.Metadata{NodeID: uint32(i + 1), HopLatency: 100, QueueID: 2, QueueOccupancy: 7})
	}
	latency := intreport.Report{Metadata: intreport.Metadata{Bits: intreport.Mask(intreport.BitHopLatency), HopLatency: 5}}
	f.Add(intPacket(f, 9, md, latency, intreport.InIPv4))                                      // INT-MD, six hops
	f.Add(intPacket(f, 33, &intreport.Packet{Flow: flow, TTL: 62}, latency, intreport.InIPv4)) // a postcard (INT-XD)
	f.Add(intPacket(f, 22, &intreport.Packet{Flow: flow6, TTL: 63}, intreport.Report{Dropped: true,
		Metadata: intreport.Metadata{Bits: intreport.Mask(intreport.BitDrop), DropQueueID: 3, DropReason: 71}}, intreport.InIPv6)) // a drop
	cat := storetest.OpenConfigs(f, append(storetest.Configs(),
		store.Config{Name: "int-paths", ID: 5, Primitive: "keywrite", Slots: 1024, ValueSize: 12, Redundancy: 2},
		store.Config{Name: "int-postcards", ID: 7, Primitive: "postcard", Chunks: 1024, Hops: 8, Redundancy: 2},
		store.Config{Name: "int-counters", ID: 8, Primitive: "keyincrement", Slots: 1024, Redundancy: 2},
		store.Config{Name: "int-drops", ID: 9, Primitive: "append", Lists: 4, Capacity: 64, EntrySize: intmap.DropEntrySize, Batch: 4},
	))
	tr, err := New(DefaultConfig(), cat.Descriptors(), cat, nil)
	if err != nil {
		f.Fatal(err)
	}
	m, err := intmap.New(intmap.DefaultConfig(), cat.Descriptors())
	if err != nil {
		f.Fatal(err)
	}
	mw, w := m.NewWorker(), tr.NewWorker()
	from := netip.MustParseAddrPort("10.9.9.9:1234")
	f.Fuzz(func(t *testing.T, b []byte) {
		w.BeginAdapted(from, 1)
		_ = mw.Map(b, 1, w)
		w.EndAdapted()
		tr.Tick(1 << 40)
		if n := cat.Stats().Rejected.Load(); n != 0 {
			t.Fatalf("the sink refused %d ops emitted for %x", n, b)
		}
	})
}
