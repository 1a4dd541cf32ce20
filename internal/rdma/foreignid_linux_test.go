package rdma

import (
	"bytes"
	"errors"
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
func TestARequesterThatNumbersItsIPv4PacketsIsServed(t *testing.T) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_RAW)
	if err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
			t.Skipf("a raw socket needs CAP_NET_RAW: %v", err)
		}
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	h := newHostile(t, nil)
	p, st := h.peer, h.resp.Stats()
	to := &syscall.SockaddrInet4{Addr: p.to.Addr().As4()}
	send := func(id uint16, noDF bool, pkt roce.Packet, corrupt bool) uint32 {
		t.Helper()
		pkt.BTH.DestQP, pkt.BTH.PKey, pkt.BTH.PSN = p.rqpn, roce.DefaultPKey, p.psn
		env := p.out
		env.ID, env.NoDF = id, noDF
		b, err := env.AppendDatagram(nil, &pkt)
		if err != nil {
			t.Fatal(err)
		}
		if corrupt {
			b[len(b)-roce.ICRCLen-1] ^= 0x10
		} else {
			p.psn = (p.psn + 1) & roce.PSNMask
		}
		if err := syscall.Sendto(fd, b, 0, to); err != nil {
			t.Fatal(err)
		}
		return pkt.BTH.PSN
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
	p.expectNothing(100 * time.Millisecond)
	if st.BadICRC.Load() != bad+1 {
		t.Error("a corrupted packet of a numbering sender was not dropped for its ICRC")
	}
}
