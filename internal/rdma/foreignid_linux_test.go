package rdma

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/dta-go/dta/wire/roce"
)

// A requester that numbers its IPv4 packets, as RDMA NICs and rxe do (here
// ID 0x718c with DF, and ID 0x1234 without DF, sent through a raw socket with
// the IP header written out), is served: the ICRC is checked with the ID and
// DF bit the trailer implies, the WRITEs land and are ACKed, and they are
// counted as ForeignIPID. The same packet with a byte changed is dropped.
// The responder's capture shows the packets with their own IDs and DF bits
// (a capture rebuilds each packet's headers, and its ICRC with them: with
// ID 0 it would show another packet than the one that came).
func TestARequesterThatNumbersItsIPv4PacketsIsServed(t *testing.T) {
	fd := rawIPSocket(t)
	pcap := filepath.Join(t.TempDir(), "responder.pcap")
	f, err := os.Create(pcap)
	if err != nil {
		t.Fatal(err)
	}
	h := newHostile(t, func(c *ResponderConfig) { c.Capture = f })
	p, st := h.peer, h.resp.Stats()
	send := func(id uint16, noDF bool, pkt roce.Packet, corrupt bool) uint32 {
		t.Helper()
		return p.sendNumbered(fd, id, noDF, pkt, func(b []byte) {
			if corrupt {
				b[len(b)-roce.ICRCLen-1] ^= 0x10
			}
		})
	}
	before := st.ForeignIPID.Load()
	data := []byte{0xA1, 0xA2, 0xA3, 0xA4}
	psn := send(0x718c, false, writeOnly(h.rw.VA+16, h.rw.RKey, data, true), false)
	p.expectAETH(roce.OpACK, roce.ACKUnlimited, psn)
	psn = send(0x1234, true, writeOnly(h.rw.VA+20, h.rw.RKey, data, true), false)
	p.expectAETH(roce.OpACK, roce.ACKUnlimited, psn)
	if got := snapshot(t, h.regions[0])[16:24]; !bytes.Equal(got, append(data, data...)) {
		t.Errorf("memory % x, want the two writes", got)
	}
	if d := st.ForeignIPID.Load() - before; d != 2 {
		t.Errorf("ForeignIPID moved by %d, want 2", d)
	}
	bad := st.BadICRC.Load()
	send(0x4321, false, writeOnly(h.rw.VA+32, h.rw.RKey, data, true), true)
	p.psn = (p.psn - 1) & roce.PSNMask // the dropped packet took no PSN
	p.expectNothing(100 * time.Millisecond)
	if st.BadICRC.Load() != bad+1 {
		t.Error("a corrupted packet of a numbering sender was not dropped for its ICRC")
	}
	h.resp.Close()
	f.Close()
	var ids []uint16
	for i, frame := range pcapFrames(t, pcap) {
		ip := frame[14:]
		if err := roce.VerifyICRC(ip); err != nil {
			t.Errorf("captured frame %d (IPv4 ID %#x): %v", i, binary.BigEndian.Uint16(ip[4:]), err)
		}
		if id := binary.BigEndian.Uint16(ip[4:]); id != 0 {
			ids = append(ids, id)
		}
	}
	if !slices.Equal(ids, []uint16{0x718c, 0x1234}) {
		t.Errorf("captured IPv4 IDs %#x, want the two numbered WRITEs' 0x718c, 0x1234", ids)
	}
}

// pcapFrames returns the frames of the little-endian, microsecond pcap file
// at path (what roce.PcapWriter writes).
func pcapFrames(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 24 || binary.LittleEndian.Uint32(b) != 0xa1b2c3d4 {
		t.Fatalf("%s: not a little-endian pcap file", path)
	}
	var frames [][]byte
	for b = b[24:]; len(b) > 0; {
		if len(b) < 16 {
			t.Fatalf("%s: a record header cut short", path)
		}
		n := int(binary.LittleEndian.Uint32(b[8:]))
		if len(b) < 16+n {
			t.Fatalf("%s: a record cut short", path)
		}
		frames = append(frames, b[16:16+n])
		b = b[16+n:]
	}
	return frames
}

// rawIPSocket opens a raw socket that sends IPv4 packets with the header
// written out (IPPROTO_RAW implies IP_HDRINCL; the kernel fills in the
// header checksum), or skips the test without CAP_NET_RAW.
func rawIPSocket(t *testing.T) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_RAW)
	if err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
			t.Skipf("a raw socket needs CAP_NET_RAW: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	return fd
}

// sendNumbered sends pkt, with the peer's next PSN, as an IPv4 packet with
// ID id and DF unless noDF, through the raw socket fd, after edit changes
// the datagram's bytes (IP header first) if it is not nil. It returns the
// PSN and moves the next one on.
func (p *rawPeer) sendNumbered(fd int, id uint16, noDF bool, pkt roce.Packet, edit func(b []byte)) uint32 {
	p.t.Helper()
	pkt.BTH.DestQP, pkt.BTH.PKey, pkt.BTH.PSN = p.rqpn, roce.DefaultPKey, p.psn
	env := p.out
	env.ID, env.NoDF = id, noDF
	b, err := env.AppendDatagram(nil, &pkt)
	if err != nil {
		p.t.Fatal(err)
	}
	if edit != nil {
		edit(b)
	}
	p.psn = (p.psn + 1) & roce.PSNMask
	if err := syscall.Sendto(fd, b, 0, &syscall.SockaddrInet4{Addr: p.to.Addr().As4()}); err != nil {
		p.t.Fatal(err)
	}
	return pkt.BTH.PSN
}
