package intreport

import (
	"errors"
	"io"
	"net/netip"
	"testing"
)

// FuzzDecode: no packet makes the decoder or the inner parser panic, read
// out of bounds or return an error without a reason; a stack it accepts
// holds whole hops.
func FuzzDecode(f *testing.F) {
	f.Add(unhexF(example1))
	f.Add(unhexF(example3))
	f.Fuzz(func(t *testing.T, pkt []byte) {
		var d Decoder
		if err := d.Reset(pkt); err != nil {
			if ReasonOf(err) == NumReasons {
				t.Fatalf("error without a reason: %v", err)
			}
			return
		}
		var r Report
		var in Inner
		var m Metadata
		// Every call moves on by a report header at least (a report of
		// Report Length 0 is 4 bytes), so a packet ends in fewer calls than
		// it has bytes: more is a decoder that stopped moving.
		for range len(pkt) + 2 {
			err := d.Next(&r)
			if err == io.EOF {
				return
			}
			if err != nil {
				if ReasonOf(err) == NumReasons {
					t.Fatalf("error without a reason: %v", err)
				}
				continue
			}
			for _, det := range []*Detect{nil, {UDPPorts: []uint16{5000}, DSCPMask: 1, DSCPValue: 1}} {
				if err := ParseInner(r.Inner, r.Contents, det, &in); err != nil {
					if ReasonOf(err) == NumReasons {
						t.Fatalf("error without a reason: %v", err)
					}
					continue
				}
				if in.HasINT && !in.INT.MX && in.Hops*int(in.INT.HopML)*4 != len(in.Stack) {
					t.Fatalf("%d hops of %d words in a stack of %d bytes", in.Hops, in.INT.HopML, len(in.Stack))
				}
				for i := range in.Hops {
					in.Hop(i, &m)
				}
			}
		}
		t.Fatal("the decoder did not end")
	})
}

func unhexF(s string) []byte {
	t := &testing.T{}
	return unhex(t, s)
}

// FuzzRoundTrip: what the encoders write decodes to what they were given.
func FuzzRoundTrip(f *testing.F) {
	f.Add(uint32(7), uint16(0x9000), uint8(3), uint32(100), uint8(2), false)
	f.Add(uint32(1), uint16(0x3000), uint8(0), uint32(0), uint8(9), true)
	f.Fuzz(func(t *testing.T, node uint32, instr uint16, hops uint8, lat uint32, reason uint8, v6 bool) {
		instr &^= Mask(BitChecksum) // a checksum complement is not a hop's metadata to check
		hopML := uint8(MetadataLen(instr) / 4)
		if hopML > 31 || int(hopML)*int(hops%8)+3 > 255 {
			return
		}
		flow := Flow{Src: netip.MustParseAddr("10.1.2.3"), Dst: netip.MustParseAddr("10.3.2.1"), SrcPort: 1234, DstPort: 80, Proto: 6}
		if v6 {
			flow.Src, flow.Dst = netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")
		}
		p := Packet{Flow: flow, TTL: 60, INTPort: 5000, INT: &MDHeader{HopML: hopML, RemainingHops: 8, Instructions: instr}}
		for i := range int(hops % 8) {
			p.Hops = append(p.Hops, Metadata{NodeID: node + uint32(i), HopLatency: lat + uint32(i)})
		}
		contents, err := AppendPacket(nil, &p)
		if err != nil {
			if hopML == 0 && len(p.Hops) > 0 {
				return
			}
			t.Fatal(err)
		}
		r := Report{Type: RepINT, Inner: InIPv4, Dropped: reason != 0, Tracked: true,
			Metadata: Metadata{Bits: Mask(BitHopLatency) | Mask(BitDrop), HopLatency: lat, DropQueueID: 1, DropReason: reason}, Contents: contents}
		if v6 {
			r.Inner = InIPv6
		}
		pkt := GroupHeader{NodeID: node, Seq: 5}.AppendTo(nil)
		pkt, err = AppendReport(pkt, &r)
		if err != nil {
			t.Fatal(err)
		}
		var d Decoder
		if err := d.Reset(pkt); err != nil {
			t.Fatal(err)
		}
		var got Report
		if err := d.Next(&got); err != nil {
			t.Fatal(err)
		}
		if got.Metadata.HopLatency != lat || got.Metadata.DropReason != reason || got.Dropped != (reason != 0) {
			t.Fatalf("report %+v", got)
		}
		var in Inner
		if err := ParseInner(got.Inner, got.Contents, &Detect{UDPPorts: []uint16{5000}}, &in); err != nil {
			t.Fatal(err)
		}
		if in.Flow != flow || !in.HasINT || in.Hops != len(p.Hops) {
			t.Fatalf("inner %+v, %d hops, want flow %+v and %d hops", in.Flow, in.Hops, flow, len(p.Hops))
		}
		var m Metadata
		for i := range in.Hops {
			in.Hop(i, &m)
			if m.Has(BitNodeID) && m.NodeID != node+uint32(i) || m.Has(BitHopLatency) && m.HopLatency != lat+uint32(i) {
				t.Fatalf("hop %d: %+v", i, m)
			}
		}
		if errors.Is(err, ErrTruncated) {
			t.Fatal("unreachable")
		}
	})
}
