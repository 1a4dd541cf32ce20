package roce_test

import (
	"bytes"
	"testing"

	"github.com/dta-go/dta/wire/roce"
)

// wellFormed reports whether a decoded packet's bytes are exactly what
// AppendTo writes: reserved bits zero, PadCnt equal to PadCount, zero pad
// and reserved bytes.
func wellFormed(b []byte, p *roce.Packet) bool {
	if b[4]&0x3F != 0 || b[8]&0x7F != 0 || int(p.BTH.PadCnt) != roce.PadCount(len(p.Payload)) {
		return false
	}
	info, _ := p.BTH.Opcode.Info()
	if info.Headers&roce.HdrDETH != 0 && b[roce.BTHLen+4] != 0 {
		return false
	}
	if info.Headers&roce.HdrCNPReserved != 0 && !allZero(b[roce.BTHLen:info.HeaderLen]) {
		return false
	}
	end := len(b) - roce.ICRCLen
	return allZero(b[end-int(p.BTH.PadCnt) : end])
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func FuzzDecodePacket(f *testing.F) {
	for _, g := range goldens() {
		ip := hx(f, g.hex)
		f.Add(ip[len(ip)-g.pkt.Len():])
	}
	_, recs := readPcap(f, "testdata/hw_cx4_cnp.pcap")
	f.Add(recs[0].data[roce.EthernetLen+roce.IPv4HeaderLen+roce.UDPHeaderLen:])
	cm := roce.CMPacket(7, hx(f, goldenREQ))
	f.Add(cm.AppendTo(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p roce.Packet
		if err := p.Decode(b); err != nil {
			return
		}
		if err := p.Check(); err != nil {
			t.Fatalf("decoded packet fails Check: %v", err)
		}
		enc := p.AppendTo(nil)
		if len(enc) != p.Len() {
			t.Fatalf("AppendTo wrote %d bytes, Len says %d", len(enc), p.Len())
		}
		if wellFormed(b, &p) && !bytes.Equal(enc, b) {
			t.Fatalf("re-encoding a well-formed packet changed it\n  in %x\n out %x", b, enc)
		}
		var q roce.Packet
		if err := q.Decode(enc); err != nil {
			t.Fatalf("re-encoded packet does not decode: %v", err)
		}
		p.BTH.PadCnt = uint8(roce.PadCount(len(p.Payload)))
		if !samePacket(p, q) {
			t.Fatalf("round trip\n got %+v\nwant %+v", q, p)
		}
	})
}

func FuzzDecodeDatagram(f *testing.F) {
	for _, g := range goldens() {
		f.Add(hx(f, g.hex))
	}
	_, recs := readPcap(f, "testdata/hw_cx4_cnp.pcap")
	f.Add(recs[0].data[roce.EthernetLen:])
	f.Fuzz(func(t *testing.T, ip []byte) {
		crc, err := roce.ICRC(ip)
		verr := roce.VerifyICRC(ip)
		var env roce.Envelope
		udp, derr := env.Decode(ip)
		if (err == nil) != (derr == nil) || (err == nil) != (verr == nil || verr == roce.ErrICRC) {
			t.Fatalf("ICRC %v, VerifyICRC %v and Envelope.Decode %v disagree", err, verr, derr)
		}
		if derr != nil {
			return
		}
		crc2, err := env.ICRC(udp)
		if err != nil || crc2 != crc {
			t.Fatalf("Envelope.ICRC = %#x, %v; ICRC = %#x", crc2, err, crc)
		}
		var p roce.Packet
		if p.Decode(udp) != nil || verr != nil {
			return
		}
		// A valid packet rebuilt from its decoded envelope keeps its ICRC.
		out, err := env.AppendDatagram(nil, &p)
		if err != nil {
			t.Fatalf("AppendDatagram of a decoded datagram: %v", err)
		}
		if err := roce.VerifyICRC(out); err != nil {
			t.Fatalf("rebuilt datagram: %v", err)
		}
		if wellFormed(udp, &p) && p.ICRC != crc {
			t.Fatalf("rebuilt ICRC %#x, original %#x", p.ICRC, crc)
		}
	})
}

func FuzzCMDecode(f *testing.F) {
	f.Add(hx(f, goldenREQ))
	f.Add(hx(f, goldenREP))
	for _, attr := range []roce.AttrID{roce.AttrMRA, roce.AttrREJ, roce.AttrRTU, roce.AttrDREQ, roce.AttrDREP} {
		m := roce.CM{Header: roce.CMHeader(attr, 1)}
		f.Add(m.AppendTo(nil))
	}
	f.Fuzz(func(t *testing.T, mad []byte) {
		var m roce.CM
		if err := m.Decode(mad); err != nil {
			return
		}
		enc := m.AppendTo(nil)
		if len(enc) != roce.MADLen {
			t.Fatalf("AppendTo wrote %d bytes", len(enc))
		}
		var m2 roce.CM
		if err := m2.Decode(enc); err != nil {
			t.Fatalf("re-encoded MAD does not decode: %v", err)
		}
		if enc2 := m2.AppendTo(nil); !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable\n first %x\nsecond %x", enc, enc2)
		}
		if m.Header.AttrID == roce.AttrREQ {
			var h roce.IPCMHeader
			if h.Decode(m.REQ.PrivateData[:]) == nil {
				var h2 roce.IPCMHeader
				if err := h2.Decode(h.AppendTo(nil)); err != nil || h2 != h {
					t.Fatalf("IP-CM header %+v -> %+v, %v", h, h2, err)
				}
			}
		}
	})
}
