package roce_test

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/dta-go/dta/wire/roce"
)

// A real NIC's packet, as a UDP socket would hand it over: the ConnectX-4 Lx
// CNP (IPv4 ID 0x718c, DF) checks out with its ID and DF recovered, though
// the receiver's envelope says ID 0.
func TestVerifyAnyIDRecoversTheIDOfANICsPacket(t *testing.T) {
	frame := onlyFrame(t, "testdata/hw_cx4_cnp.pcap")
	var env roce.Envelope
	udp, err := env.Decode(frame[roce.EthernetLen:])
	if err != nil {
		t.Fatal(err)
	}
	recv := roce.Envelope{Src: env.Src, Dst: env.Dst, SrcPort: env.SrcPort, DstPort: env.DstPort}
	var c roce.ICRCCache
	if err := c.Verify(&recv, udp); err != roce.ErrICRC {
		t.Fatalf("Verify with ID 0: %v, want ErrICRC", err)
	}
	id, df, err := c.VerifyAnyID(&recv, udp)
	if err != nil || id != 0x718c || !df {
		t.Errorf("VerifyAnyID = %#x, DF %v, %v; want 0x718c, DF, nil", id, df, err)
	}
}

// Packets sealed with any ID and DF bit, of several lengths, are accepted
// with their ID and DF bit found; the same packets with a byte changed are
// refused (a false match has odds of about 2^-15).
func TestVerifyAnyIDFindsEveryIDAndRefusesCorruptedPackets(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	src, dst := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	var c roce.ICRCCache
	corruptAccepted, corrupted := 0, 0
	for i := range 4000 {
		n := []int{roce.BTHLen + roce.ICRCLen + 4, 64, 1000, 4124}[i%4]
		payload := make([]byte, n)
		for j := range payload {
			payload[j] = byte(rng.Uint32())
		}
		sent := roce.Envelope{Src: src, Dst: dst, SrcPort: 0xC000 + uint16(i), DstPort: roce.Port,
			ID: uint16(rng.Uint32()), NoDF: i%3 == 0}
		if err := sent.Seal(payload); err != nil {
			t.Fatal(err)
		}
		recv := roce.Envelope{Src: src, Dst: dst, SrcPort: sent.SrcPort, DstPort: roce.Port}
		id, df, err := c.VerifyAnyID(&recv, payload)
		if err != nil || id != sent.ID || df == sent.NoDF {
			t.Fatalf("packet %d (%d bytes, ID %#x, DF %v): got %#x, DF %v, %v", i, n, sent.ID, !sent.NoDF, id, df, err)
		}
		// Corrupt one byte (not the trailer, nor the BTH's byte 4, which
		// the ICRC masks): it must fail but for the rare false match.
		k := rng.IntN(n - roce.ICRCLen)
		if k == 4 {
			k = 5
		}
		payload[k] ^= byte(1 + rng.IntN(255))
		corrupted++
		if _, _, err := c.VerifyAnyID(&recv, payload); err == nil {
			corruptAccepted++
		} else if err != roce.ErrICRC {
			t.Fatalf("corrupted packet %d: %v", i, err)
		}
	}
	if corruptAccepted > 2 {
		t.Errorf("%d of %d corrupted packets accepted, want about %d×2^-15", corruptAccepted, corrupted, corrupted)
	}
	// ID 0 with DF, dta's own senders, is accepted as it is.
	payload := make([]byte, 64)
	e := roce.Envelope{Src: src, Dst: dst, SrcPort: 0xC000, DstPort: roce.Port}
	if err := e.Seal(payload); err != nil {
		t.Fatal(err)
	}
	if id, df, err := c.VerifyAnyID(&e, payload); err != nil || id != 0 || !df {
		t.Errorf("ID 0 with DF: %#x, %v, %v", id, df, err)
	}
}
