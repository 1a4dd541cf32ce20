package rdma

import (
	"encoding/binary"
	"net/netip"
	"testing"

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
	resp.insertQP(q)
	l := resp.loops[0]
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
		l.mu.Lock()
		defer l.mu.Unlock()
		resp.mu.Lock()
		if resp.qps[0x42] == nil { // a DREQ or a new REQ may have dropped it
			*q = qp{qpn: 0x42, remoteQPN: 0x99, peer: peer, state: qpEstablished, pmtu: 256, out: q.out, atomics: q.atomics}
			resp.insertQP(q)
			resp.stats.QPs.Add(1)
		}
		resp.mu.Unlock()
		if inSeq && len(b) >= roce.BTHLen {
			q.ePSN = binary.BigEndian.Uint32(b[8:]) & roce.PSNMask
		}
		l.handle(b, peer, local.Addr())
		l.flushACKs()
		l.tx.Discard() // built, not sent
	})
}
