package roce_test

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/dta-go/dta/wire/roce"
)

// ipOfFrame strips the Ethernet header of a captured frame.
func ipOfFrame(t *testing.T, frame []byte) []byte {
	t.Helper()
	var eth roce.Ethernet
	if err := eth.Decode(frame); err != nil {
		t.Fatal(err)
	}
	if eth.EtherType != roce.EtherTypeIPv4 && eth.EtherType != roce.EtherTypeIPv6 {
		t.Fatalf("EtherType %#x", eth.EtherType)
	}
	return frame[roce.EthernetLen:]
}

func onlyFrame(t *testing.T, path string) []byte {
	t.Helper()
	lt, recs := readPcap(t, path)
	if lt != roce.LinkTypeEthernet || len(recs) != 1 || recs[0].orig != len(recs[0].data) {
		t.Fatalf("%s: link type %d, %d frames", path, lt, len(recs))
	}
	return recs[0].data
}

func TestICRCReproducesAConnectX4LxCapture(t *testing.T) {
	ip := ipOfFrame(t, onlyFrame(t, "testdata/hw_cx4_cnp.pcap"))
	got, err := roce.ICRC(ip)
	if err != nil {
		t.Fatal(err)
	}
	var wire [4]byte
	binary.LittleEndian.PutUint32(wire[:], got)
	if wire != [4]byte{0x82, 0xfd, 0x00, 0x2a} {
		t.Errorf("ICRC bytes %x, the NIC sent 82fd002a", wire)
	}
	if err := roce.VerifyICRC(ip); err != nil {
		t.Errorf("VerifyICRC: %v", err)
	}
}

func TestICRCAcceptsTheGoodWriteAndRejectsTheBadOne(t *testing.T) {
	ok := ipOfFrame(t, onlyFrame(t, "testdata/write_only_ok.pcap"))
	if err := roce.VerifyICRC(ok); err != nil {
		t.Errorf("write_only_ok.pcap: %v", err)
	}
	bad := ipOfFrame(t, onlyFrame(t, "testdata/write_only_bad.pcap"))
	if err := roce.VerifyICRC(bad); err != roce.ErrICRC {
		t.Errorf("write_only_bad.pcap: %v, want ErrICRC", err)
	}
	// spec §9: with payload byte 3 = 02 the right trailer is 11 d0 78 67.
	got, err := roce.ICRC(bad)
	if err != nil {
		t.Fatal(err)
	}
	if got != binary.LittleEndian.Uint32([]byte{0x11, 0xd0, 0x78, 0x67}) {
		t.Errorf("ICRC of the corrupted write = %#x", got)
	}
	var env roce.Envelope
	udp, err := env.Decode(bad)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.VerifyICRC(udp); err != roce.ErrICRC {
		t.Errorf("Envelope.VerifyICRC of the bad write = %v, want ErrICRC", err)
	}
}

// scapy's test/contrib/roce.uts UC SEND Only: TOS 1, non-zero UDP checksum,
// MigReq, PadCnt 2, an opcode this package does not decode. The ICRC does not
// depend on the opcode.
func TestICRCMatchesScapysUCSendVector(t *testing.T) {
	ip := hx(t, `45010040 04784000 4011b4d5 c0a80007 c0a80007 | c000 12b7 002c aca2 |
		2460ffff 000000d3 00cf1710 | 4630818be28935d90e9a95505401be885e50 0000 | 78f353f3`)
	if err := roce.VerifyICRC(ip); err != nil {
		t.Errorf("VerifyICRC: %v", err)
	}
}

func TestEnvelopeICRCEqualsICRCOfTheDatagram(t *testing.T) {
	frames := [][]byte{ipOfFrame(t, onlyFrame(t, "testdata/hw_cx4_cnp.pcap"))}
	for _, g := range goldens() {
		frames = append(frames, hx(t, g.hex))
	}
	for _, ip := range frames {
		var env roce.Envelope
		udp, err := env.Decode(ip)
		if err != nil {
			t.Fatal(err)
		}
		a, err1 := roce.ICRC(ip)
		b, err2 := env.ICRC(udp)
		if err1 != nil || err2 != nil || a != b {
			t.Errorf("ICRC %#x (%v) vs Envelope.ICRC %#x (%v)", a, err1, b, err2)
		}
	}
}

func TestICRCIsPlainCRC32OverTheMaskedPseudoPacket(t *testing.T) {
	// spec §9 step by step with crc32.ChecksumIEEE over an explicit copy.
	for _, g := range goldens() {
		ip := hx(t, g.hex)
		m := append([]byte(nil), ip...)
		ipLen := 20
		if m[0]>>4 == 4 {
			m[1], m[8], m[10], m[11] = 0xFF, 0xFF, 0xFF, 0xFF
		} else {
			ipLen = 40
			m[0] |= 0x0F
			m[1], m[2], m[3], m[7] = 0xFF, 0xFF, 0xFF, 0xFF
		}
		m[ipLen+6], m[ipLen+7], m[ipLen+12] = 0xFF, 0xFF, 0xFF
		want := crc32.ChecksumIEEE(append([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, m[:len(m)-4]...))
		if got, err := roce.ICRC(ip); err != nil || got != want {
			t.Errorf("%s: ICRC %#x (%v), want %#x", g.name, got, err, want)
		}
	}
}

func TestICRCIgnoresBytesAfterTheDatagram(t *testing.T) {
	ip := hx(t, goldens()[2].hex) // a 48-byte ACK: an Ethernet frame would pad it
	padded := append(append([]byte(nil), ip...), 0, 0, 0, 0, 0, 0)
	if err := roce.VerifyICRC(padded); err != nil {
		t.Errorf("VerifyICRC with trailing padding: %v", err)
	}
	var env roce.Envelope
	udp, err := env.Decode(padded)
	if err != nil || len(udp) != len(ip)-28 || cap(udp) != len(udp) {
		t.Errorf("Envelope.Decode with trailing padding: %d bytes, %v", len(udp), err)
	}
}
