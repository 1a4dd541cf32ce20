package rdma

import (
	"github.com/dta-go/dta/wire/roce"
)

// maxReadLen is the longest RDMA READ (and WRITE) message IBA allows: a
// DMA Length above 2^31 is NAKed as an invalid request.
const maxReadLen = 1 << 31

// readPackets returns the number of READ Response packets, and so of PSNs,
// that a READ of n bytes takes at path MTU pmtu: ceil(n/pmtu), 1 for n = 0.
func readPackets(n uint64, pmtu int) uint32 {
	if n == 0 {
		return 1
	}
	return uint32((n + uint64(pmtu) - 1) / uint64(pmtu))
}

// read executes an RDMA READ Request whose PSN is the expected one: it
// checks the DMA length, R_Key, bounds and the remote-read right, then
// answers with READ Response Only, or First, Middle… and Last segmented at
// the path MTU, one PSN each from the request's. The expected PSN advances
// by the number of response packets, also when the READ is refused with a
// remote access error (both sides then skip the same PSNs: the requester
// reserved them when it posted the READ). Called as handleRC is.
func (l *loop) read(q *qp, p *roce.Packet) {
	r := l.r
	st := &r.stats
	psn := p.BTH.PSN
	q.skip = false
	if q.wr.active { // a READ inside a multi-packet WRITE
		q.wr = writeState{}
		st.RejectOpcode.Add(1)
		l.refuse(q, p, roce.NAKInvalidRequest, 1)
		return
	}
	n := uint64(p.RETH.DMALen)
	if n > maxReadLen {
		st.RejectLength.Add(1)
		l.refuse(q, p, roce.NAKInvalidRequest, 1)
		return
	}
	npk := readPackets(n, q.pmtu)
	data, syn := l.readable(&p.RETH)
	if syn != roce.ACKUnlimited {
		l.refuse(q, p, syn, npk)
		return
	}
	q.msn = (q.msn + 1) & roce.PSNMask
	q.ePSN = (q.ePSN + npk) & roce.PSNMask
	q.ageErr()
	// The responses acknowledge every request before the READ.
	q.ackPending = false
	q.sinceACK = 0
	st.Reads.Add(1)
	st.ReadBytes.Add(n)
	q.owe()
	l.readRespond(q, data, psn)
}

// readable returns the bytes a READ's RETH names, or the NAK syndrome
// (counting the reason). A zero-length READ names no memory: its R_Key
// and VA are not checked, as for a zero-length WRITE.
func (l *loop) readable(reth *roce.RETH) ([]byte, roce.Syndrome) {
	n := uint64(reth.DMALen)
	if n == 0 {
		return nil, roce.ACKUnlimited
	}
	m, syn := l.lookup(reth.RKey, AccessRemoteRead, reth.VA, n)
	if m == nil {
		return nil, syn
	}
	data, err := m.r.Slice(reth.VA-m.VA, n)
	if err != nil {
		return nil, roce.NAKRemoteOperationalError
	}
	return data, roce.ACKUnlimited
}

// readRespond queues the READ Response packets carrying data, from PSN psn
// on, with the current MSN in their AETHs.
func (l *loop) readRespond(q *qp, data []byte, psn uint32) {
	r := l.r
	npk := readPackets(uint64(len(data)), q.pmtu)
	pkt := roce.Packet{
		BTH:  roce.BTH{PKey: roce.DefaultPKey, DestQP: q.remoteQPN},
		AETH: roce.AETH{Syndrome: roce.ACKUnlimited, MSN: q.msn},
	}
	for k := range npk {
		switch {
		case npk == 1:
			pkt.BTH.Opcode = roce.OpReadResponseOnly
		case k == 0:
			pkt.BTH.Opcode = roce.OpReadResponseFirst
		case k == npk-1:
			pkt.BTH.Opcode = roce.OpReadResponseLast
		default:
			pkt.BTH.Opcode = roce.OpReadResponseMiddle
		}
		pkt.BTH.PSN = (psn + k) & roce.PSNMask
		lo := min(int(k)*q.pmtu, len(data))
		pkt.Payload = data[lo:min(lo+q.pmtu, len(data))]
		b := pkt.AppendTo(l.tx.Buf())
		if l.icrc.Seal(&q.out, b) != nil {
			return
		}
		r.stats.ReadResponses.Add(1)
		l.queueQP(q, b)
	}
}

// replayRead answers a duplicate READ Request (its PSN behind the expected
// one) as IBA has a responder do: the READ is executed again from the
// request, against memory as it is now, and its responses resent with the
// original PSNs. The expected PSN and the MSN do not change. Called as
// handleRC is.
func (l *loop) replayRead(q *qp, p *roce.Packet) {
	r := l.r
	psn := p.BTH.PSN
	if q.errValid && q.errPSN == psn {
		l.respond(q, roce.OpACK, q.errSyn, psn, 0)
		return
	}
	if uint64(p.RETH.DMALen) > maxReadLen {
		r.stats.RejectLength.Add(1)
		l.respond(q, roce.OpACK, roce.NAKInvalidRequest, psn, 0)
		return
	}
	data, syn := l.readable(&p.RETH)
	if syn != roce.ACKUnlimited {
		l.respond(q, roce.OpACK, syn, psn, 0)
		l.logRefusal(q, p, syn)
		return
	}
	r.stats.ReadReplays.Add(1)
	l.readRespond(q, data, psn)
}

// refuse answers the request p, whose PSN is the expected one, with a class
// C NAK and consumes psns PSNs for it.
func (l *loop) refuse(q *qp, p *roce.Packet, syn roce.Syndrome, psns uint32) {
	psn := p.BTH.PSN
	q.ePSN = (q.ePSN + psns) & roce.PSNMask
	q.errValid, q.errPSN, q.errSyn = true, psn, syn
	q.ackPending = false // the NAK acknowledges everything before it
	q.sinceACK = 0
	l.respond(q, roce.OpACK, syn, psn, 0)
	l.logRefusal(q, p, syn)
}
