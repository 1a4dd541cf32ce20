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

// The receiver's envelope may say an ID and DF bit other than ID 0 with DF
// (a requester that remembers its peer's last ones): the answer is still the
// packet's own ID and DF bit, not one relative to the envelope's.
func TestVerifyAnyIDAnswersThePacketsIDWhateverTheEnvelopeSays(t *testing.T) {
	src, dst := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	var c roce.ICRCCache
	for i, tc := range []struct {
		sentID, recvID     uint16
		sentNoDF, recvNoDF bool
	}{
		{0x718c, 0x1234, false, true},
		{0x0001, 0xFFFF, true, false},
		{0x8000, 0x8000, true, true},
		{0, 0x00F0, false, true},
	} {
		payload := make([]byte, 64+i)
		payload[0] = byte(i)
		sent := roce.Envelope{Src: src, Dst: dst, SrcPort: 0xC000, DstPort: roce.Port, ID: tc.sentID, NoDF: tc.sentNoDF}
		if err := sent.Seal(payload); err != nil {
			t.Fatal(err)
		}
		recv := roce.Envelope{Src: src, Dst: dst, SrcPort: 0xC000, DstPort: roce.Port, ID: tc.recvID, NoDF: tc.recvNoDF}
		id, df, err := c.VerifyAnyID(&recv, payload)
		if err != nil || id != tc.sentID || df == tc.sentNoDF {
			t.Errorf("sent ID %#x DF %v, envelope ID %#x DF %v: got %#x, DF %v, %v",
				tc.sentID, !tc.sentNoDF, tc.recvID, !tc.recvNoDF, id, df, err)
		}
	}
}

// With the ID and DF bit read from the packet's IP header, a packet is
// accepted exactly when the ICRC computed with them matches: every corrupted
// packet and every other ID or DF bit is refused (odds of 2^-32, not
// VerifyAnyID's 2^-15), and the answer agrees with Envelope.VerifyICRC.
func TestVerifyIDChecksTheIDTheHeaderGives(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	src, dst := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	var c roce.ICRCCache
	recv := roce.Envelope{Src: src, Dst: dst, SrcPort: 0xC000, DstPort: roce.Port}
	for i := range 4000 {
		n := []int{roce.BTHLen + roce.ICRCLen + 4, 64, 1000, 4124}[i%4]
		payload := make([]byte, n)
		for j := range payload {
			payload[j] = byte(rng.Uint32())
		}
		sent := roce.Envelope{Src: src, Dst: dst, SrcPort: 0xC000, DstPort: roce.Port,
			ID: uint16(rng.Uint32()), NoDF: i%3 == 0}
		if i%7 == 0 {
			sent.ID, sent.NoDF = 0, false // dta's own: the cached prefix as it is
		}
		if err := sent.Seal(payload); err != nil {
			t.Fatal(err)
		}
		if err := c.VerifyID(&recv, payload, sent.ID, !sent.NoDF); err != nil {
			t.Fatalf("packet %d (%d bytes, ID %#x, DF %v): %v", i, n, sent.ID, !sent.NoDF, err)
		}
		// Another ID (one bit flipped) or the other DF bit: refused.
		if err := c.VerifyID(&recv, payload, sent.ID^1<<(i%16), !sent.NoDF); err != roce.ErrICRC {
			t.Fatalf("packet %d with another ID: %v, want ErrICRC", i, err)
		}
		if err := c.VerifyID(&recv, payload, sent.ID, sent.NoDF); err != roce.ErrICRC {
			t.Fatalf("packet %d with the other DF bit: %v, want ErrICRC", i, err)
		}
		k := rng.IntN(n - roce.ICRCLen)
		if k == 4 {
			k = 5
		}
		payload[k] ^= byte(1 + rng.IntN(255))
		got := c.VerifyID(&recv, payload, sent.ID, !sent.NoDF)
		if want := sent.VerifyICRC(payload); got != want {
			t.Fatalf("corrupted packet %d: VerifyID %v, Envelope.VerifyICRC %v", i, got, want)
		}
		if got == nil {
			t.Fatalf("corrupted packet %d accepted", i)
		}
	}
	// The NIC's packet of the capture, with its header's ID.
	frame := onlyFrame(t, "testdata/hw_cx4_cnp.pcap")
	var env roce.Envelope
	udp, err := env.Decode(frame[roce.EthernetLen:])
	if err != nil {
		t.Fatal(err)
	}
	nic := roce.Envelope{Src: env.Src, Dst: env.Dst, SrcPort: env.SrcPort, DstPort: env.DstPort}
	if err := c.VerifyID(&nic, udp, env.ID, !env.NoDF); err != nil || env.ID != 0x718c {
		t.Errorf("the NIC's packet with its ID %#x: %v", env.ID, err)
	}
	if err := c.VerifyID(&nic, udp, 0, true); err != roce.ErrICRC {
		t.Errorf("the NIC's packet with ID 0: %v, want ErrICRC", err)
	}
	// Over IPv6 there is no ID: VerifyID is Verify.
	v6 := roce.Envelope{Src: netip.MustParseAddr("fd00::1"), Dst: netip.MustParseAddr("fd00::2"), SrcPort: 0xC000, DstPort: roce.Port}
	payload := make([]byte, 64)
	if err := v6.Seal(payload); err != nil {
		t.Fatal(err)
	}
	if err := c.VerifyID(&v6, payload, 0x1234, false); err != nil {
		t.Errorf("IPv6: %v", err)
	}
}
