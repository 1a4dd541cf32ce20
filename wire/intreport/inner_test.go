package intreport

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
)

// TestInnerPacketsAreReadAsTheirHeadersSay covers what an outside encoder
// written from the specifications sent and the decoder once got wrong: an
// IP header of the other version than its container states, fragments
// other than the first, IPsec AH, a TCP packet when only UDP ports mark
// INT, and source-only domain specific metadata under an INT-MD stack.
func TestInnerPacketsAreReadAsTheirHeadersSay(t *testing.T) {
	v4 := Flow{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"), SrcPort: 1111, DstPort: 2222, Proto: ipProtoUDP}
	v6 := Flow{Src: netip.MustParseAddr("2001:db8::1"), Dst: netip.MustParseAddr("2001:db8::2"), SrcPort: 3333, DstPort: 4444, Proto: ipProtoUDP}
	md := &MDHeader{HopML: 1, RemainingHops: 6, Instructions: 0x8000} // node ids
	hops := []Metadata{{NodeID: 2}, {NodeID: 1}}
	pkt := func(f Flow, h *MDHeader, port uint16) []byte {
		b, err := AppendPacket(nil, &Packet{Flow: f, TTL: 64, INT: h, INTPort: port, Hops: hops})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// withAH puts a 12-byte authentication header (payload length 1: (1+2)
	// words, RFC 4302) after the IP header of b, hl bytes long, whose
	// protocol or next header field is at protoAt.
	withAH := func(b []byte, hl, protoAt int) []byte {
		ah := []byte{b[protoAt], 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1} // next header, length, reserved, SPI 1, sequence 1
		out := append(bytes.Clone(b[:hl]), ah...)
		out[protoAt] = ipProtoAH
		return append(out, b[hl:]...)
	}
	// fragment marks b (IPv4) as a later fragment, offset 185 x 8.
	fragment := func(b []byte) []byte { b = bytes.Clone(b); b[6], b[7] = 0, 185; return b }
	// v6Fragment puts a fragment header at offset 185 x 8 after the fixed header.
	v6Fragment := func(b []byte) []byte {
		fh := []byte{b[6], 0, 185 >> 5, 185 << 3 & 0xFF, 0, 0, 0, 9}
		out := append(bytes.Clone(b[:40]), fh...)
		out[6] = 44
		return append(out, b[40:]...)
	}
	// v6Chain puts hop-by-hop, destination options, routing, a first
	// fragment (offset 0) and AH headers after the fixed header, in RFC
	// 8200's order.
	v6Chain := func(b []byte) []byte {
		next := b[6]
		out := bytes.Clone(b[:40])
		out[6] = 0
		for _, h := range [][]byte{
			{60, 0, 1, 4, 0, 0, 0, 0},               // hop-by-hop, then destination options (PadN)
			{43, 0, 1, 4, 0, 0, 0, 0},               // destination options, then routing
			{44, 0, 4, 0, 0, 0, 0, 0},               // routing type 4, segments left 0, then fragment
			{51, 0, 0, 0, 0, 0, 0, 7},               // fragment offset 0, M 0, then AH
			{next, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1}, // AH, 12 bytes
		} {
			out = append(out, h...)
		}
		return append(out, b[40:]...)
	}
	// Source-only metadata: one word more than whole hops of two words
	// (node id, hop latency), with or without a domain id.
	sourceOnly := func(domain uint16) []byte {
		h := MDHeader{HopML: 2, RemainingHops: 6, Instructions: 0xA000, DomainID: domain}
		b := pkt(v4, &h, 5000)
		// The shim's length (words) and the stack grow by one word, put
		// after the stack (before the original UDP header).
		shim := 20 + 8
		end := shim + 4 + MDHeaderLen + 2*8
		out := append(bytes.Clone(b[:end]), 0xA6, 0x1A, 0xF6, 0xB1)
		out[shim+1]++
		return append(out, b[end:]...)
	}
	for _, tc := range []struct {
		name     string
		t        InType
		b        []byte
		det      Detect
		want     error
		flow     Flow
		intHops  int // -1: no INT
		wantFlow bool
	}{
		{"IPv4 contents holding an IPv6 header are malformed", InIPv4, pkt(v6, nil, 0), Detect{}, ErrInner, Flow{}, -1, false},
		{"IPv6 contents holding an IPv4 header are malformed", InIPv6, pkt(v4, nil, 0), Detect{}, ErrInner, Flow{}, -1, false},
		{"a later IPv4 fragment has no ports and no INT", InIPv4, fragment(pkt(v4, md, 5000)), Detect{},
			nil, Flow{Src: v4.Src, Dst: v4.Dst, Proto: ipProtoUDP}, -1, true},
		{"a later IPv6 fragment has no ports and no INT", InIPv6, v6Fragment(pkt(v6, md, 5000)), Detect{},
			nil, Flow{Src: v6.Src, Dst: v6.Dst, Proto: ipProtoUDP}, -1, true},
		{"INT behind an IPv6 authentication header is found", InIPv6, withAH(pkt(v6, md, 5000), 40, 6), Detect{}, nil, v6, 2, true},
		{"INT behind five IPv6 extension headers is found", InIPv6, v6Chain(pkt(v6, md, 5000)), Detect{}, nil, v6, 2, true},
		{"INT behind an IPv4 authentication header is found", InIPv4, withAH(pkt(v4, md, 5000), 20, 9), Detect{}, nil, v4, 2, true},
		{"with UDP ports marking INT, a TCP packet carries none", InIPv4,
			pkt(Flow{Src: v4.Src, Dst: v4.Dst, SrcPort: 1, DstPort: 2, Proto: ipProtoTCP}, md, 0), Detect{UDPPorts: []uint16{5000}},
			nil, Flow{Src: v4.Src, Dst: v4.Dst, SrcPort: 1, DstPort: 2, Proto: ipProtoTCP}, -1, true},
		{"source-only domain metadata below the stack is not a hop", InIPv4, sourceOnly(0x5453), Detect{UDPPorts: []uint16{5000}}, nil, v4, 2, true},
		{"without domain fields a stack of part of a hop is refused", InIPv4, sourceOnly(0), Detect{UDPPorts: []uint16{5000}}, ErrINTStack, v4, -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in Inner
			err := ParseInner(tc.t, tc.b, &tc.det, &in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if err != nil {
				return
			}
			if in.HasFlow != tc.wantFlow || in.Flow != tc.flow {
				t.Errorf("flow %+v (%v), want %+v", in.Flow, in.HasFlow, tc.flow)
			}
			switch {
			case tc.intHops < 0 && in.HasINT:
				t.Errorf("INT found: %+v", in.INT)
			case tc.intHops >= 0 && (!in.HasINT || in.Hops != tc.intHops):
				t.Errorf("INT %v with %d hops, want %d", in.HasINT, in.Hops, tc.intHops)
			case tc.intHops > 0:
				var m Metadata
				in.Hop(in.Hops-1, &m)
				if m.NodeID != 1 {
					t.Errorf("the first hop is node %d, want 1", m.NodeID)
				}
			}
		})
	}
}
