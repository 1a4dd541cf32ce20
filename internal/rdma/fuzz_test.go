package rdma

import (
	"context"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/wire/roce"
)

// seedPackets are valid packets of every kind the endpoints see.
func seedPackets(va uint64, rkey uint32) [][]byte {
	var out [][]byte
	add := func(p roce.Packet) { out = append(out, p.AppendTo(nil)) }
	add(writeOnly(va, rkey, []byte("12345678"), true))
	add(fetchAdd(va+8, rkey, 3))
	add(roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteFirst}, RETH: roce.RETH{VA: va, RKey: rkey, DMALen: 300}, Payload: make([]byte, 256)})
	add(roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteMiddle}, Payload: make([]byte, 256)})
	add(roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteLastImm, AckReq: true}, Payload: make([]byte, 44), ImmDt: roce.ImmDt{Data: 1}})
	add(roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteOnlyImm}, RETH: roce.RETH{VA: va, RKey: rkey, DMALen: 3}, Payload: []byte{1, 2, 3}})
	add(roce.Packet{BTH: roce.BTH{Opcode: roce.OpACK}, AETH: roce.AETH{Syndrome: roce.NAKPSNSequenceError}})
	add(roce.Packet{BTH: roce.BTH{Opcode: roce.OpAtomicACK}, AETH: roce.AETH{Syndrome: roce.ACKUnlimited}})
	add(roce.Packet{BTH: roce.BTH{Opcode: roce.OpSendOnly, AckReq: true}, Payload: []byte("adv")})
	for _, attr := range []roce.AttrID{roce.AttrREQ, roce.AttrREP, roce.AttrRTU, roce.AttrREJ, roce.AttrDREQ, roce.AttrDREP} {
		m := roce.CM{Header: roce.CMHeader(attr, 5)}
		m.REQ.ServiceID, m.REQ.PathMTU, m.REQ.LocalQPN = DefaultServiceID, roce.MTU256, 77
		add(roce.CMPacket(1, m.AppendTo(nil)))
	}
	return out
}

// FuzzResponderHandle feeds arbitrary packets — optionally with a valid
// ICRC, aimed at the connected QP and at its expected PSN — to the
// responder's handler: it must not panic, and nothing outside the MR can
// be written (the region would refuse it anyway; the MR is a window of it).
func FuzzResponderHandle(f *testing.F) {
	reg := newRegion(f, 8192)
	resp, err := NewResponder(testResponderConfig("127.0.0.1"), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { resp.Close() })
	m, _ := resp.RegisterMR("m", reg, AccessRemoteWrite|AccessRemoteAtomic)
	local := resp.LocalAddr()
	peer := netip.MustParseAddrPort("127.0.0.1:9")
	q := &qp{qpn: 0x42, remoteQPN: 0x99, peer: peer, state: qpEstablished, pmtu: 256,
		out:     roce.Envelope{Src: local.Addr(), Dst: peer.Addr(), SrcPort: local.Port(), DstPort: peer.Port()},
		atomics: make([]atomicResult, 4)}
	resp.qps[q.qpn] = q
	resp.byPeer[peer] = q
	in := roce.Envelope{Src: peer.Addr(), Dst: local.Addr(), SrcPort: peer.Port(), DstPort: local.Port()}
	for _, p := range seedPackets(m.VA, m.RKey) {
		f.Add(p, true, true, true)
	}
	f.Add([]byte{1, 2, 3}, false, false, false)
	f.Fuzz(func(t *testing.T, b []byte, seal, toQP, inSeq bool) {
		b = append([]byte(nil), b...)
		if len(b) >= roce.BTHLen+roce.ICRCLen {
			if toQP && (b[5] != 0 || b[6] != 0 || b[7] != roce.GSIQP) { // CM MADs stay on QP1
				b[5], b[6], b[7] = 0, 0, 0x42
			}
			if seal {
				in.Seal(b)
			}
		}
		resp.mu.Lock()
		defer resp.mu.Unlock()
		if resp.qps[0x42] == nil { // a DREQ or a new REQ may have dropped it
			*q = qp{qpn: 0x42, remoteQPN: 0x99, peer: peer, state: qpEstablished, pmtu: 256, out: q.out, atomics: q.atomics}
			resp.qps[q.qpn] = q
			resp.byPeer[peer] = q
			resp.stats.QPs.Add(1)
		}
		if inSeq && len(b) >= roce.BTHLen {
			q.ePSN = binary.BigEndian.Uint32(b[8:]) & roce.PSNMask
		}
		resp.handle(b, peer, local.Addr())
		resp.flushACKs()
		resp.tx.n = 0 // built, not sent
	})
}

// FuzzRequesterHandle feeds arbitrary responses to a connected requester
// with packets in flight: it must not panic, and its window must stay
// consistent.
func FuzzRequesterHandle(f *testing.F) {
	reg := newRegion(f, 8192)
	resp := startResponder(f, testResponderConfig("127.0.0.1"))
	m, _ := resp.RegisterMR("m", reg, AccessRemoteWrite|AccessRemoteAtomic)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := testRequesterConfig(resp.LocalAddr())
	cfg.Timeout = time.Hour // the fuzzer's ACKs only
	q, err := Dial(ctx, cfg, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { q.Close() })
	q.SetTargets([]Target{targetOf(m)})
	in := roce.Envelope{Src: resp.LocalAddr().Addr(), Dst: q.LocalAddr().Addr(), SrcPort: resp.LocalAddr().Port(), DstPort: q.LocalAddr().Port()}
	for _, p := range seedPackets(m.VA, m.RKey) {
		f.Add(p, true, true)
	}
	f.Fuzz(func(t *testing.T, b []byte, seal, toQP bool) {
		b = append([]byte(nil), b...)
		q.mu.Lock()
		qpn, una, n := q.qpn, q.win.una, q.win.n
		q.mu.Unlock()
		if len(b) >= roce.BTHLen+roce.ICRCLen {
			if toQP {
				b[5], b[6], b[7] = byte(qpn>>16), byte(qpn>>8), byte(qpn)
				if b[0] == byte(roce.OpACK) || b[0] == byte(roce.OpAtomicACK) {
					psn := una + uint32(b[10])%uint32(n+2) - 1 // around the window
					b[9], b[10], b[11] = byte(psn>>16), byte(psn>>8), byte(psn)
				}
			}
			if seal {
				in.Seal(b)
			}
		}
		if n < 8 && q.Connected() {
			q.Apply([]memop.Op{{Kind: memop.Write, Data: []byte{1}}, {Kind: memop.FetchAdd, Offset: 8, Delta: 1}})
		}
		q.mu.Lock()
		q.handle(b, resp.LocalAddr())
		q.flushTx()
		w := &q.win
		if w.n < 0 || w.n > len(w.slots) || q.atomicsOut < 0 || q.atomicsOut > w.n {
			t.Fatalf("window n=%d atomics=%d", w.n, q.atomicsOut)
		}
		q.mu.Unlock()
	})
}
