package roce_test

import (
	"bytes"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/dta-go/dta/wire/roce"
)

var (
	hostA   = netip.MustParseAddr("10.0.0.1")
	hostB   = netip.MustParseAddr("10.0.0.2")
	hostA6  = netip.MustParseAddr("fd00::1")
	hostB6  = netip.MustParseAddr("fd00::2")
	envAB   = roce.Envelope{Src: hostA, Dst: hostB, SrcPort: 0xC0DE, DstPort: roce.Port, HopLimit: 64, ID: 0x1234}
	envBA   = roce.Envelope{Src: hostB, Dst: hostA, SrcPort: 0xC0DF, DstPort: roce.Port, HopLimit: 64, ID: 0x1234}
	envAB6  = roce.Envelope{Src: hostA6, Dst: hostB6, SrcPort: 0xC0DE, DstPort: roce.Port, HopLimit: 64}
	payload = []byte{0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f}
)

// golden is a whole IP datagram written out by hand, header by header. The
// ICRCs were computed with an independent implementation (Python zlib over
// the masked bytes, spec/rocev2.md §9); write_only is spec §9's own vector.
type golden struct {
	name string
	hex  string
	env  roce.Envelope
	pkt  roce.Packet // ICRC included
}

func goldens() []golden {
	return []golden{
		{
			name: "RDMA WRITE Only with RETH (spec §9 vector)",
			hex: `4500004c 12344000 4011146b 0a000001 0a000002 | c0de 12b7 0038 0000 |
			      0a00ffff 00000011 80000100 | 00007f0000001000 12345678 00000010 |
			      000102030405060708090a0b0c0d0e0f | 9409eeba`,
			env: envAB,
			pkt: roce.Packet{
				BTH:     roce.BTH{Opcode: roce.OpWriteOnly, PKey: 0xFFFF, DestQP: 0x11, AckReq: true, PSN: 0x100},
				RETH:    roce.RETH{VA: 0x7f0000001000, RKey: 0x12345678, DMALen: 16},
				Payload: payload,
				ICRC:    0xbaee0994,
			},
		},
		{
			name: "FETCH_ADD with AtomicETH",
			hex: `45000048 12344000 4011146f 0a000001 0a000002 | c0de 12b7 0034 0000 |
			      1400ffff 00000011 80000101 |
			      00007f0000002000 12345678 0000000000000001 0000000000000000 | fa8c9bba`,
			env: envAB,
			pkt: roce.Packet{
				BTH:       roce.BTH{Opcode: roce.OpFetchAdd, PKey: 0xFFFF, DestQP: 0x11, AckReq: true, PSN: 0x101},
				AtomicETH: roce.AtomicETH{VA: 0x7f0000002000, RKey: 0x12345678, SwapAdd: 1},
				ICRC:      0xba9b8cfa,
			},
		},
		{
			name: "ACK with AETH (unlimited credits, MSN 1)",
			hex: `45000030 12344000 40111487 0a000002 0a000001 | c0df 12b7 001c 0000 |
			      1100ffff 00000022 00000100 | 1f000001 | 6070e6c1`,
			env: envBA,
			pkt: roce.Packet{
				BTH:  roce.BTH{Opcode: roce.OpACK, PKey: 0xFFFF, DestQP: 0x22, PSN: 0x100},
				AETH: roce.AETH{Syndrome: roce.ACKUnlimited, MSN: 1},
				ICRC: 0xc1e67060,
			},
		},
		{
			name: "NAK remote access error",
			hex: `45000030 12344000 40111487 0a000002 0a000001 | c0df 12b7 001c 0000 |
			      1100ffff 00000022 00000102 | 62000002 | fb0a7abb`,
			env: envBA,
			pkt: roce.Packet{
				BTH:  roce.BTH{Opcode: roce.OpACK, PKey: 0xFFFF, DestQP: 0x22, PSN: 0x102},
				AETH: roce.AETH{Syndrome: roce.NAKRemoteAccessError, MSN: 2},
				ICRC: 0xbb7a0afb,
			},
		},
		{
			name: "ATOMIC ACK with AETH and AtomicAckETH",
			hex: `45000038 12344000 4011147f 0a000002 0a000001 | c0df 12b7 0024 0000 |
			      1200ffff 00000022 00000101 | 1f000002 | 0000000000000029 | 62048632`,
			env: envBA,
			pkt: roce.Packet{
				BTH:          roce.BTH{Opcode: roce.OpAtomicACK, PKey: 0xFFFF, DestQP: 0x22, PSN: 0x101},
				AETH:         roce.AETH{Syndrome: roce.ACKUnlimited, MSN: 2},
				AtomicAckETH: roce.AtomicAckETH{OrigData: 0x29},
				ICRC:         0x32860462,
			},
		},
		{
			name: "RDMA WRITE Only with Immediate, 13-byte payload, PadCnt 3",
			hex: `45000050 12344000 40111467 0a000001 0a000002 | c0de 12b7 003c 0000 |
			      0b30ffff 00000011 80000103 | 00007f0000003000 12345678 0000000d | deadbeef |
			      48656c6c6f2c20776f726c6421 | 000000 | d62adfa1`,
			env: envAB,
			pkt: roce.Packet{
				BTH:     roce.BTH{Opcode: roce.OpWriteOnlyImm, PadCnt: 3, PKey: 0xFFFF, DestQP: 0x11, AckReq: true, PSN: 0x103},
				RETH:    roce.RETH{VA: 0x7f0000003000, RKey: 0x12345678, DMALen: 13},
				ImmDt:   roce.ImmDt{Data: 0xdeadbeef},
				Payload: []byte("Hello, world!"),
				ICRC:    0xa1df2ad6,
			},
		},
		{
			name: "RDMA WRITE Only over IPv6 (UDP checksum c279 also from Python)",
			hex: `60000000 002c 11 40 fd000000000000000000000000000001 fd000000000000000000000000000002 |
			      c0de 12b7 002c c279 | 0a00ffff 00000011 80000100 | 00007f0000001000 12345678 00000004 |
			      01020304 | 0076e843`,
			env: envAB6,
			pkt: roce.Packet{
				BTH:     roce.BTH{Opcode: roce.OpWriteOnly, PKey: 0xFFFF, DestQP: 0x11, AckReq: true, PSN: 0x100},
				RETH:    roce.RETH{VA: 0x7f0000001000, RKey: 0x12345678, DMALen: 4},
				Payload: []byte{1, 2, 3, 4},
				ICRC:    0x43e87600,
			},
		},
	}
}

// samePacket compares packets, treating nil and empty payloads alike.
func samePacket(a, b roce.Packet) bool {
	if !bytes.Equal(a.Payload, b.Payload) {
		return false
	}
	a.Payload, b.Payload = nil, nil
	return reflect.DeepEqual(a, b)
}

func TestGoldenDatagramsDecodeToTheirFields(t *testing.T) {
	for _, g := range goldens() {
		t.Run(g.name, func(t *testing.T) {
			ip := hx(t, g.hex)
			var env roce.Envelope
			udp, err := env.Decode(ip)
			if err != nil {
				t.Fatalf("Envelope.Decode: %v", err)
			}
			if env != g.env {
				t.Errorf("envelope\n got %+v\nwant %+v", env, g.env)
			}
			var p roce.Packet
			if err := p.Decode(udp); err != nil {
				t.Fatalf("Packet.Decode: %v", err)
			}
			if !samePacket(p, g.pkt) {
				t.Errorf("packet\n got %+v\nwant %+v", p, g.pkt)
			}
			if err := roce.VerifyICRC(ip); err != nil {
				t.Errorf("VerifyICRC: %v", err)
			}
			if err := env.VerifyICRC(udp); err != nil {
				t.Errorf("Envelope.VerifyICRC: %v", err)
			}
		})
	}
}

func TestGoldenDatagramsAreWhatWeBuild(t *testing.T) {
	for _, g := range goldens() {
		t.Run(g.name, func(t *testing.T) {
			want := hx(t, g.hex)
			p := g.pkt
			p.ICRC = 0 // computed by AppendDatagram
			p.BTH.PadCnt = 0
			got, err := g.env.AppendDatagram(nil, &p)
			if err != nil {
				t.Fatalf("AppendDatagram: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("AppendDatagram\n got %x\nwant %x", got, want)
			}
			if p.ICRC != g.pkt.ICRC {
				t.Errorf("AppendDatagram left p.ICRC = %#x, want %#x", p.ICRC, g.pkt.ICRC)
			}
			udp := want[len(want)-g.pkt.Len():]
			if got := g.pkt.AppendTo(nil); !bytes.Equal(got, udp) {
				t.Errorf("Packet.AppendTo\n got %x\nwant %x", got, udp)
			}
		})
	}
}

// The REQ an rdma_cm active side at 10.0.0.1 sends to port 1234 of 10.0.0.2,
// written out field by field (offsets from the MAD start).
const goldenREQ = `
01 07 02 03 0000 0000 0000000012345678 0010 0000 00000000
aabbccdd 00000000 00000000010604d2 020000fffe000001 00000000
00000000 00001110 00000010 000000a1 000100a7 ffff37f0
ffff ffff 00000000000000000000ffff0a000001 00000000000000000000ffff0a000002
12345003 00 40 08 70
0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000
0040 c350 000000000000000000000000 0a000001 000000000000000000000000 0a000002
0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000`

func reqGID(a netip.Addr) roce.GID { return roce.GIDFromAddr(a) }

func goldenREQFields() roce.ConnectRequest {
	m := roce.ConnectRequest{
		LocalCommID:             0xaabbccdd,
		ServiceID:               roce.ServiceID(roce.PortSpaceTCP, 1234),
		LocalCAGUID:             0x020000fffe000001,
		LocalQPN:                0x11,
		ResponderResources:      16,
		InitiatorDepth:          16,
		RemoteCMResponseTimeout: 20,
		EndToEndFlowControl:     true,
		StartingPSN:             0x100,
		LocalCMResponseTimeout:  20,
		RetryCount:              7,
		PKey:                    0xFFFF,
		PathMTU:                 roce.MTU1024,
		RNRRetryCount:           7,
		MaxCMRetries:            15,
		Primary: roce.CMPath{
			LocalLID: 0xFFFF, RemoteLID: 0xFFFF,
			LocalGID: reqGID(hostA), RemoteGID: reqGID(hostB),
			FlowLabel: 0x12345, PacketRate: 3, HopLimit: 64, SubnetLocal: true, LocalACKTimeout: 14,
		},
	}
	h := roce.IPCMHeader{SrcPort: 50000, Src: hostA, Dst: hostB}
	copy(m.PrivateData[:], h.AppendTo(nil))
	return m
}

// The collector's REP to goldenREQ: QP 0x22, starting PSN 0x200, 3 bytes of
// private data.
var goldenREP = `
01 07 02 03 0000 0000 0000000012345678 0013 0000 00000000
11223344 aabbccdd 00000000 00002200 00000000 00020000 10 10 79 e0 020000fffe000002
647461` + zeros193

var zeros193 = strings.Repeat("00", 193)

func goldenREPFields() roce.ConnectReply {
	m := roce.ConnectReply{
		LocalCommID:         0x11223344,
		RemoteCommID:        0xaabbccdd,
		LocalQPN:            0x22,
		StartingPSN:         0x200,
		ResponderResources:  16,
		InitiatorDepth:      16,
		TargetACKDelay:      15,
		EndToEndFlowControl: true,
		RNRRetryCount:       7,
		LocalCAGUID:         0x020000fffe000002,
	}
	copy(m.PrivateData[:], "dta")
	return m
}

func TestGoldenCMMessages(t *testing.T) {
	tests := []struct {
		name string
		hex  string
		want roce.CM
	}{
		{"REQ from the active side", goldenREQ, roce.CM{Header: roce.CMHeader(roce.AttrREQ, 0x12345678), REQ: goldenREQFields()}},
		{"REP from the passive side", goldenREP, roce.CM{Header: roce.CMHeader(roce.AttrREP, 0x12345678), REP: goldenREPFields()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mad := hx(t, tt.hex)
			if len(mad) != roce.MADLen {
				t.Fatalf("golden MAD has %d bytes, want %d", len(mad), roce.MADLen)
			}
			var m roce.CM
			if err := m.Decode(mad); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			switch {
			case m.Header != tt.want.Header:
				t.Errorf("MAD header\n got %+v\nwant %+v", m.Header, tt.want.Header)
			case m.Header.AttrID == roce.AttrREQ && m.REQ != tt.want.REQ:
				t.Errorf("REQ\n got %+v\nwant %+v", m.REQ, tt.want.REQ)
			case m.Header.AttrID == roce.AttrREP && m.REP != tt.want.REP:
				t.Errorf("REP\n got %+v\nwant %+v", m.REP, tt.want.REP)
			}
			if got := tt.want.AppendTo(nil); !bytes.Equal(got, mad) {
				t.Errorf("AppendTo\n got %x\nwant %x", got, mad)
			}
		})
	}
}

func TestGoldenREQPrivateDataIsAnIPCMHeader(t *testing.T) {
	mad := hx(t, goldenREQ)
	var m roce.CM
	if err := m.Decode(mad); err != nil {
		t.Fatal(err)
	}
	var h roce.IPCMHeader
	if err := h.Decode(m.REQ.PrivateData[:]); err != nil {
		t.Fatal(err)
	}
	if h.SrcPort != 50000 || h.Src != hostA || h.Dst != hostB {
		t.Errorf("IP-CM header = %+v", h)
	}
	ps, port, ok := roce.ParseServiceID(m.REQ.ServiceID)
	if !ok || ps != roce.PortSpaceTCP || port != 1234 {
		t.Errorf("ParseServiceID(%#x) = %#x, %d, %v", m.REQ.ServiceID, ps, port, ok)
	}
	if got := m.REQ.Primary.RemoteGID.Addr(); got != hostB {
		t.Errorf("remote GID address = %v, want %v", got, hostB)
	}
}

func TestHardwareCNPIsRebuiltByteForByte(t *testing.T) {
	lt, recs := readPcap(t, "testdata/hw_cx4_cnp.pcap")
	if lt != roce.LinkTypeEthernet || len(recs) != 1 {
		t.Fatalf("link type %d, %d frames", lt, len(recs))
	}
	frame := recs[0].data
	var eth roce.Ethernet
	if err := eth.Decode(frame); err != nil {
		t.Fatal(err)
	}
	var env roce.Envelope
	udp, err := env.Decode(frame[roce.EthernetLen:])
	if err != nil {
		t.Fatal(err)
	}
	var p roce.Packet
	if err := p.Decode(udp); err != nil {
		t.Fatal(err)
	}
	want := roce.BTH{Opcode: roce.OpCNP, PKey: 0xFFFF, BECN: true, DestQP: 0x118}
	if p.BTH != want || len(p.Payload) != 0 {
		t.Errorf("CNP decoded as %+v with %d payload bytes", p.BTH, len(p.Payload))
	}
	if env.TrafficClass != 0xC2 || env.SrcPort != 0 || env.ID != 0x718c || env.NoDF {
		t.Errorf("envelope %+v", env)
	}
	p.ICRC = 0
	got, err := env.AppendFrame(nil, eth.Dst, eth.Src, &p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, frame) {
		t.Errorf("rebuilt frame\n got %x\nwant %x", got, frame)
	}
}
