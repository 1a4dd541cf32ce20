package roce_test

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"

	"github.com/dta-go/dta/wire/roce"
)

func TestTruncatedDatagramsAreRejectedAtEveryLength(t *testing.T) {
	for _, g := range goldens() {
		ip := hx(t, g.hex)
		for n := range len(ip) {
			var env roce.Envelope
			if _, err := env.Decode(ip[:n]); err != roce.ErrTruncated {
				t.Errorf("%s cut to %d bytes: Envelope.Decode = %v, want ErrTruncated", g.name, n, err)
			}
			if _, err := roce.ICRC(ip[:n]); err != roce.ErrTruncated {
				t.Errorf("%s cut to %d bytes: ICRC = %v, want ErrTruncated", g.name, n, err)
			}
			if err := roce.VerifyICRC(ip[:n]); err != roce.ErrTruncated {
				t.Errorf("%s cut to %d bytes: VerifyICRC = %v, want ErrTruncated", g.name, n, err)
			}
		}
	}
}

func TestTruncatedPacketsAreRejectedAtEveryLength(t *testing.T) {
	// A UDP payload carries no length of its own, so a cut packet is only
	// detectable while it is shorter than its opcode's headers plus ICRC.
	for _, g := range goldens() {
		ip := hx(t, g.hex)
		udp := ip[len(ip)-g.pkt.Len():]
		info, _ := g.pkt.BTH.Opcode.Info()
		for n := range info.HeaderLen + roce.ICRCLen {
			var p roce.Packet
			if err := p.Decode(udp[:n]); err != roce.ErrTruncated {
				t.Errorf("%s cut to %d bytes: Decode = %v, want ErrTruncated", g.name, n, err)
			}
		}
	}
	mad := hx(t, goldenREQ)
	for n := range roce.MADLen {
		var m roce.CM
		if err := m.Decode(mad[:n]); err != roce.ErrTruncated {
			t.Fatalf("MAD cut to %d bytes: Decode = %v, want ErrTruncated", n, err)
		}
	}
}

func TestEveryHeaderRejectsAShortBuffer(t *testing.T) {
	b := make([]byte, roce.CMDataLen)
	b[1] = 0x40 // IPv4 for the IP-CM header; a valid byte for every other header
	tests := []struct {
		name   string
		size   int
		decode func([]byte) error
	}{
		{"BTH", roce.BTHLen, new(roce.BTH).Decode},
		{"RETH", roce.RETHLen, new(roce.RETH).Decode},
		{"AtomicETH", roce.AtomicETHLen, new(roce.AtomicETH).Decode},
		{"AETH", roce.AETHLen, new(roce.AETH).Decode},
		{"AtomicAckETH", roce.AtomicAckETHLen, new(roce.AtomicAckETH).Decode},
		{"ImmDt", roce.ImmDtLen, new(roce.ImmDt).Decode},
		{"DETH", roce.DETHLen, new(roce.DETH).Decode},
		{"Ethernet", roce.EthernetLen, new(roce.Ethernet).Decode},
		{"MADHeader", roce.MADHeaderLen, new(roce.MADHeader).Decode},
		{"IPCMHeader", roce.IPCMLen, new(roce.IPCMHeader).Decode},
		{"ConnectRequest", roce.CMDataLen, new(roce.ConnectRequest).Decode},
		{"ConnectReply", roce.CMDataLen, new(roce.ConnectReply).Decode},
		{"ReadyToUse", roce.CMDataLen, new(roce.ReadyToUse).Decode},
		{"ConnectReject", roce.CMDataLen, new(roce.ConnectReject).Decode},
		{"MessageReceiptAck", roce.CMDataLen, new(roce.MessageReceiptAck).Decode},
		{"DisconnectRequest", roce.CMDataLen, new(roce.DisconnectRequest).Decode},
		{"DisconnectReply", roce.CMDataLen, new(roce.DisconnectReply).Decode},
	}
	for _, tt := range tests {
		for n := range tt.size {
			if err := tt.decode(b[:n]); err != roce.ErrTruncated {
				t.Errorf("%s with %d bytes: %v, want ErrTruncated", tt.name, n, err)
			}
		}
		if err := tt.decode(b[:tt.size]); err != nil {
			t.Errorf("%s with %d bytes: %v", tt.name, tt.size, err)
		}
	}
}

// writeOnlyUDP returns the UDP payload of the spec's WRITE Only vector.
func writeOnlyUDP(t *testing.T) []byte {
	g := goldens()[0]
	ip := hx(t, g.hex)
	return ip[len(ip)-g.pkt.Len():]
}

func TestPacketRejections(t *testing.T) {
	tests := []struct {
		name  string
		build func(t *testing.T) []byte
		want  error
	}{
		{"bad TVer", func(t *testing.T) []byte { b := writeOnlyUDP(t); b[1] |= 0x01; return b }, roce.ErrBadTVer},
		{"TVer 15", func(t *testing.T) []byte { b := writeOnlyUDP(t); b[1] |= 0x0F; return b }, roce.ErrBadTVer},
		{"payload shorter than the pad", func(t *testing.T) []byte {
			return hx(t, "0a30ffff 00000011 80000100 00007f0000001000 12345678 00000000 0000 00000000")
		}, roce.ErrBadPad},
		{"WRITE Only with no payload and PadCnt 1", func(t *testing.T) []byte {
			return hx(t, "0a10ffff 00000011 80000100 00007f0000001000 12345678 00000000 00000000")
		}, roce.ErrBadPad},
		{"ACK carrying payload", func(t *testing.T) []byte {
			return hx(t, "1100ffff 00000022 00000100 1f000001 deadbeef 00000000")
		}, roce.ErrBadLength},
		{"READ request carrying payload", func(t *testing.T) []byte {
			return hx(t, "0c00ffff 00000011 80000100 00007f0000001000 12345678 00000010 01020304 00000000")
		}, roce.ErrBadLength},
		{"FETCH_ADD one byte short", func(t *testing.T) []byte {
			return hx(t, "1400ffff 00000011 80000101 00007f0000002000 12345678 0000000000000001 00000000000000 00000000")
		}, roce.ErrTruncated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p roce.Packet
			if err := p.Decode(tt.build(t)); err != tt.want {
				t.Errorf("Decode = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestUnknownOpcodesAreRejected(t *testing.T) {
	known := map[roce.Opcode]bool{}
	for _, op := range knownOpcodes() {
		known[op] = true
	}
	b := make([]byte, 64)
	binary.BigEndian.PutUint16(b[2:], 0xFFFF)
	for i := range 256 {
		op := roce.Opcode(i)
		if known[op] {
			continue
		}
		b[0] = byte(op)
		var p roce.Packet
		if err := p.Decode(b); err != roce.ErrUnknownOpcode {
			t.Errorf("opcode %#x: Decode = %v, want ErrUnknownOpcode", i, err)
		}
		p = roce.Packet{BTH: roce.BTH{Opcode: op}}
		if err := p.Check(); err != roce.ErrUnknownOpcode {
			t.Errorf("opcode %#x: Check = %v, want ErrUnknownOpcode", i, err)
		}
		env := envAB
		if _, err := env.AppendDatagram(nil, &p); err != roce.ErrUnknownOpcode {
			t.Errorf("opcode %#x: AppendDatagram = %v, want ErrUnknownOpcode", i, err)
		}
	}
}

func TestICRCCoversEveryBitButTheMaskedFields(t *testing.T) {
	for _, g := range goldens() {
		ip := hx(t, g.hex)
		ipLen := roce.IPv4HeaderLen
		masked := map[int]bool{1: true, 8: true, 10: true, 11: true}
		if ip[0]>>4 == 6 {
			ipLen = roce.IPv6HeaderLen
			masked = map[int]bool{1: true, 2: true, 3: true, 7: true}
		}
		masked[ipLen+6], masked[ipLen+7] = true, true // UDP checksum
		masked[ipLen+8+4] = true                      // BTH FECN/BECN/Resv6
		for i := range ip {
			for bit := range 8 {
				b := append([]byte(nil), ip...)
				b[i] ^= 1 << bit
				err := roce.VerifyICRC(b)
				switch {
				case masked[i] || (i == 0 && ipLen == 40 && bit < 4): // traffic class high nibble
					if err != nil {
						t.Errorf("%s: flipping masked byte %d bit %d: %v, want nil", g.name, i, bit, err)
					}
				case err == nil:
					t.Errorf("%s: flipping byte %d bit %d went unnoticed", g.name, i, bit)
				case !errors.Is(err, roce.ErrICRC) && !errors.Is(err, roce.ErrTruncated) &&
					!errors.Is(err, roce.ErrBadLength) && !errors.Is(err, roce.ErrNotRoCE):
					t.Errorf("%s: flipping byte %d bit %d: unexpected %v", g.name, i, bit, err)
				}
			}
		}
	}
}

func TestNonRoCEDatagramsAreRejected(t *testing.T) {
	v4 := func(t *testing.T, edit func(b []byte)) []byte {
		b := hx(t, goldens()[0].hex)
		edit(b)
		return b
	}
	v6 := func(t *testing.T, edit func(b []byte)) []byte {
		b := hx(t, goldens()[6].hex)
		edit(b)
		return b
	}
	tests := []struct {
		name string
		ip   []byte
		want error
	}{
		{"IPv4 with options", v4(t, func(b []byte) { b[0] = 0x46 }), roce.ErrNotRoCE},
		{"IPv4 carrying TCP", v4(t, func(b []byte) { b[9] = 6 }), roce.ErrNotRoCE},
		{"IPv4 first fragment", v4(t, func(b []byte) { b[6] = 0x20 }), roce.ErrNotRoCE},
		{"IPv4 later fragment", v4(t, func(b []byte) { b[7] = 0x08 }), roce.ErrNotRoCE},
		{"IPv4 reserved flag", v4(t, func(b []byte) { b[6] |= 0x80 }), roce.ErrNotRoCE},
		{"IP version 5", v4(t, func(b []byte) { b[0] = 0x55 }), roce.ErrNotRoCE},
		{"IPv4 total length below its header", v4(t, func(b []byte) { b[2], b[3] = 0, 19 }), roce.ErrBadLength},
		{"UDP length disagreeing with IP", v4(t, func(b []byte) { b[25]-- }), roce.ErrBadLength},
		{"UDP length too short for a BTH", v4(t, func(b []byte) { b[2], b[3], b[24], b[25] = 0, 20+8+15, 0, 8+15 }), roce.ErrTruncated},
		{"IPv6 with an extension header", v6(t, func(b []byte) { b[6] = 0 }), roce.ErrNotRoCE},
		{"IPv6 UDP length disagreeing", v6(t, func(b []byte) { b[45]++ }), roce.ErrBadLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var env roce.Envelope
			if _, err := env.Decode(tt.ip); err != tt.want {
				t.Errorf("Envelope.Decode = %v, want %v", err, tt.want)
			}
			if _, err := roce.ICRC(tt.ip); err != tt.want {
				t.Errorf("ICRC = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestEnvelopeRejections(t *testing.T) {
	ack := roce.Packet{BTH: roce.BTH{Opcode: roce.OpACK}}
	tests := []struct {
		name string
		env  roce.Envelope
		p    roce.Packet
		want error
	}{
		{"no addresses", roce.Envelope{}, ack, roce.ErrBadAddress},
		{"IPv4 to IPv6", roce.Envelope{Src: hostA, Dst: hostB6}, ack, roce.ErrBadAddress},
		{"IPv6 to IPv4", roce.Envelope{Src: hostA6, Dst: hostB}, ack, roce.ErrBadAddress},
		{"IPv4 datagram over 65535 bytes", envAB, roce.Packet{BTH: roce.BTH{Opcode: roce.OpSendOnly}, Payload: make([]byte, 65535-20-8-12-4+1)}, roce.ErrTooLong},
		{"IPv6 payload over 65535 bytes", envAB6, roce.Packet{BTH: roce.BTH{Opcode: roce.OpSendOnly}, Payload: make([]byte, 65535-8-12-4+1)}, roce.ErrTooLong},
		{"TVer not 0", envAB, roce.Packet{BTH: roce.BTH{Opcode: roce.OpACK, TVer: 1}}, roce.ErrBadTVer},
		{"payload on an ACK", envAB, roce.Packet{BTH: roce.BTH{Opcode: roce.OpACK}, Payload: []byte{1}}, roce.ErrBadLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := []byte{0xAA}
			b, err := tt.env.AppendDatagram(buf, &tt.p)
			if err != tt.want {
				t.Errorf("AppendDatagram = %v, want %v", err, tt.want)
			}
			if len(b) != 1 {
				t.Errorf("AppendDatagram left %d bytes in the buffer after failing", len(b))
			}
			b, err = tt.env.AppendFrame(buf, [6]byte{}, [6]byte{}, &tt.p)
			if err != tt.want || len(b) != 1 {
				t.Errorf("AppendFrame = %v and %d bytes, want %v and 1", err, len(b), tt.want)
			}
		})
	}
	udp := make([]byte, 15)
	if _, err := envAB.ICRC(udp); err != roce.ErrTruncated {
		t.Errorf("Envelope.ICRC of 15 bytes = %v", err)
	}
	if err := (&roce.Envelope{}).VerifyICRC(make([]byte, 16)); err != roce.ErrBadAddress {
		t.Errorf("VerifyICRC without addresses = %v", err)
	}
	if err := (&roce.Envelope{}).Seal(make([]byte, 16)); err != roce.ErrBadAddress {
		t.Errorf("Seal without addresses = %v", err)
	}
	big := roce.Envelope{Src: hostA, Dst: hostB}
	if _, err := big.ICRC(make([]byte, 65535)); err != roce.ErrTooLong {
		t.Errorf("Envelope.ICRC of 65535 bytes over IPv4 = %v", err)
	}
}

func TestCMRejections(t *testing.T) {
	good := hx(t, goldenREQ)
	tests := []struct {
		name string
		edit func(b []byte)
		want error
	}{
		{"base version 2", func(b []byte) { b[0] = 2 }, roce.ErrNotCM},
		{"subnet administration class", func(b []byte) { b[1] = 0x03 }, roce.ErrNotCM},
		{"class version 1", func(b []byte) { b[2] = 1 }, roce.ErrNotCM},
		{"ClassPortInfo", func(b []byte) { b[17] = 0x01 }, roce.ErrUnknownAttribute},
		{"LAP", func(b []byte) { b[17] = 0x19 }, roce.ErrUnknownAttribute},
		{"SIDR_REQ", func(b []byte) { b[17] = 0x17 }, roce.ErrUnknownAttribute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := append([]byte(nil), good...)
			tt.edit(b)
			var m roce.CM
			if err := m.Decode(b); err != tt.want {
				t.Errorf("Decode = %v, want %v", err, tt.want)
			}
		})
	}
	var h roce.IPCMHeader
	pd := make([]byte, roce.IPCMLen)
	pd[1] = 0x50
	if err := h.Decode(pd); err != roce.ErrBadPrivateData {
		t.Errorf("IP version 5: %v", err)
	}
	pd[0], pd[1] = 1, 0x40
	if err := h.Decode(pd); err != roce.ErrBadPrivateData {
		t.Errorf("CMA version 1: %v", err)
	}
}

func TestIPCMHeaderAppendToNeverPanics(t *testing.T) {
	for _, h := range []roce.IPCMHeader{{}, {Src: hostA}, {Src: hostA, Dst: hostB6}, {Src: hostA6}, {Src: netip.IPv6Unspecified(), Dst: hostA}} {
		if n := len(h.AppendTo(nil)); n != roce.IPCMLen {
			t.Errorf("%+v: %d bytes", h, n)
		}
	}
}
