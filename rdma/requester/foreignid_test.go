package requester_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/dta-go/dta/internal/rdma"
	"github.com/dta-go/dta/wire/roce"
)

// A collector whose RDMA NIC numbers its IPv4 packets answers with ACKs
// whose ICRC covers an ID other than 0 (here 0x718c, without DF): the
// requester takes them, counts them as ForeignIPID, and its capture shows
// them with that ID; the same ACK with a byte changed is dropped for its
// ICRC.
func TestACollectorThatNumbersItsIPv4PacketsIsHeard(t *testing.T) {
	resp, _, _ := startResponder(t, 4096, rdma.AccessRemoteWrite)
	pcap := filepath.Join(t.TempDir(), "requester.pcap")
	f, err := os.Create(pcap)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(resp.LocalAddr())
	cfg.Capture = f
	q := dial(t, cfg)
	qpn, una, _ := q.WindowForTest()
	from := resp.LocalAddr()
	nic := roce.Envelope{Src: from.Addr(), Dst: q.LocalAddr().Addr(), SrcPort: from.Port(), DstPort: q.LocalAddr().Port(),
		ID: 0x718c, NoDF: true}
	ack := (&roce.Packet{BTH: roce.BTH{Opcode: roce.OpACK, PKey: roce.DefaultPKey, DestQP: qpn, PSN: (una - 1) & roce.PSNMask},
		AETH: roce.AETH{Syndrome: roce.ACKUnlimited}}).AppendTo(nil)
	if err := nic.Seal(ack); err != nil {
		t.Fatal(err)
	}
	st := q.Stats()
	foreign, bad := st.ForeignIPID.Load(), st.BadICRC.Load()
	q.HandleForTest(ack, from)
	if st.ForeignIPID.Load() != foreign+1 || st.BadICRC.Load() != bad {
		t.Errorf("the NIC's ACK: ForeignIPID +%d, BadICRC +%d; want +1, +0",
			st.ForeignIPID.Load()-foreign, st.BadICRC.Load()-bad)
	}
	corrupt := append([]byte(nil), ack...)
	corrupt[9] ^= 0x40 // the PSN
	q.HandleForTest(corrupt, from)
	if st.BadICRC.Load() != bad+1 {
		t.Errorf("a corrupted ACK of the NIC: BadICRC +%d, want +1", st.BadICRC.Load()-bad)
	}
	q.Close()
	f.Close()
	b, err := os.ReadFile(pcap)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for b = b[24:]; len(b) >= 16; {
		n := int(binary.LittleEndian.Uint32(b[8:]))
		frame := b[16 : 16+n]
		b = b[16+n:]
		ip := frame[14:]
		if binary.BigEndian.Uint16(ip[4:]) == 0x718c && ip[6]&0x40 == 0 {
			found = true
			if err := roce.VerifyICRC(ip); err != nil {
				t.Errorf("the captured ACK: %v", err)
			}
		}
	}
	if !found {
		t.Error("the capture has no packet with the NIC's ID 0x718c and DF clear")
	}
}
