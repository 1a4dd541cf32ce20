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

// BenchmarkICRCWrite8 compares the ICRC of a Key-Write's packet (WRITE Only,
// RETH, 8 bytes) computed whole by Envelope.ICRC with ICRCCache's, which
// feeds only the bytes from the PSN on once it has seen the connection.
func BenchmarkICRCWrite8(b *testing.B) {
	p := roce.Packet{
		BTH:     roce.BTH{Opcode: roce.OpWriteOnly, PKey: roce.DefaultPKey, DestQP: 0x22, AckReq: true},
		RETH:    roce.RETH{VA: 0x7f0000001000, RKey: 1, DMALen: 8},
		Payload: make([]byte, 8),
	}
	ip, err := envAB.AppendDatagram(nil, &p)
	if err != nil {
		b.Fatal(err)
	}
	udp := ip[roce.IPv4HeaderLen+roce.UDPHeaderLen:]
	b.Run("envelope", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			udp[11]++
			if _, err := envAB.ICRC(udp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cache", func(b *testing.B) {
		var c roce.ICRCCache
		b.ReportAllocs()
		for b.Loop() {
			udp[11]++
			if _, err := c.ICRC(&envAB, udp); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAtomicACKBuildAndSeal builds and seals an ATOMIC ACK as a
// responder does for every FETCH_ADD, its ICRC from the connection's cached
// prefix.
func BenchmarkAtomicACKBuildAndSeal(b *testing.B) {
	buf := make([]byte, 0, 128)
	var c roce.ICRCCache
	var psn uint32
	b.ReportAllocs()
	for b.Loop() {
		psn++
		pkt := roce.Packet{
			BTH:          roce.BTH{Opcode: roce.OpAtomicACK, PKey: roce.DefaultPKey, DestQP: 0x22, PSN: psn},
			AETH:         roce.AETH{Syndrome: roce.ACKUnlimited, MSN: psn},
			AtomicAckETH: roce.AtomicAckETH{OrigData: uint64(psn)},
		}
		if err := c.Seal(&envAB, pkt.AppendTo(buf[:0])); err != nil {
			b.Fatal(err)
		}
	}
}
