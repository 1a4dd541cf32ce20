package rdma

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/wire/roce"
)

// hostileSetup is a responder with three MRs over patterned regions and a
// raw peer connected to it.
type hostileSetup struct {
	resp         *Responder
	peer         *rawPeer
	rw, wo, ao   MR // write+atomic, write-only, atomic-only
	regions      [3]*region.Region
	before       [3][]byte
	pmtu         int
	immediates   []Immediate
	immediatesMu sync.Mutex
}

func newHostile(t *testing.T, mutate func(*ResponderConfig)) *hostileSetup {
	t.Helper()
	cfg := testResponderConfig("127.0.0.1")
	cfg.MaxQPs = 4
	if mutate != nil {
		mutate(&cfg)
	}
	h := &hostileSetup{pmtu: 256}
	// Regions first: cleanups run last-in first-out, so the responder
	// stops before its regions are unmapped.
	for i := range h.regions {
		h.regions[i] = newRegion(t, 4096)
	}
	h.resp = startResponder(t, cfg)
	regs := [3]MR{}
	for i, acc := range []Access{AccessRemoteWrite | AccessRemoteAtomic, AccessRemoteWrite, AccessRemoteAtomic} {
		reg := h.regions[i]
		// A pattern, so that any stray write shows.
		pat := make([]byte, reg.Size())
		for j := range pat {
			pat[j] = byte(j*7 + i)
		}
		reg.Write(0, pat)
		m, err := h.resp.RegisterMR([]string{"rw", "wo", "ao"}[i], reg, acc)
		if err != nil {
			t.Fatal(err)
		}
		regs[i] = m
		h.before[i] = snapshot(t, reg)
	}
	h.rw, h.wo, h.ao = regs[0], regs[1], regs[2]
	h.resp.OnImmediate(func(im Immediate) {
		h.immediatesMu.Lock()
		h.immediates = append(h.immediates, im)
		h.immediatesMu.Unlock()
	})
	h.resp.SetAdvertisement([]byte("adv"))
	h.peer = newRawPeer(t, h.resp.LocalAddr())
	h.peer.connect(roce.MTU256)
	return h
}

func (h *hostileSetup) unchanged(t *testing.T) {
	t.Helper()
	for i, r := range h.regions {
		if !bytes.Equal(snapshot(t, r), h.before[i]) {
			t.Errorf("region %d changed", i)
		}
	}
}

func TestHostileRequestsChangeNothing(t *testing.T) {
	h := newHostile(t, nil)
	p, st := h.peer, h.resp.Stats()
	rw, wo, ao := h.rw, h.wo, h.ao
	four := []byte{1, 2, 3, 4}
	nak := func(pkt roce.Packet, syn roce.Syndrome, counter *uint64Getter, what string) {
		t.Helper()
		before := counter.get()
		psn := p.request(pkt)
		p.expectAETH(roce.OpACK, syn, psn)
		if counter.get() != before+1 {
			t.Errorf("%s: counter %d -> %d", what, before, counter.get())
		}
	}
	rkey, bounds, rights := getter(&st.RejectRKey), getter(&st.RejectBounds), getter(&st.RejectRights)
	mis, length, opcode := getter(&st.RejectMisaligned), getter(&st.RejectLength), getter(&st.RejectOpcode)

	nak(writeOnly(rw.VA, rw.RKey^0x5a5a, four, true), roce.NAKRemoteAccessError, rkey, "wrong rkey")
	nak(writeOnly(rw.VA, 0, four, true), roce.NAKRemoteAccessError, rkey, "rkey 0")
	nak(writeOnly(rw.VA+rw.Length, rw.RKey, four, true), roce.NAKRemoteAccessError, bounds, "VA past the end")
	nak(writeOnly(rw.VA+rw.Length-2, rw.RKey, four, true), roce.NAKRemoteAccessError, bounds, "VA+len crossing the end")
	nak(writeOnly(rw.VA-4, rw.RKey, four, true), roce.NAKRemoteAccessError, bounds, "VA below the MR")
	nak(writeOnly(^uint64(0)-1, rw.RKey, four, true), roce.NAKRemoteAccessError, bounds, "VA+len overflowing 64 bits")
	nak(writeOnly(ao.VA, ao.RKey, four, true), roce.NAKRemoteAccessError, rights, "write to an atomic-only MR")
	nak(fetchAdd(wo.VA, wo.RKey, 1), roce.NAKRemoteAccessError, rights, "atomic on a write-only MR")
	nak(fetchAdd(rw.VA+rw.Length, rw.RKey, 1), roce.NAKRemoteAccessError, bounds, "atomic past the end")
	nak(fetchAdd(rw.VA+4, rw.RKey, 1), roce.NAKInvalidRequest, mis, "misaligned atomic")
	nak(fetchAdd(rw.VA+rw.Length-4, rw.RKey, 1), roce.NAKRemoteAccessError, bounds, "atomic crossing the end")

	big := make([]byte, h.pmtu+4)
	nak(writeOnly(rw.VA, rw.RKey, big, true), roce.NAKInvalidRequest, length, "WRITE Only above the PMTU")
	short := writeOnly(rw.VA, rw.RKey, four, true)
	short.RETH.DMALen = 8
	nak(short, roce.NAKInvalidRequest, length, "WRITE Only with DMA length != payload")
	first := roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteFirst, AckReq: true}, RETH: roce.RETH{VA: rw.VA, RKey: rw.RKey, DMALen: 600}, Payload: make([]byte, 100)}
	nak(first, roce.NAKInvalidRequest, length, "WRITE First shorter than the PMTU")
	huge := roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteFirst, AckReq: true}, RETH: roce.RETH{VA: rw.VA, RKey: rw.RKey, DMALen: 1 << 31}, Payload: make([]byte, h.pmtu)}
	nak(huge, roce.NAKRemoteAccessError, bounds, "WRITE First of 2 GiB")
	// A refused FIRST makes the responder consume the rest of its message
	// silently; a zero-length WRITE ends that.
	reset := func() {
		t.Helper()
		psn := p.request(writeOnly(0, 0, nil, true))
		p.expectAETH(roce.OpACK, roce.ACKUnlimited, psn)
	}
	reset()
	nak(roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteMiddle, AckReq: true}, Payload: make([]byte, h.pmtu)}, roce.NAKInvalidRequest, opcode, "WRITE Middle without First")
	reset()
	nak(roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteLast, AckReq: true}, Payload: four}, roce.NAKInvalidRequest, opcode, "WRITE Last without First")
	reset()
	nak(roce.Packet{BTH: roce.BTH{Opcode: roce.OpReadRequest, AckReq: true}, RETH: roce.RETH{VA: rw.VA, RKey: rw.RKey, DMALen: 8}}, roce.NAKRemoteAccessError, rights, "READ of an MR without the read right")
	nak(roce.Packet{BTH: roce.BTH{Opcode: roce.OpSendOnly, AckReq: true}, Payload: four}, roce.NAKInvalidRequest, opcode, "SEND")

	// A multi-packet WRITE whose FIRST is refused: its MIDDLE and LAST are
	// consumed without a word, and the QP goes on.
	before := st.NAKRemoteAccess.Load()
	psn := p.request(roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteFirst}, RETH: roce.RETH{VA: rw.VA, RKey: 77, DMALen: uint32(2*h.pmtu + 4)}, Payload: make([]byte, h.pmtu)})
	p.request(roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteMiddle}, Payload: make([]byte, h.pmtu)})
	last := p.request(roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteLast, AckReq: true}, Payload: four})
	p.expectAETH(roce.OpACK, roce.NAKRemoteAccessError, psn)
	p.expectAETH(roce.OpACK, roce.ACKUnlimited, last)
	if st.NAKRemoteAccess.Load() != before+1 {
		t.Errorf("refused multi-packet WRITE: %d NAKs, want 1", st.NAKRemoteAccess.Load()-before)
	}

	// Silent drops: wrong QP, bad ICRC, garbage, another address.
	wrongQP := writeOnly(rw.VA, rw.RKey, four, true)
	wrongQP.BTH.DestQP, wrongQP.BTH.PSN, wrongQP.BTH.PKey = p.rqpn^0x77, p.psn, roce.DefaultPKey
	u := st.UnknownQP.Load()
	p.send(&wrongQP)
	bad := writeOnly(rw.VA, rw.RKey, four, true)
	bad.BTH.DestQP, bad.BTH.PSN = p.rqpn, p.psn
	b := p.encode(&bad)
	b[len(b)-1] ^= 0x40
	ic := st.BadICRC.Load()
	p.sendBytes(b)
	corrupt := p.encode(&bad)
	corrupt[roce.BTHLen+roce.RETHLen] ^= 1 // payload flipped, ICRC unchanged
	p.sendBytes(corrupt)
	mal := st.Malformed.Load()
	p.sendBytes([]byte{1, 2, 3, 4, 5})
	p.sendBytes(nil)
	junk := bytes.Repeat([]byte{0xEE}, 40)
	p.sendBytes(junk)
	// Another partition, and a UD opcode to an RC QP: dropped as a NIC drops
	// them, unanswered (a NAK would be a reply to a packet not for this QP).
	otherPart := writeOnly(rw.VA, rw.RKey, four, true)
	otherPart.BTH.DestQP, otherPart.BTH.PSN, otherPart.BTH.PKey = p.rqpn, p.psn, 0x1234
	p.send(&otherPart)
	ud := roce.Packet{BTH: roce.BTH{Opcode: roce.OpUDSendOnly, AckReq: true, DestQP: p.rqpn, PKey: roce.DefaultPKey, PSN: p.psn},
		DETH: roce.DETH{QKey: roce.GSIQKey, SrcQP: 1}, Payload: make([]byte, 256)}
	p.send(&ud)
	other := newRawPeer(t, h.resp.LocalAddr())
	other.rqpn, other.psn = p.rqpn, p.psn
	other.request(writeOnly(rw.VA, rw.RKey, four, true))
	p.expectNothing(100 * time.Millisecond)
	if d := st.UnknownQP.Load() - u; d != 2 {
		t.Errorf("unknown QP drops %d, want 2 (wrong QP, other address)", d)
	}
	if d := st.BadICRC.Load() - ic; d != 3 {
		t.Errorf("bad ICRC drops %d, want 3 (trailer, payload, junk)", d)
	}
	if d := st.Malformed.Load() - mal; d != 4 {
		t.Errorf("malformed drops %d, want 4 (5 bytes, empty, another partition, UD to RC)", d)
	}
	h.unchanged(t)

	// The QP still works: a good write lands.
	psn = p.request(writeOnly(rw.VA+8, rw.RKey, four, true))
	p.expectAETH(roce.OpACK, roce.ACKUnlimited, psn)
	var got [4]byte
	h.regions[0].Read(8, got[:])
	if !bytes.Equal(got[:], four) {
		t.Errorf("good write after refusals landed as %v", got)
	}
}

type uint64Getter struct{ get func() uint64 }

func getter(c interface{ Load() uint64 }) *uint64Getter { return &uint64Getter{get: c.Load} }

func TestCMFloodIsRejectedAndCounted(t *testing.T) {
	h := newHostile(t, func(c *ResponderConfig) { c.MaxQPs = 3; c.IdleTimeout = 0 })
	st := h.resp.Stats()
	// Wrong service ID.
	p := newRawPeer(t, h.resp.LocalAddr())
	p.req(DefaultServiceID+1, roce.MTU1024)
	if m, _ := p.expectCM(); m.Header.AttrID != roce.AttrREJ || m.REJ.Reason != roce.RejectInvalidServiceID {
		t.Fatalf("wrong service ID: %v %v", m.Header.AttrID, m.REJ.Reason)
	}
	// MTU above the responder's.
	p.tid++
	p.req(DefaultServiceID, roce.MTU(9))
	if m, _ := p.expectCM(); m.Header.AttrID != roce.AttrREJ || m.REJ.Reason != roce.RejectInvalidMTU {
		t.Fatalf("bad MTU: %v %v", m.Header.AttrID, m.REJ.Reason)
	}
	// A flood of REQs from many addresses: MaxQPs-1 more QPs fit (the
	// hostile peer holds one), the rest are refused.
	var reps, rejs int
	for i := range 20 {
		f := newRawPeer(t, h.resp.LocalAddr())
		f.tid = uint64(i) + 100
		f.req(DefaultServiceID, roce.MTU1024)
		m, _ := f.expectCM()
		switch {
		case m.Header.AttrID == roce.AttrREP:
			reps++
		case m.Header.AttrID == roce.AttrREJ && m.REJ.Reason == roce.RejectNoResources:
			rejs++
		default:
			t.Fatalf("flood REQ %d: %v %v", i, m.Header.AttrID, m.REJ.Reason)
		}
	}
	if reps != 2 || rejs != 18 {
		t.Errorf("flood: %d REPs and %d REJs, want 2 and 18", reps, rejs)
	}
	if st.CMRejectResources.Load() != 18 || st.CMRejectService.Load() != 1 || st.CMRejectInvalid.Load() != 1 {
		t.Errorf("REJ counters: resources %d service %d invalid %d", st.CMRejectResources.Load(), st.CMRejectService.Load(), st.CMRejectInvalid.Load())
	}
	// One address sending REQ after REQ with new TIDs holds one QP only.
	f := newRawPeer(t, h.resp.LocalAddr())
	q0 := st.QPs.Load()
	h.resp.lockAll()
	for _, q := range h.resp.qps {
		if q.peer != h.peer.s.LocalAddr() {
			h.resp.destroy(q) // make room
			break
		}
	}
	h.resp.unlockAll()
	for i := range 10 {
		f.tid = uint64(1000 + i)
		f.req(DefaultServiceID, roce.MTU1024)
		if m, _ := f.expectCM(); m.Header.AttrID != roce.AttrREP {
			t.Fatalf("REQ %d from one address: %v %v", i, m.Header.AttrID, m.REJ.Reason)
		}
	}
	if got := st.QPs.Load(); got != q0 {
		t.Errorf("QPs %d after 10 REQs from one address, want %d", got, q0)
	}
	h.unchanged(t)
}

func TestCMRetransmittedREQGetsTheSameREP(t *testing.T) {
	resp := startResponder(t, testResponderConfig("127.0.0.1"))
	p := newRawPeer(t, resp.LocalAddr())
	p.req(DefaultServiceID, roce.MTU1024)
	m1, b1 := p.expectCM()
	p.req(DefaultServiceID, roce.MTU1024)
	m2, b2 := p.expectCM()
	if m1.Header.AttrID != roce.AttrREP || !bytes.Equal(b1, b2) {
		t.Fatalf("retransmitted REQ got a different answer")
	}
	if resp.Stats().CMDuplicateRequests.Load() != 1 || resp.Stats().QPs.Load() != 1 {
		t.Errorf("duplicates %d QPs %d", resp.Stats().CMDuplicateRequests.Load(), resp.Stats().QPs.Load())
	}
	// A new REQ (new TID) from the same address: a fresh QP.
	p.tid++
	p.req(DefaultServiceID, roce.MTU1024)
	m3, _ := p.expectCM()
	if m3.Header.AttrID != roce.AttrREP || m3.REP.LocalQPN == m2.REP.LocalQPN {
		t.Fatalf("new REQ: %v QPN %#x (old %#x)", m3.Header.AttrID, m3.REP.LocalQPN, m2.REP.LocalQPN)
	}
	if m3.REP.ResponderResources < 1 {
		t.Errorf("responder resources %d", m3.REP.ResponderResources)
	}
	if resp.Stats().QPs.Load() != 1 {
		t.Errorf("QPs %d, want 1", resp.Stats().QPs.Load())
	}
	// DREQ tears it down and is answered.
	d := &roce.CM{Header: roce.CMHeader(roce.AttrDREQ, 99)}
	d.DREQ.LocalCommID, d.DREQ.RemoteCommID, d.DREQ.RemoteQPN = p.commID, m3.REP.LocalCommID, m3.REP.LocalQPN
	p.cm(d)
	if m, _ := p.expectCM(); m.Header.AttrID != roce.AttrDREP || m.Header.TID != 99 {
		t.Fatalf("DREQ answered with %v", m.Header.AttrID)
	}
	if resp.Stats().QPs.Load() != 0 {
		t.Errorf("QPs %d after DREQ", resp.Stats().QPs.Load())
	}
}

func TestPSNRules(t *testing.T) {
	var start uint32 = 0xFFFFFD // the request PSNs wrap at 2^24
	h := newHostile(t, func(c *ResponderConfig) { c.ACKCoalesce = 4 })
	// Reconnect with a starting PSN near the wrap.
	h.resp.mu.Lock()
	h.resp.startPSN = func() uint32 { return start }
	h.resp.mu.Unlock()
	p := newRawPeer(t, h.resp.LocalAddr())
	p.connect(roce.MTU256)
	if p.psn != start {
		t.Fatalf("starting PSN %#x", p.psn)
	}
	if string(p.adv) != "adv" {
		t.Fatalf("advertisement %q", p.adv)
	}
	st := h.resp.Stats()
	rw := h.rw
	reg := h.regions[0]
	word := func(off uint64) uint64 { v, _ := reg.Load64(off); return v }

	// Writes across the wrap, ACKed one by one.
	for i := range 5 {
		psn := p.request(writeOnly(rw.VA+uint64(i)*8, rw.RKey, []byte{byte(i), 0, 0, 0, 0, 0, 0, 0}, true))
		p.expectAETH(roce.OpACK, roce.ACKUnlimited, psn)
	}
	if p.psn != 2 {
		t.Fatalf("PSN after the wrap %#x", p.psn)
	}

	// Coalescing: without AckReq, an ACK once ACKCoalesce (4) packets went
	// unacknowledged, sent at the end of the receive batch and covering it
	// all. How the kernel splits the 8 packets into batches decides how many
	// ACKs come and what the last covers: 4+4 or 2+2+2+2 draw two (after
	// the 4th and the 8th), one batch or 3+5 one for the 8th, 7+1 one for
	// the 7th (the 8th waits). So: 1 or 2 ACKs, none before the 4th packet.
	first := p.psn
	acks := st.ACKs.Load()
	for i := range 8 {
		p.request(writeOnly(rw.VA+64, rw.RKey, []byte{byte(i)}, false))
	}
	last := (p.psn - 1) & roce.PSNMask
	var n int
	var lastPSN uint32
	if pkt, ok := p.recv(10 * time.Second); ok { // however long a loaded machine takes
		n, lastPSN = 1, pkt.BTH.PSN
		for {
			pkt, ok := p.recv(200 * time.Millisecond)
			if !ok {
				break
			}
			n, lastPSN = n+1, pkt.BTH.PSN
		}
	}
	covered := (lastPSN - first) & roce.PSNMask // packets before the last one ACKed
	if n < 1 || n > 2 || covered < 3 || covered > (last-first)&roce.PSNMask || st.ACKs.Load()-acks != uint64(n) {
		t.Errorf("8 packets without AckReq drew %d ACKs, the last for PSN %#x; want 1 or 2, the last for %#x..%#x",
			n, lastPSN, (first+3)&roce.PSNMask, last)
	}
	// One more with AckReq is acknowledged at once, with everything before.
	req := p.request(writeOnly(rw.VA+64, rw.RKey, []byte{9}, true))
	p.expectAETH(roce.OpACK, roce.ACKUnlimited, req)

	// A gap draws exactly one NAK PSN sequence error, with the expected PSN.
	expected := p.psn
	seq := st.NAKSequence.Load()
	p.psn = (p.psn + 1) & roce.PSNMask
	for range 5 {
		p.request(writeOnly(rw.VA+128, rw.RKey, []byte{0xEE}, true))
	}
	p.expectAETH(roce.OpACK, roce.NAKPSNSequenceError, expected)
	p.expectNothing(50 * time.Millisecond)
	if st.NAKSequence.Load()-seq != 1 || st.OutOfSequence.Load() < 5 {
		t.Errorf("gap: %d NAKs, %d out of sequence", st.NAKSequence.Load()-seq, st.OutOfSequence.Load())
	}
	// The expected PSN closes it.
	p.psn = expected
	psnA := p.request(writeOnly(rw.VA+128, rw.RKey, []byte{0xA1}, true))
	p.expectAETH(roce.OpACK, roce.ACKUnlimited, psnA)
	psnB := p.request(writeOnly(rw.VA+128, rw.RKey, []byte{0xB2}, true))
	p.expectAETH(roce.OpACK, roce.ACKUnlimited, psnB)

	// A duplicate write is re-ACKed (with the latest PSN), not executed.
	dup := writeOnly(rw.VA+128, rw.RKey, []byte{0xA1}, true)
	dup.BTH.DestQP, dup.BTH.PSN, dup.BTH.PKey = p.rqpn, psnA, roce.DefaultPKey
	d0 := st.Duplicates.Load()
	p.send(&dup)
	p.expectAETH(roce.OpACK, roce.ACKUnlimited, psnB)
	var b [1]byte
	reg.Read(128, b[:])
	if b[0] != 0xB2 || st.Duplicates.Load() != d0+1 {
		t.Errorf("duplicate write re-executed: byte %#x", b[0])
	}

	// FETCH_ADD returns the original value; a duplicate gets the saved
	// value and does not add again.
	base := word(256)
	psnF := p.request(fetchAdd(rw.VA+256, rw.RKey, 5))
	if a := p.expectAETH(roce.OpAtomicACK, roce.ACKUnlimited, psnF); a.AtomicAckETH.OrigData != base {
		t.Errorf("orig %d, want %d", a.AtomicAckETH.OrigData, base)
	}
	p.request(fetchAdd(rw.VA+256, rw.RKey, 7))
	p.expect()
	fa := fetchAdd(rw.VA+256, rw.RKey, 5)
	fa.BTH.DestQP, fa.BTH.PSN, fa.BTH.PKey = p.rqpn, psnF, roce.DefaultPKey
	for range 3 {
		p.send(&fa)
		if a := p.expectAETH(roce.OpAtomicACK, roce.ACKUnlimited, psnF); a.AtomicAckETH.OrigData != base {
			t.Errorf("replayed orig %d, want %d", a.AtomicAckETH.OrigData, base)
		}
	}
	if got := word(256); got != base+12 {
		t.Errorf("counter %d, want %d", got, base+12)
	}
	if st.AtomicReplays.Load() != 3 {
		t.Errorf("replays %d", st.AtomicReplays.Load())
	}
	// FETCH_ADD wraps modulo 2^64 on a little-endian word.
	reg.Store64(264, ^uint64(0))
	p.request(fetchAdd(rw.VA+264, rw.RKey, 2))
	p.expect()
	var le [8]byte
	reg.Read(264, le[:])
	if binary.LittleEndian.Uint64(le[:]) != 1 {
		t.Errorf("wrapped add: % x", le)
	}

	// A multi-packet WRITE is assembled by VA progression.
	data := make([]byte, 2*256+10)
	for i := range data {
		data[i] = byte(i * 3)
	}
	p.request(roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteFirst}, RETH: roce.RETH{VA: rw.VA + 1000, RKey: rw.RKey, DMALen: uint32(len(data))}, Payload: data[:256]})
	p.request(roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteMiddle}, Payload: data[256:512]})
	psn := p.request(roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteLastImm, AckReq: true}, Payload: data[512:], ImmDt: roce.ImmDt{Data: 42}})
	p.expectAETH(roce.OpACK, roce.ACKUnlimited, psn)
	got := make([]byte, len(data))
	reg.Read(1000, got)
	if !bytes.Equal(got, data) {
		t.Errorf("multi-packet write landed wrong")
	}
	h.immediatesMu.Lock()
	ims := append([]Immediate(nil), h.immediates...)
	h.immediatesMu.Unlock()
	if len(ims) != 1 || ims[0].MR != "rw" || ims[0].Offset != 1000 || ims[0].Length != uint64(len(data)) || ims[0].Imm != 42 {
		t.Errorf("immediates %+v", ims)
	}
	// A LAST of the wrong size is refused.
	p.request(roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteFirst}, RETH: roce.RETH{VA: rw.VA + 2000, RKey: rw.RKey, DMALen: 300}, Payload: data[:256]})
	psn = p.request(roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteLast, AckReq: true}, Payload: data[:50]})
	p.expectAETH(roce.OpACK, roce.NAKInvalidRequest, psn)
}

func TestResponderConfigValidate(t *testing.T) {
	if err := DefaultResponderConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	c := DefaultResponderConfig()
	c.MTU, c.MaxQPs, c.AtomicDepth, c.Addr = 1000, 0, 300, "nope"
	err := c.Validate()
	for _, want := range []string{"MTU", "MaxQPs", "AtomicDepth", "Addr"} {
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("Validate does not name %s: %v", want, err)
		}
	}
	for _, c := range []ResponderConfig{
		{PollBeforeWait: 2 * time.Millisecond, KernelWait: true},
		{PollBeforeWait: -time.Microsecond, KernelWait: true},
		{PollBeforeWait: 10 * time.Microsecond, KernelWait: false},
	} {
		d := DefaultResponderConfig()
		d.PollBeforeWait, d.KernelWait = c.PollBeforeWait, c.KernelWait
		if err := d.Validate(); err == nil || !bytes.Contains([]byte(err.Error()), []byte("PollBeforeWait")) {
			t.Errorf("PollBeforeWait %v with KernelWait %v: %v", c.PollBeforeWait, c.KernelWait, err)
		}
	}
	d := DefaultResponderConfig()
	d.KeepProcessor, d.KernelWait = true, false
	if err := d.Validate(); err == nil || !bytes.Contains([]byte(err.Error()), []byte("KeepProcessor")) {
		t.Errorf("KeepProcessor without KernelWait: %v", err)
	}
	d.KernelWait = true
	if err := d.Validate(); err != nil {
		t.Errorf("KeepProcessor with KernelWait: %v", err)
	}
	rc := DefaultRequesterConfig()
	if err := rc.Validate(); err == nil {
		t.Error("a requester config without a collector validates")
	}
	rc.Collector = netip.MustParseAddrPort("127.0.0.1:4791")
	if err := rc.Validate(); err != nil {
		t.Fatal(err)
	}
	rc.Window, rc.MTU = 0, 100
	if err := rc.Validate(); err == nil {
		t.Error("bad window and MTU validate")
	}
}

// A QP torn down by its peer's DREQ takes no more requests, even when it
// was the last QP the read loop executed (the loop remembers that QP to
// skip a table lookup): a WRITE to its number from the same address and
// port, with the next PSN, is an unknown QP and changes nothing.
func TestATornDownQPTakesNoMoreRequestsFromItsPeer(t *testing.T) {
	h := newHostile(t, nil)
	p := h.peer
	four := []byte{1, 2, 3, 4}
	psn := p.request(writeOnly(h.rw.VA, h.rw.RKey, four, true))
	p.expectAETH(roce.OpACK, roce.ACKUnlimited, psn)
	after := snapshot(t, h.regions[0])
	d := &roce.CM{Header: roce.CMHeader(roce.AttrDREQ, 77)}
	d.DREQ.LocalCommID, d.DREQ.RemoteCommID, d.DREQ.RemoteQPN = p.commID, p.peerComm, p.rqpn
	p.cm(d)
	if m, _ := p.expectCM(); m.Header.AttrID != roce.AttrDREP {
		t.Fatalf("DREQ answered with %v", m.Header.AttrID)
	}
	st := h.resp.Stats()
	u := st.UnknownQP.Load()
	late := writeOnly(h.rw.VA+8, h.rw.RKey, []byte{9, 9, 9, 9, 9, 9, 9, 9}, true)
	p.request(late)
	p.expectNothing(100 * time.Millisecond)
	if d := st.UnknownQP.Load() - u; d != 1 {
		t.Errorf("unknown QP drops %d after the teardown, want 1", d)
	}
	if !bytes.Equal(snapshot(t, h.regions[0]), after) {
		t.Error("a WRITE to a torn-down QP changed the region")
	}
}

// A deregistered MR takes no more writes, even when it was the last MR the
// read loop looked up (the loop remembers it to skip a table lookup): the
// next WRITE naming its R_Key gets NAK remote access error and changes
// nothing.
func TestADeregisteredMRTakesNoMoreWrites(t *testing.T) {
	h := newHostile(t, nil)
	p := h.peer
	psn := p.request(writeOnly(h.wo.VA, h.wo.RKey, []byte{1, 2, 3, 4}, true))
	p.expectAETH(roce.OpACK, roce.ACKUnlimited, psn)
	if err := h.resp.DeregisterMR("wo"); err != nil {
		t.Fatal(err)
	}
	after := snapshot(t, h.regions[1])
	st := h.resp.Stats()
	rk := st.RejectRKey.Load()
	psn = p.request(writeOnly(h.wo.VA+8, h.wo.RKey, []byte{9, 9, 9, 9}, true))
	p.expectAETH(roce.OpACK, roce.NAKRemoteAccessError, psn)
	if d := st.RejectRKey.Load() - rk; d != 1 {
		t.Errorf("unknown R_Key refusals %d after the deregistration, want 1", d)
	}
	if !bytes.Equal(snapshot(t, h.regions[1]), after) {
		t.Error("a WRITE to a deregistered MR changed its region")
	}
}
