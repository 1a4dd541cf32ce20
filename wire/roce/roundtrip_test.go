package roce_test

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/dta-go/dta/wire/roce"
)

// knownOpcodes lists every opcode of the table, in numeric order.
func knownOpcodes() []roce.Opcode {
	var ops []roce.Opcode
	for i := range 256 {
		if _, ok := roce.Opcode(i).Info(); ok {
			ops = append(ops, roce.Opcode(i))
		}
	}
	return ops
}

// randomPacket fills every header with random in-range values and gives the
// packet n payload bytes if its opcode carries payload.
func randomPacket(r *rand.Rand, op roce.Opcode, n int) roce.Packet {
	p := roce.Packet{
		BTH: roce.BTH{
			Opcode: op, SE: r.IntN(2) == 1, MigReq: r.IntN(2) == 1,
			PKey: uint16(r.Uint32()), FECN: r.IntN(2) == 1, BECN: r.IntN(2) == 1,
			DestQP: r.Uint32() & roce.PSNMask, AckReq: r.IntN(2) == 1, PSN: r.Uint32() & roce.PSNMask,
		},
	}
	info, _ := op.Info()
	h := info.Headers
	if h&roce.HdrRETH != 0 {
		p.RETH = roce.RETH{VA: r.Uint64(), RKey: r.Uint32(), DMALen: r.Uint32()}
	}
	if h&roce.HdrAtomicETH != 0 {
		p.AtomicETH = roce.AtomicETH{VA: r.Uint64(), RKey: r.Uint32(), SwapAdd: r.Uint64(), Compare: r.Uint64()}
	}
	if h&roce.HdrAETH != 0 {
		p.AETH = roce.AETH{Syndrome: roce.Syndrome(r.IntN(256)), MSN: r.Uint32() & roce.PSNMask}
	}
	if h&roce.HdrAtomicAckETH != 0 {
		p.AtomicAckETH = roce.AtomicAckETH{OrigData: r.Uint64()}
	}
	if h&roce.HdrImmDt != 0 {
		p.ImmDt = roce.ImmDt{Data: r.Uint32()}
	}
	if h&roce.HdrDETH != 0 {
		p.DETH = roce.DETH{QKey: r.Uint32(), SrcQP: r.Uint32() & roce.PSNMask}
	}
	if info.Payload != roce.PayloadNone {
		p.Payload = make([]byte, n)
		for i := range p.Payload {
			p.Payload[i] = byte(r.Uint32())
		}
		p.BTH.PadCnt = uint8(roce.PadCount(n))
	}
	p.ICRC = r.Uint32()
	return p
}

func TestEveryOpcodeRoundTripsWithEveryPadCount(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, op := range knownOpcodes() {
		for n := range 9 {
			p := randomPacket(r, op, n)
			b := p.AppendTo(nil)
			if len(b) != p.Len() {
				t.Errorf("%v, %d bytes: AppendTo wrote %d bytes, Len says %d", op, n, len(b), p.Len())
			}
			if len(b)%4 != 0 {
				t.Errorf("%v, %d bytes: packet of %d bytes is not a multiple of 4", op, n, len(b))
			}
			var q roce.Packet
			if err := q.Decode(b); err != nil {
				t.Fatalf("%v, %d bytes: Decode(AppendTo) = %v", op, n, err)
			}
			if !samePacket(p, q) {
				t.Errorf("%v, %d bytes: round trip\n got %+v\nwant %+v", op, n, q, p)
			}
			if c := cap(q.Payload); c != len(q.Payload) {
				t.Errorf("%v: decoded payload has capacity %d past its length %d", op, c, len(q.Payload))
			}
		}
	}
}

func TestEnvelopeRoundTripsOverIPv4AndIPv6(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	envs := []roce.Envelope{
		{Src: hostA, Dst: hostB, SrcPort: roce.SourcePort(0x11, 0x22), DstPort: roce.Port, TrafficClass: 0x02, HopLimit: 64, ID: 7},
		{Src: hostA, Dst: hostB, SrcPort: 0xC000, DstPort: 9999, HopLimit: 3, NoDF: true},
		{Src: hostA6, Dst: hostB6, SrcPort: 0xFFFF, DstPort: roce.Port, TrafficClass: 0x8A, HopLimit: 255, FlowLabel: roce.FlowLabel(0x11, 0x22)},
	}
	for _, env := range envs {
		for _, op := range knownOpcodes() {
			p := randomPacket(r, op, 1+r.IntN(40))
			b, err := env.AppendDatagram(make([]byte, 0, 128), &p)
			if err != nil {
				t.Fatalf("%v over %v: %v", op, env.Src, err)
			}
			var e2 roce.Envelope
			udp, err := e2.Decode(b)
			if err != nil {
				t.Fatalf("%v over %v: Envelope.Decode = %v", op, env.Src, err)
			}
			if e2 != env {
				t.Errorf("envelope round trip\n got %+v\nwant %+v", e2, env)
			}
			var q roce.Packet
			if err := q.Decode(udp); err != nil {
				t.Fatal(err)
			}
			if !samePacket(p, q) {
				t.Errorf("%v: packet round trip\n got %+v\nwant %+v", op, q, p)
			}
			if err := roce.VerifyICRC(b); err != nil {
				t.Errorf("%v over %v: VerifyICRC = %v", op, env.Src, err)
			}
			if env.Src.Is6() && !udp6ChecksumOK(b) {
				t.Errorf("%v over %v: bad UDP checksum", op, env.Src)
			}
			if err := env.VerifyICRC(udp); err != nil {
				t.Errorf("%v over %v: Envelope.VerifyICRC = %v", op, env.Src, err)
			}
			// Seal reproduces the ICRC from a UDP payload with a wrong trailer.
			copy(udp[len(udp)-4:], "\x00\x00\x00\x00")
			if err := env.Seal(udp); err != nil || roce.VerifyICRC(b) != nil {
				t.Errorf("%v over %v: Seal did not restore the ICRC (err %v)", op, env.Src, err)
			}
		}
	}
}

func TestEnvelopeDefaultsTheHopLimitOnly(t *testing.T) {
	env := roce.Envelope{Src: hostA, Dst: hostB, SrcPort: 0xC123}
	p := roce.Packet{BTH: roce.BTH{Opcode: roce.OpACK, PKey: roce.DefaultPKey, DestQP: 5}}
	b, err := env.AppendDatagram(nil, &p)
	if err != nil {
		t.Fatal(err)
	}
	var got roce.Envelope
	if _, err := got.Decode(b); err != nil {
		t.Fatal(err)
	}
	if got.DstPort != 0 || got.HopLimit != roce.DefaultHopLimit || got.NoDF {
		t.Errorf("defaults: %+v", got)
	}
	mapped := roce.Envelope{Src: netip.AddrFrom16(hostA.As16()), Dst: netip.AddrFrom16(hostB.As16()), SrcPort: 0xC123}
	b6, err := mapped.AppendDatagram(nil, &p)
	if err != nil || b6[0]>>4 != 6 {
		t.Errorf("IPv4-mapped addresses must build an IPv6 datagram, as written (err %v)", err)
	}
	mixed := roce.Envelope{Src: hostA, Dst: netip.AddrFrom16(hostB.As16())}
	if _, err := mixed.AppendDatagram(nil, &p); err != roce.ErrBadAddress {
		t.Errorf("IPv4 to IPv4-mapped: %v, want ErrBadAddress", err)
	}
}

func TestHeadersRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		bth := roce.BTH{Opcode: roce.Opcode(r.IntN(256)), SE: r.IntN(2) == 0, MigReq: r.IntN(2) == 0,
			PadCnt: uint8(r.IntN(4)), PKey: uint16(r.Uint32()), FECN: r.IntN(2) == 0, BECN: r.IntN(2) == 0,
			DestQP: r.Uint32() & roce.PSNMask, AckReq: r.IntN(2) == 0, PSN: r.Uint32() & roce.PSNMask}
		var bth2 roce.BTH
		if err := bth2.Decode(bth.AppendTo(nil)); err != nil || bth2 != bth {
			t.Fatalf("BTH %+v -> %+v, %v", bth, bth2, err)
		}
		aeth := roce.AETH{Syndrome: roce.Syndrome(r.IntN(256)), MSN: r.Uint32() & roce.PSNMask}
		var aeth2 roce.AETH
		if err := aeth2.Decode(aeth.AppendTo(nil)); err != nil || aeth2 != aeth {
			t.Fatalf("AETH %+v -> %+v, %v", aeth, aeth2, err)
		}
		deth := roce.DETH{QKey: r.Uint32(), SrcQP: r.Uint32() & roce.PSNMask}
		var deth2 roce.DETH
		if err := deth2.Decode(deth.AppendTo(nil)); err != nil || deth2 != deth {
			t.Fatalf("DETH %+v -> %+v, %v", deth, deth2, err)
		}
		eth := roce.Ethernet{EtherType: uint16(r.Uint32())}
		eth.Dst[0], eth.Src[5] = byte(r.Uint32()), byte(r.Uint32())
		var eth2 roce.Ethernet
		if err := eth2.Decode(eth.AppendTo(nil)); err != nil || eth2 != eth {
			t.Fatalf("Ethernet %+v -> %+v, %v", eth, eth2, err)
		}
	}
}

func TestBTHAppendToTruncatesWideValues(t *testing.T) {
	h := roce.BTH{Opcode: roce.OpWriteOnly, PadCnt: 7, TVer: 0x1F, DestQP: 0xFF123456, PSN: 0xFFABCDEF}
	b := h.AppendTo(nil)
	want := hx(t, "0a 3f 0000 00123456 00abcdef")
	if !bytes.Equal(b, want) {
		t.Errorf("got %x, want %x", b, want)
	}
}

func randomBytes(r *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

func TestCMMessagesRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 50 {
		var m roce.CM
		m.Header = roce.CMHeader(0, r.Uint64())
		m.Header.AttrMod = r.Uint32()
		m.REQ = goldenREQFields()
		m.REQ.LocalCommID, m.REQ.StartingPSN, m.REQ.SRQ = r.Uint32(), r.Uint32()&roce.PSNMask, true
		m.REQ.TransportServiceType, m.REQ.ExtendedTransportType, m.REQ.RDCExists = 3, 5, true
		m.REQ.Alternate = m.REQ.Primary
		m.REQ.Alternate.SL = 15
		m.REQ.SAPSupported = true
		randomBytes(r, m.REQ.PrivateData[:])
		m.REP = goldenREPFields()
		m.REP.FailoverAccepted, m.REP.SRQ, m.REP.LocalEECN = 2, true, r.Uint32()&roce.PSNMask
		randomBytes(r, m.REP.PrivateData[:])
		m.RTU = roce.ReadyToUse{LocalCommID: r.Uint32(), RemoteCommID: r.Uint32()}
		randomBytes(r, m.RTU.PrivateData[:])
		m.REJ = roce.ConnectReject{LocalCommID: r.Uint32(), RemoteCommID: r.Uint32(), MessageRejected: roce.CMMsgREP,
			RejectInfoLen: 72, Reason: roce.RejectInvalidServiceID}
		randomBytes(r, m.REJ.ARI[:])
		randomBytes(r, m.REJ.PrivateData[:])
		m.MRA = roce.MessageReceiptAck{LocalCommID: r.Uint32(), RemoteCommID: r.Uint32(), MessageMRAed: roce.CMMsgOther, ServiceTimeout: 31}
		randomBytes(r, m.MRA.PrivateData[:])
		m.DREQ = roce.DisconnectRequest{LocalCommID: r.Uint32(), RemoteCommID: r.Uint32(), RemoteQPN: r.Uint32() & roce.PSNMask}
		randomBytes(r, m.DREQ.PrivateData[:])
		m.DREP = roce.DisconnectReply{LocalCommID: r.Uint32(), RemoteCommID: r.Uint32()}
		randomBytes(r, m.DREP.PrivateData[:])
		for _, attr := range []roce.AttrID{roce.AttrREQ, roce.AttrMRA, roce.AttrREJ, roce.AttrREP, roce.AttrRTU, roce.AttrDREQ, roce.AttrDREP} {
			m.Header.AttrID = attr
			b := m.AppendTo(nil)
			if len(b) != roce.MADLen {
				t.Fatalf("%v: %d bytes", attr, len(b))
			}
			var got roce.CM
			if err := got.Decode(b); err != nil {
				t.Fatalf("%v: %v", attr, err)
			}
			ok := got.Header == m.Header
			switch attr {
			case roce.AttrREQ:
				ok = ok && got.REQ == m.REQ
			case roce.AttrMRA:
				ok = ok && got.MRA == m.MRA
			case roce.AttrREJ:
				ok = ok && got.REJ == m.REJ
			case roce.AttrREP:
				ok = ok && got.REP == m.REP
			case roce.AttrRTU:
				ok = ok && got.RTU == m.RTU
			case roce.AttrDREQ:
				ok = ok && got.DREQ == m.DREQ
			case roce.AttrDREP:
				ok = ok && got.DREP == m.DREP
			}
			if !ok {
				t.Errorf("%v did not round-trip", attr)
			}
		}
	}
}

func TestCMPacketIsAUDSendToQP1(t *testing.T) {
	m := roce.CM{Header: roce.CMHeader(roce.AttrRTU, 9), RTU: roce.ReadyToUse{LocalCommID: 1, RemoteCommID: 2}}
	mad := m.AppendTo(nil)
	p := roce.CMPacket(0x1234567, mad)
	b := p.AppendTo(nil)
	var q roce.Packet
	if err := q.Decode(b); err != nil {
		t.Fatal(err)
	}
	if q.BTH.Opcode != roce.OpUDSendOnly || q.BTH.DestQP != 1 || q.BTH.PKey != 0xFFFF || q.BTH.PSN != 0x234567 ||
		q.DETH.QKey != 0x80010000 || q.DETH.SrcQP != 1 || !bytes.Equal(q.Payload, mad) {
		t.Errorf("CM packet decoded as %+v", q)
	}
	if len(b) != roce.BTHLen+roce.DETHLen+roce.MADLen+roce.ICRCLen {
		t.Errorf("CM packet is %d bytes", len(b))
	}
}

func TestIPCMHeaderRoundTripsBothFamilies(t *testing.T) {
	for _, h := range []roce.IPCMHeader{
		{SrcPort: 1, Src: hostA, Dst: hostB},
		{SrcPort: 0xFFFF, Src: hostA6, Dst: hostB6},
	} {
		b := h.AppendTo(nil)
		if len(b) != roce.IPCMLen {
			t.Fatalf("%d bytes", len(b))
		}
		var got roce.IPCMHeader
		if err := got.Decode(b); err != nil || got != h {
			t.Errorf("%+v -> %+v, %v", h, got, err)
		}
	}
}

func TestServiceIDMatchesRDMACM(t *testing.T) {
	if got := roce.ServiceID(roce.PortSpaceTCP, 0x04D2); got != 0x00000000010604D2 {
		t.Errorf("ServiceID = %#x", got)
	}
	if _, _, ok := roce.ParseServiceID(0x1000000010604D2); ok {
		t.Error("ParseServiceID accepted a service ID with high bits set")
	}
	if _, _, ok := roce.ParseServiceID(0x00000000077704D2); ok {
		t.Error("ParseServiceID accepted an unknown port space")
	}
}

func TestSyndromeHelpers(t *testing.T) {
	tests := []struct {
		s    roce.Syndrome
		typ  roce.SyndromeType
		text string
	}{
		{roce.ACKUnlimited, roce.SyndromeACK, "ACK"},
		{roce.ACKSyndrome(4), roce.SyndromeACK, "ACK (credits 4)"},
		{roce.RNRNAKSyndrome(14), roce.SyndromeRNRNAK, "RNR NAK (timer 1.28ms)"},
		{roce.NAKPSNSequenceError, roce.SyndromeNAK, "NAK PSN sequence error"},
		{roce.NAKInvalidRequest, roce.SyndromeNAK, "NAK invalid request"},
		{roce.NAKRemoteAccessError, roce.SyndromeNAK, "NAK remote access error"},
		{roce.NAKRemoteOperationalError, roce.SyndromeNAK, "NAK remote operational error"},
		{roce.NAKInvalidRDRequest, roce.SyndromeNAK, "NAK invalid RD request"},
		{0x45, roce.SyndromeReserved, "reserved syndrome 0x45"},
		{0x7F, roce.SyndromeNAK, "reserved syndrome 0x7f"},
	}
	for _, tt := range tests {
		if tt.s.Type() != tt.typ || tt.s.String() != tt.text {
			t.Errorf("%#x: type %v %q, want %v %q", uint8(tt.s), tt.s.Type(), tt.s.String(), tt.typ, tt.text)
		}
	}
	if roce.RNRNAKSyndrome(14) != 0x2E || roce.RNRNAKSyndrome(14).Value() != 14 {
		t.Error("RNR NAK timer 14 is not syndrome 0x2E")
	}
	if !roce.ACKUnlimited.IsACK() || roce.NAKInvalidRequest.IsACK() {
		t.Error("IsACK")
	}
	if roce.CreditCount(0) != 0 || roce.CreditCount(30) != 32768 || roce.CreditCount(31) != -1 {
		t.Error("credit table")
	}
	if roce.RNRTimer(0) != 655360*time.Microsecond || roce.RNRTimer(1) != 10*time.Microsecond ||
		roce.RNRTimer(25) != 61440*time.Microsecond || roce.RNRTimer(31) != 491520*time.Microsecond {
		t.Error("RNR timer table")
	}
}

func TestComparePSNWrapsAt2To24(t *testing.T) {
	tests := []struct {
		a, b uint32
		want int
	}{
		{5, 5, 0}, {6, 5, 1}, {4, 5, -1},
		{0x000000, 0xFFFFFF, 1}, {0xFFFFFF, 0x000000, -1}, {0x000001, 0xFFFFFE, 1},
		{0x7FFFFF, 0, 1}, {0x800000, 0, -1},
	}
	for _, tt := range tests {
		if got := roce.ComparePSN(tt.a, tt.b); got != tt.want {
			t.Errorf("ComparePSN(%#x, %#x) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestSourcePortIsStableSymmetricAndInRange(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 1000 {
		a, b := r.Uint32()&roce.PSNMask, r.Uint32()&roce.PSNMask
		p := roce.SourcePort(a, b)
		if p < 0xC000 || p != roce.SourcePort(b, a) {
			t.Fatalf("SourcePort(%#x, %#x) = %#x", a, b, p)
		}
		if fl := roce.FlowLabel(a, b); fl > 0xFFFFF {
			t.Fatalf("FlowLabel(%#x, %#x) = %#x", a, b, fl)
		}
	}
	// Linux: rdma_calc_flow_label(0x11, 0x22) = 0x242, sport 0xC242.
	if got := roce.SourcePort(0x11, 0x22); got != 0xC242 {
		t.Errorf("SourcePort(0x11, 0x22) = %#x, want 0xc242", got)
	}
}

func TestOpcodeTableAndMTU(t *testing.T) {
	if len(knownOpcodes()) != 23 {
		t.Errorf("%d known opcodes, want 23", len(knownOpcodes()))
	}
	if info, _ := roce.OpWriteOnlyImm.Info(); info.HeaderLen != 32 || info.Headers != roce.HdrRETH|roce.HdrImmDt {
		t.Errorf("WRITE Only with Immediate: %+v", info)
	}
	if info, _ := roce.OpAtomicACK.Info(); info.HeaderLen != 24 || info.Payload != roce.PayloadNone {
		t.Errorf("ATOMIC ACK: %+v", info)
	}
	if roce.Opcode(0x42).String() != "opcode(0x42)" || roce.OpFetchAdd.String() != "FetchAdd" {
		t.Error("Opcode.String")
	}
	for m := roce.MTU256; m <= roce.MTU4096; m++ {
		if got, ok := roce.MTUFromBytes(m.Bytes()); !ok || got != m {
			t.Errorf("MTU %d", m)
		}
	}
	if roce.MTU(0).Bytes() != 0 || roce.MTU(6).Bytes() != 0 {
		t.Error("invalid MTU has a size")
	}
	if _, ok := roce.MTUFromBytes(1500); ok {
		t.Error("MTUFromBytes(1500) ok")
	}
	rules := []struct {
		r    roce.PayloadRule
		n    int
		want bool
	}{
		{roce.PayloadNone, 0, true}, {roce.PayloadNone, 1, false},
		{roce.PayloadPMTU, 1024, true}, {roce.PayloadPMTU, 1023, false},
		{roce.PayloadLast, 0, false}, {roce.PayloadLast, 1, true}, {roce.PayloadLast, 1025, false},
		{roce.PayloadOnly, 0, true}, {roce.PayloadOnly, 1024, true}, {roce.PayloadOnly, 1025, false},
	}
	for _, tt := range rules {
		if got := tt.r.Allows(tt.n, roce.MTU1024); got != tt.want {
			t.Errorf("rule %d allows %d bytes = %v", tt.r, tt.n, got)
		}
	}
}

// udp6ChecksumOK verifies an IPv6 UDP checksum 16 bits at a time (RFC 1071).
func udp6ChecksumOK(ip []byte) bool {
	udp := ip[40:]
	if udp[6] == 0 && udp[7] == 0 {
		return false
	}
	var sum uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			sum += uint32(b[i])<<8 | uint32(b[i+1])
		}
		if len(b)%2 == 1 {
			sum += uint32(b[len(b)-1]) << 8
		}
	}
	add(ip[8:40])
	sum += uint32(len(udp)) + 17
	add(udp)
	for sum > 0xFFFF {
		sum = sum>>16 + sum&0xFFFF
	}
	return sum == 0xFFFF
}
