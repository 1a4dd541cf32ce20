package roce_test

import (
	"io"
	"testing"
	"time"

	"github.com/dta-go/dta/wire/roce"
)

func noAllocs(t *testing.T, name string, f func()) {
	t.Helper()
	if n := testing.AllocsPerRun(200, f); n != 0 {
		t.Errorf("%s allocated %v times per run", name, n)
	}
}

func TestDecodingDoesNotAllocate(t *testing.T) {
	for _, g := range goldens() {
		ip := hx(t, g.hex)
		var env roce.Envelope
		var p roce.Packet
		noAllocs(t, g.name+": Envelope.Decode+Packet.Decode+VerifyICRC", func() {
			udp, err := env.Decode(ip)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Decode(udp); err != nil {
				t.Fatal(err)
			}
			if err := roce.VerifyICRC(ip); err != nil {
				t.Fatal(err)
			}
			if err := env.VerifyICRC(udp); err != nil {
				t.Fatal(err)
			}
		})
	}
	bad := hx(t, "0a3fffff 00000011 80000100 00000000")
	var p roce.Packet
	noAllocs(t, "rejecting a packet", func() {
		if p.Decode(bad) == nil {
			t.Fatal("accepted")
		}
		if p.Decode(bad[:3]) == nil {
			t.Fatal("accepted")
		}
	})
	corrupt := hx(t, goldens()[0].hex)
	corrupt[50] ^= 1
	noAllocs(t, "rejecting an ICRC", func() {
		if roce.VerifyICRC(corrupt) != roce.ErrICRC {
			t.Fatal("accepted")
		}
	})
	_, recs := readPcap(t, "testdata/hw_cx4_cnp.pcap")
	frame := recs[0].data
	var eth roce.Ethernet
	noAllocs(t, "Ethernet.Decode+ICRC of the hardware CNP", func() {
		if err := eth.Decode(frame); err != nil {
			t.Fatal(err)
		}
		if _, err := roce.ICRC(frame[roce.EthernetLen:]); err != nil {
			t.Fatal(err)
		}
	})
	mad := hx(t, goldenREQ)
	var m roce.CM
	var h roce.IPCMHeader
	noAllocs(t, "CM.Decode+IPCMHeader.Decode", func() {
		if err := m.Decode(mad); err != nil {
			t.Fatal(err)
		}
		if err := h.Decode(m.REQ.PrivateData[:]); err != nil {
			t.Fatal(err)
		}
	})
}

func TestEncodingDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 2048)
	for _, g := range goldens() {
		p := g.pkt
		env := g.env
		noAllocs(t, g.name+": AppendDatagram", func() {
			var err error
			if buf, err = env.AppendDatagram(buf[:0], &p); err != nil {
				t.Fatal(err)
			}
		})
		noAllocs(t, g.name+": AppendFrame", func() {
			var err error
			if buf, err = env.AppendFrame(buf[:0], [6]byte{2}, [6]byte{4}, &p); err != nil {
				t.Fatal(err)
			}
		})
		noAllocs(t, g.name+": Packet.AppendTo+Seal", func() {
			buf = p.AppendTo(buf[:0])
			if err := env.Seal(buf); err != nil {
				t.Fatal(err)
			}
		})
	}
	var cm roce.CM
	cm.REQ = goldenREQFields()
	cm.REP = goldenREPFields()
	h := roce.IPCMHeader{SrcPort: 1, Src: hostA6, Dst: hostB6}
	for _, attr := range []roce.AttrID{roce.AttrREQ, roce.AttrMRA, roce.AttrREJ, roce.AttrREP, roce.AttrRTU, roce.AttrDREQ, roce.AttrDREP, roce.AttrLAP} {
		cm.Header = roce.CMHeader(attr, 1)
		noAllocs(t, attr.String()+": CM.AppendTo+CMPacket+AppendDatagram", func() {
			mad := cm.AppendTo(buf[:0])
			h.AppendTo(mad[:0])
			p := roce.CMPacket(1, mad)
			if _, err := envAB.AppendDatagram(buf[len(mad):len(mad)], &p); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestPcapWriterDoesNotAllocatePerFrame(t *testing.T) {
	w, err := roce.NewPcapWriter(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, 100)
	ts := time.Unix(1700000000, 123456789)
	noAllocs(t, "WriteFrame", func() {
		if err := w.WriteFrame(ts, frame); err != nil {
			t.Fatal(err)
		}
	})
}
