package roce_test

import (
	"testing"

	"github.com/dta-go/dta/wire/roce"
)

func BenchmarkAppendDatagramWrite64(b *testing.B) {
	p := roce.Packet{
		BTH:     roce.BTH{Opcode: roce.OpWriteOnly, PKey: roce.DefaultPKey, DestQP: 0x22, AckReq: true},
		RETH:    roce.RETH{VA: 0x7f0000001000, RKey: 1, DMALen: 64},
		Payload: make([]byte, 64),
	}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	b.SetBytes(int64(p.Len()))
	for b.Loop() {
		p.BTH.PSN++
		buf, _ = envAB.AppendDatagram(buf[:0], &p)
	}
}

func BenchmarkDecodeAndVerifyWrite64(b *testing.B) {
	p := roce.Packet{
		BTH:     roce.BTH{Opcode: roce.OpWriteOnly, PKey: roce.DefaultPKey, DestQP: 0x22, AckReq: true},
		RETH:    roce.RETH{VA: 0x7f0000001000, RKey: 1, DMALen: 64},
		Payload: make([]byte, 64),
	}
	ip, err := envAB.AppendDatagram(nil, &p)
	if err != nil {
		b.Fatal(err)
	}
	udp := ip[roce.IPv4HeaderLen+roce.UDPHeaderLen:]
	var q roce.Packet
	b.ReportAllocs()
	b.SetBytes(int64(len(udp)))
	for b.Loop() {
		if err := envAB.VerifyICRC(udp); err != nil {
			b.Fatal(err)
		}
		if err := q.Decode(udp); err != nil {
			b.Fatal(err)
		}
	}
}
