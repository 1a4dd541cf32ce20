package rdma

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/admit"
	"github.com/dta-go/dta/wire/roce"
)

func TestRevokedTranslatorsAreDisconnectedAndRefused(t *testing.T) {
	h := newHostile(t, func(c *ResponderConfig) { c.AllowTranslators = admit.MustParsePrefixes("127.0.0.0/8", "2001:db8::/32") })
	p, st := h.peer, h.resp.Stats()
	rw := h.rw
	four := []byte{1, 2, 3, 4}

	// Allowed: a write lands.
	psn := p.request(writeOnly(rw.VA, rw.RKey, four, true))
	p.expectAETH(roce.OpACK, roce.ACKUnlimited, psn)
	h.before[0] = snapshot(t, h.regions[0])

	// The allowlist no longer holds the peer: its connection is torn down
	// with a DREQ at once.
	h.resp.SetAllowTranslators(admit.MustParsePrefixes("192.0.2.0/24"))
	if m, _ := p.expectCM(); m.Header.AttrID != roce.AttrDREQ || m.DREQ.RemoteCommID != p.commID {
		t.Fatalf("want a DREQ for the revoked connection, got %v", m.Header.AttrID)
	}
	if st.QPsRevoked.Load() != 1 || st.QPs.Load() != 0 {
		t.Fatalf("revoked %d, QPs %d", st.QPsRevoked.Load(), st.QPs.Load())
	}

	// Its requests are dropped unanswered, before the ICRC check, and the
	// memory stays as it was.
	na, icrc := st.NotAllowed.Load(), st.BadICRC.Load()
	p.request(writeOnly(rw.VA+8, rw.RKey, four, true))
	p.request(fetchAdd(rw.VA+16, rw.RKey, 5))
	bad := p.encode(&roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteOnly, DestQP: p.rqpn, AckReq: true}, RETH: roce.RETH{VA: rw.VA, RKey: rw.RKey, DMALen: 4}, Payload: four})
	bad[len(bad)-1] ^= 1
	p.sendBytes(bad)
	p.expectNothing(100 * time.Millisecond)
	if d := st.NotAllowed.Load() - na; d != 3 {
		t.Errorf("%d packets counted not allowed, want 3", d)
	}
	if st.BadICRC.Load() != icrc {
		t.Error("a refused source's packet was ICRC-checked")
	}
	h.unchanged(t)

	// A new REQ gets a REJ "consumer defined", as rdma_reject sends.
	p.tid++
	p.req(DefaultServiceID, roce.MTU1024)
	m, _ := p.expectCM()
	if m.Header.AttrID != roce.AttrREJ || m.REJ.Reason != roce.RejectConsumerDefined || m.REJ.RemoteCommID != p.commID || m.Header.TID != p.tid {
		t.Fatalf("REQ from a refused source: %v reason %v", m.Header.AttrID, m.REJ.Reason)
	}
	if st.CMRejectNotAllowed.Load() != 1 || st.QPs.Load() != 0 {
		t.Fatalf("REJ not allowed %d, QPs %d", st.CMRejectNotAllowed.Load(), st.QPs.Load())
	}
	// Other CM messages from it are dropped without a word.
	dreq := &roce.CM{Header: roce.CMHeader(roce.AttrDREQ, 99)}
	p.cm(dreq)
	p.expectNothing(100 * time.Millisecond)

	// Allowed again (an empty list allows everyone): it connects anew.
	h.resp.SetAllowTranslators(nil)
	if h.resp.AllowTranslators() != nil {
		t.Fatal("an empty allowlist is in force as a list")
	}
	p.tid++
	p.connect(roce.MTU256)
	psn = p.request(writeOnly(rw.VA+8, rw.RKey, four, true))
	p.expectAETH(roce.OpACK, roce.ACKUnlimited, psn)
	var got [4]byte
	h.regions[0].Read(8, got[:])
	if !bytes.Equal(got[:], four) {
		t.Fatal("a write after the source was allowed again did not land")
	}
}

func TestARequesterOutsideTheAllowlistGetsAConsumerReject(t *testing.T) {
	cfg := testResponderConfig("127.0.0.1")
	cfg.AllowTranslators = admit.MustParsePrefixes("192.0.2.7")
	resp := startResponder(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q, err := Dial(ctx, testRequesterConfig(resp.LocalAddr()), testLogger(t))
	if err == nil {
		q.Close()
		t.Fatal("a requester outside the allowlist connected")
	}
	var rej *RejectError
	if !errors.As(err, &rej) || rej.Reason != roce.RejectConsumerDefined {
		t.Fatalf("Dial: %v, want a REJ consumer defined", err)
	}
	if resp.Stats().CMRejectNotAllowed.Load() != 1 {
		t.Fatalf("REJs counted: %d", resp.Stats().CMRejectNotAllowed.Load())
	}
}
