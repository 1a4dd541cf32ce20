package intreport

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"net/netip"
	"strings"
	"testing"
)

// unhex turns a commented hex dump (one field per line, "#" starts a
// comment) into bytes.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	var sb strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		sb.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(sb.String())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The first example of the Telemetry Report Format v2.0, section "Example
// with Baseline Metadata and Truncated IPv4": RepType INT, InType IPv4, MD
// Length 2 (level 1 interface ids, queue), Report Length 14, F set; the
// truncated packet ends after the original TCP header. Field values the
// example leaves open are ours (node 0x0A0B0C0D, hw_id 1, sequence 0x12345,
// interfaces 3 and 7, queue 5 with occupancy 0x000400, addresses, ports).
const example1 = `
2 0 4 1 2 3 4 5                 # Ver 2 | hw_id 1 | Sequence Number 0x12345: 0010 000001 00 0001 0010 0011 0100 0101
0A 0B 0C 0D                     # Node ID
14 0E 02 20                     # RepType 1 | InType 4 | Report Length 14 | MD Length 2 | D0 Q0 F1 I0 | Rsvd
50 00 00 00                     # RepMdBits 0101 0000 0000 0000 (bits 1, 3) | Domain Specific ID 0
00 00 00 00                     # DSMdBits 0 | DSMdstatus 0
00 03 00 07                     # Ingress Interface ID 3 | Egress Interface ID 7
05 00 04 00                     # Queue ID 5 | Queue Occupancy 0x000400
45 00 00 28 00 00 40 00 3F 06 00 00   # IPv4, IHL 5, length 40, DF, TTL 63, proto 6 (TCP)
0A 00 00 01 0A 00 00 02         # 10.0.0.1 -> 10.0.0.2
13 88 00 50 00 00 00 01 00 00 00 00 50 18 FF FF 00 00 00 00   # TCP 5000 -> 80, data offset 5
`

// The example "Example with Embedded INT-MD in a TCP Packet" (Report Format
// v2.0, after INT v2.1 section 6.3): Switch3's report with its queue
// occupancy (RepMdBits bit 3, MD Length 1) and the truncated packet holding
// a new UDP header to INT_TBD, the INT shim (Type 1, NPT 2, Length 7, IP
// proto 6), the INT-MD header (Hop ML 2, Remaining Hop Count 6, instructions
// node id and queue) and the stack of hop 2 then hop 1, then the original
// TCP header: Report Length 23. Open values are ours: node ids 2 and 1, the
// INT_TBD port 5000, queue occupancies.
const example3 = `
2 0 0 0 0 0 0 7                 # Ver 2 | hw_id 0 | Sequence Number 7
00 00 00 03                     # Node ID of Switch3
14 17 01 20                     # RepType 1 | InType 4 | RepLength 23 | MD Length 1 | F
10 00 00 00                     # RepMdBits 0001 0000 ... (bit 3) | Domain Specific ID 0
00 00 00 00                     # DSMdBits | DSMdstatus
00 00 00 30                     # Queue ID 0 | Queue Occupancy of Switch3 0x30
45 00 00 50 00 00 40 00 3E 11 00 00   # IPv4, length 80 (headers only), TTL 62, Proto 17
C0 A8 01 01 C0 A8 02 02         # 192.168.1.1 -> 192.168.2.2
D2 04 13 88 00 3C 00 00         # UDP 53764 -> INT_TBD (5000), length 60
18 07 00 06                     # Type 1 | NPT 2 | R R | Length 7 | Reserved | IP proto 6
20 00 02 06                     # Ver 2 | D0 E0 M0 | Reserved | HopML 2 | RemainingHopC 6
90 00 00 00                     # Instruction Bitmap 1001 0000 ... (node id, queue) | Domain Specific ID 0
00 00 00 00                     # DS Instruction | DS Flags
00 00 00 02                     # Node ID of hop2
00 00 00 20                     # Queue (id 0) Occupancy of hop2
00 00 00 01                     # Node ID of hop1
00 00 00 10                     # Queue (id 0) Occupancy of hop1
D2 04 01 BB 00 00 00 01 00 00 00 00 50 18 FF FF 00 00 00 00   # the original TCP header, 53764 -> 443
`

func TestExample1OfTheReportFormatDecodes(t *testing.T) {
	pkt := unhex(t, example1)
	var d Decoder
	if err := d.Reset(pkt); err != nil {
		t.Fatal(err)
	}
	if d.Group != (GroupHeader{HWID: 1, Seq: 0x12345, NodeID: 0x0A0B0C0D}) {
		t.Errorf("group header %+v", d.Group)
	}
	var r Report
	if err := d.Next(&r); err != nil {
		t.Fatal(err)
	}
	m := r.Metadata
	switch {
	case r.Type != RepINT || r.Inner != InIPv4 || r.Length != 14 || !r.Tracked || r.Dropped || r.Congested || r.Intermediate:
		t.Errorf("report header %+v", r)
	case m.Bits != 0x5000 || m.IngressIf != 3 || m.EgressIf != 7 || m.QueueID != 5 || m.QueueOccupancy != 0x400:
		t.Errorf("metadata %+v", m)
	case len(r.Contents) != 40:
		t.Errorf("contents %d bytes, want 40", len(r.Contents))
	}
	var in Inner
	if err := ParseInner(r.Inner, r.Contents, nil, &in); err != nil {
		t.Fatal(err)
	}
	want := Flow{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"), SrcPort: 5000, DstPort: 80, Proto: 6}
	if in.Flow != want || in.TTL != 63 || in.HasINT {
		t.Errorf("inner %+v", in)
	}
	if err := d.Next(&r); err != io.EOF {
		t.Errorf("after the only report: %v, want EOF", err)
	}
}

func TestTheEmbeddedINTMDExampleDecodes(t *testing.T) {
	pkt := unhex(t, example3)
	var d Decoder
	if err := d.Reset(pkt); err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := d.Next(&r); err != nil {
		t.Fatal(err)
	}
	if d.Group.NodeID != 3 || r.Length != 23 || r.Metadata.Bits != 0x1000 || r.Metadata.QueueOccupancy != 0x30 {
		t.Fatalf("report %+v, group %+v", r, d.Group)
	}
	for _, det := range []*Detect{nil, {UDPPorts: []uint16{5000}}} {
		var in Inner
		if err := ParseInner(r.Inner, r.Contents, det, &in); err != nil {
			t.Fatal(err)
		}
		want := Flow{Src: netip.MustParseAddr("192.168.1.1"), Dst: netip.MustParseAddr("192.168.2.2"), SrcPort: 53764, DstPort: 443, Proto: 6}
		if in.Flow != want {
			t.Errorf("flow %+v, want the original TCP flow %+v", in.Flow, want)
		}
		if !in.HasINT || in.INT.HopML != 2 || in.INT.RemainingHops != 6 || in.INT.Instructions != 0x9000 || in.Hops != 2 {
			t.Fatalf("INT %+v, %d hops", in.INT, in.Hops)
		}
		var m Metadata
		for i, want := range []struct{ node, occ uint32 }{{2, 0x20}, {1, 0x10}} {
			in.Hop(i, &m)
			if m.NodeID != want.node || m.QueueOccupancy != want.occ {
				t.Errorf("hop %d: %+v, want node %d occupancy %#x", i, m, want.node, want.occ)
			}
		}
	}
	// Marked by another port, the UDP payload is not INT: the flow is the
	// outer UDP one.
	var in Inner
	if err := ParseInner(r.Inner, r.Contents, &Detect{UDPPorts: []uint16{6000}}, &in); err != nil || in.HasINT || in.Flow.DstPort != 5000 {
		t.Errorf("with INT_TBD 6000: INT %v, flow %+v, err %v", in.HasINT, in.Flow, err)
	}
}

// Our encoders write what the decoder reads, and the spec's example
// re-encoded from its decoded fields is the same bytes.
func TestTheEncodersWriteTheExampleBytes(t *testing.T) {
	pkt := unhex(t, example3)
	var d Decoder
	d.Reset(pkt)
	var r Report
	d.Next(&r)
	got := d.Group.AppendTo(nil)
	got, err := AppendReport(got, &r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, pkt) {
		t.Errorf("re-encoded:\n% x\nwant\n% x", got, pkt)
	}
	// The packet part from AppendPacket.
	p := Packet{
		Flow: Flow{Src: netip.MustParseAddr("192.168.1.1"), Dst: netip.MustParseAddr("192.168.2.2"), SrcPort: 53764, DstPort: 443, Proto: 6},
		TTL:  62, INTPort: 5000,
		INT:  &MDHeader{HopML: 2, RemainingHops: 6, Instructions: 0x9000},
		Hops: []Metadata{{NodeID: 2, QueueOccupancy: 0x20}, {NodeID: 1, QueueOccupancy: 0x10}},
	}
	b, err := AppendPacket(nil, &p)
	if err != nil {
		t.Fatal(err)
	}
	if want := r.Contents; !bytes.Equal(b, want) {
		t.Errorf("AppendPacket:\n% x\nwant\n% x", b, want)
	}
}

func TestMalformedReportsAreRefusedByReason(t *testing.T) {
	good := unhex(t, example1)
	set := func(i int, v byte) []byte { b := bytes.Clone(good); b[i] = v; return b }
	for _, tc := range []struct {
		name string
		pkt  []byte
		want error
	}{
		{"a short group header", good[:5], ErrTruncated},
		{"version 1", set(0, 0x10), ErrVersion},
		{"no reports", good[:8], ErrTruncated},
		{"a report longer than the packet", set(9, 0x40), ErrReportLength},
		{"MD length beyond the RepMdBits", set(10, 3), ErrMDLength},
		{"MD length short of the RepMdBits", set(10, 1), ErrMDLength},
		{"a reserved report type", set(8, 0x54), ErrRepType},
		{"an IOAM report", set(8, 0x24), ErrUnsupported},
		{"a reserved inner type", set(8, 0x17), ErrInType},
		{"a cut individual header", good[:10], ErrTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d Decoder
			err := d.Reset(tc.pkt)
			if err == nil {
				var r Report
				err = d.Next(&r)
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			if ReasonOf(err) == NumReasons {
				t.Errorf("error %v has no reason", err)
			}
		})
	}
}

func TestABadReportDoesNotHideTheNextOne(t *testing.T) {
	bad := unhex(t, example1)[8:]
	bad[0] = 0x54 // reserved report type, length intact
	good := unhex(t, example1)[8:]
	pkt := append(append(unhex(t, example1)[:8:8], bad...), good...)
	var d Decoder
	if err := d.Reset(pkt); err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := d.Next(&r); !errors.Is(err, ErrRepType) {
		t.Fatalf("first report: %v", err)
	}
	if err := d.Next(&r); err != nil || r.Metadata.IngressIf != 3 {
		t.Fatalf("second report: %v %+v", err, r)
	}
	if err := d.Next(&r); err != io.EOF {
		t.Fatalf("then %v", err)
	}
}

func TestDecodingAllocatesNothing(t *testing.T) {
	pkt := unhex(t, example3)
	var d Decoder
	var r Report
	var in Inner
	var m Metadata
	det := &Detect{UDPPorts: []uint16{5000}}
	if n := testing.AllocsPerRun(100, func() {
		d.Reset(pkt)
		for d.Next(&r) == nil {
			ParseInner(r.Inner, r.Contents, det, &in)
			for i := range in.Hops {
				in.Hop(i, &m)
			}
		}
	}); n != 0 {
		t.Errorf("%v allocations per packet", n)
	}
}
