package rdma

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/dta-go/dta/rdma/sock"
	"github.com/dta-go/dta/wire/roce"
)

// TestEveryPacketOfACoalescedDatagramIsCheckedOnItsOwn sends a run of
// requests as one UDP GSO super-datagram, which the responder receives
// whole (UDP GRO), and checks that it splits it into the packets sent:
// each executed or refused on its own merits, in PSN order, as if it had
// come alone.
func TestEveryPacketOfACoalescedDatagramIsCheckedOnItsOwn(t *testing.T) {
	for _, c := range []struct {
		name     string
		spoil    func(b []byte) // applied to packet 5 of 16, after sealing
		badICRC  uint64         // drops counted
		executed uint64         // writes executed of the 16
	}{
		{"sixteen good writes all land", nil, 0, 16},
		{"a bad ICRC drops that packet alone, then the gap draws a NAK", func(b []byte) { b[len(b)-1] ^= 1 }, 1, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHostile(t, nil)
			p := newRawPeer(t, h.resp.LocalAddr())
			if !p.s.EnableGSO() {
				t.Skip("the kernel has no UDP GSO")
			}
			p.connect(roce.MTU256)
			st := h.resp.Stats()
			coalesced, bad, writes := st.Coalesced.Load(), st.BadICRC.Load(), st.Writes.Load()
			tx := sock.NewSender(p.s, 16, 0)
			first := p.psn
			for i := range 16 {
				var v [8]byte
				binary.LittleEndian.PutUint64(v[:], uint64(0xC0DE00+i))
				pkt := writeOnly(h.rw.VA+uint64(i)*8, h.rw.RKey, v[:], i == 15)
				pkt.BTH.DestQP, pkt.BTH.PKey, pkt.BTH.PSN = p.rqpn, roce.DefaultPKey, p.psn
				p.psn = (p.psn + 1) & roce.PSNMask
				b := p.encode(&pkt)
				if i == 5 && c.spoil != nil {
					c.spoil(b)
				}
				tx.Add(b, p.to, p.s.LocalAddr().Addr())
			}
			if err := tx.Flush(); err != nil || tx.Errors() != 0 || tx.Coalesced() == 0 {
				t.Fatalf("flush: %v, %d refused, %d super-datagrams", err, tx.Errors(), tx.Coalesced())
			}
			if c.badICRC == 0 {
				p.expectAETH(roce.OpACK, roce.ACKUnlimited, (first+15)&roce.PSNMask)
			} else {
				p.expectAETH(roce.OpACK, roce.NAKPSNSequenceError, (first+5)&roce.PSNMask)
			}
			deadline := time.Now().Add(10 * time.Second)
			for st.Coalesced.Load() == coalesced && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if st.Coalesced.Load() == coalesced {
				t.Skip("the kernel delivered the run segmented (no UDP GRO on loopback)")
			}
			if got := st.BadICRC.Load() - bad; got != c.badICRC {
				t.Errorf("%d bad ICRCs counted, want %d", got, c.badICRC)
			}
			if got := st.Writes.Load() - writes; got != c.executed {
				t.Errorf("%d writes executed, want %d", got, c.executed)
			}
			for i := range 16 {
				got, _ := h.regions[0].Load64(uint64(i) * 8)
				want := binary.LittleEndian.Uint64(h.before[0][i*8:])
				if uint64(i) < c.executed {
					want = uint64(0xC0DE00 + i)
				}
				if got != want {
					t.Errorf("word %d = %#x, want %#x", i, got, want)
				}
			}
		})
	}
}
