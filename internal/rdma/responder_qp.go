package rdma

import (
	"context"
	"encoding/binary"
	"log/slog"
	"net/netip"
	"runtime"

	"github.com/dta-go/dta/internal/transport/xdp"
	"github.com/dta-go/dta/wire/roce"
)

type qpState uint8

const (
	qpHalfOpen    qpState = iota // REP sent, waiting for the RTU
	qpEstablished                // RTU or a first request received
)

// qp is the responder side of one RC connection. qpn, peer, owner,
// localCommID, tid, remoteCommID and rep never change once the QP is in the
// table (mu suffices to read them); every other field is guarded by the
// owner loop's lock.
type qp struct {
	qpn, remoteQPN uint32
	peer           netip.AddrPort
	owner          *loop         // the read loop that received its REQ and executes its packets
	out            roce.Envelope // what we send: local -> peer
	state          qpState
	pmtu           int
	link           xdp.Link // the link responses take over AF_XDP, when linked
	linked         bool     // a request in sequence came in over AF_XDP: link is its link, reversed
	created        int64
	lastActive     int64
	dead           bool

	// CM
	tid                       uint64
	localCommID, remoteCommID uint32
	rep                       []byte // the REP as sent, for retransmitted REQs

	// receive queue (requests from the peer)
	ePSN       uint32 // next PSN expected
	msn        uint32 // messages completed
	nakSent    bool   // a NAK PSN sequence error is out for the current gap
	ackPending bool   // an ACK for ePSN-1 is due at the end of the batch
	inDirty    bool
	sinceACK   int // packets executed since the last ACK
	wr         writeState
	skip       bool // the current multi-packet WRITE failed: consume its rest silently
	errValid   bool // the last class C NAK, resent for a duplicate of its request
	errPSN     uint32
	errSyn     roce.Syndrome
	atomics    []atomicResult // ring of the latest atomic results, by PSN
	atomicNext int
	// depth is the READ and atomic requests the requester may have
	// outstanding (the REP's responder resources); owed counts those
	// answered in the owner loop's current read (owedAt names it:
	// loop.rounds) and owedBefore in the read before, to tell when it
	// had all of them out and waits (qp.owe).
	depth      int
	owed       int
	owedBefore int
	owedAt     uint64

	// send queue (the advertisement SEND)
	adv        [][]byte // sealed packets
	advPSN     uint32   // PSN of adv[0]
	advUna     int      // first packet not acknowledged
	advNext    int      // next packet to send
	advSentAt  int64
	advRetries int
}

// writeState follows a multi-packet RDMA WRITE between FIRST and LAST.
type writeState struct {
	active    bool
	m         *mr
	start     uint64 // offset of the message in the MR
	off       uint64 // offset of the next byte
	remaining uint64
}

type atomicResult struct {
	valid bool
	psn   uint32
	msn   uint32
	orig  uint64
}

// advWindow is the most advertisement packets sent and not acknowledged.
const advWindow = 64

// handleRC processes an RC packet addressed to q. Called with the lock of
// q's owner loop held (l is that loop, or holds every loop's lock).
func (l *loop) handleRC(q *qp, p *roce.Packet) {
	r := l.r
	op := p.BTH.Opcode
	if op == roce.OpACK || op == roce.OpAtomicACK {
		l.advResponse(q, p)
		return
	}
	if q.state == qpHalfOpen {
		l.establish(q) // the RTU was lost; the first request stands in for it
	}
	st := &r.stats
	psn := p.BTH.PSN
	switch roce.ComparePSN(psn, q.ePSN) {
	case 1:
		st.OutOfSequence.Add(1)
		if !q.nakSent {
			q.nakSent = true
			l.respond(q, roce.OpACK, roce.NAKPSNSequenceError, q.ePSN, 0)
		}
		return
	case -1:
		st.Duplicates.Add(1)
		l.duplicate(q, p)
		return
	}
	q.nakSent = false
	if l.link != nil {
		// The QP's address vector, as a NIC's: responses go back over
		// the link of its latest request in sequence.
		q.link, q.linked = l.link.Reverse(), true
	}
	if op == roce.OpReadRequest {
		l.read(q, p)
		return
	}
	syn, atomic, orig := l.execute(q, p)
	q.ePSN = (q.ePSN + 1) & roce.PSNMask
	q.ageErr()
	switch {
	case syn != roce.ACKUnlimited:
		q.errValid, q.errPSN, q.errSyn = true, psn, syn
		q.ackPending = false // the NAK acknowledges everything before it
		q.sinceACK = 0
		l.respond(q, roce.OpACK, syn, psn, 0)
		l.logRefusal(q, p, syn)
	case atomic:
		q.ackPending = false
		q.sinceACK = 0
		l.respond(q, roce.OpAtomicACK, roce.ACKUnlimited, psn, orig)
		q.owe()
	default:
		q.sinceACK++
		if p.BTH.AckReq || q.sinceACK >= r.cfg.ACKCoalesce {
			l.markACK(q)
		}
	}
}

// ageErr forgets the saved class C NAK once its PSN is long gone (it will
// come round again after 2^24 PSNs).
func (q *qp) ageErr() {
	if q.errValid && (q.ePSN-q.errPSN)&roce.PSNMask > 1<<22 {
		q.errValid = false
	}
}

// duplicate answers a request whose PSN is behind the expected one: a WRITE
// is re-ACKed, never executed again; an atomic gets its saved ATOMIC ACK; a
// READ, which changes nothing, is executed again (replayRead).
func (l *loop) duplicate(q *qp, p *roce.Packet) {
	r := l.r
	psn := p.BTH.PSN
	switch p.BTH.Opcode {
	case roce.OpReadRequest:
		l.replayRead(q, p)
	case roce.OpFetchAdd, roce.OpCompareSwap:
		// Newest first: after 2^24 PSNs an old entry may carry the same PSN.
		for k := 1; k <= len(q.atomics); k++ {
			a := &q.atomics[(q.atomicNext-k+len(q.atomics))%len(q.atomics)]
			if a.valid && a.psn == psn {
				r.stats.AtomicReplays.Add(1)
				msn := q.msn
				q.msn = a.msn
				l.respond(q, roce.OpAtomicACK, roce.ACKUnlimited, psn, a.orig)
				q.msn = msn
				return
			}
		}
		if q.errValid && q.errPSN == psn {
			l.respond(q, roce.OpACK, q.errSyn, psn, 0)
			return
		}
		r.stats.AtomicReplayMisses.Add(1)
	default:
		if q.errValid && q.errPSN == psn {
			l.respond(q, roce.OpACK, q.errSyn, psn, 0)
			return
		}
		l.markACK(q)
	}
}

// owe notes a READ or atomic request of q answered in its owner loop's
// current read (a round). When the requester had its whole allowance
// (depth) among those of this read and the one before (its requests come
// in runs, one per run of responses it gets, and a read may find one run
// of two), it can send nothing more until their responses reach it: the
// loop then must not pause before its next read (loop.waited,
// pacer.hold), or every round trip of that requester would take a pause.
// AF_XDP loops keep their reader's pause (xdp.Config.Coalesce): on the VM
// of docs/BENCHMARKS.md skipping it there cost wake-ups without raising
// the rate. Called with the owner's lock held.
func (q *qp) owe() {
	o := q.owner
	if o.xdp {
		return
	}
	if q.owedAt != o.rounds {
		q.owedBefore = 0
		if q.owedAt+1 == o.rounds {
			q.owedBefore = q.owed
		}
		q.owedAt, q.owed = o.rounds, 0
	}
	if q.owed++; q.owed+q.owedBefore >= q.depth {
		o.waited = true
	}
}

func (l *loop) markACK(q *qp) {
	q.ackPending = true
	q.sinceACK = 0
	if !q.inDirty {
		q.inDirty = true
		l.dirty = append(l.dirty, q)
	}
}

// flushACKs sends the ACKs due at the end of a batch, one per QP.
func (l *loop) flushACKs() {
	for i, q := range l.dirty {
		if q.ackPending && !q.dead {
			q.ackPending = false
			q.sinceACK = 0
			l.respond(q, roce.OpACK, roce.ACKUnlimited, (q.ePSN-1)&roce.PSNMask, 0)
		}
		q.inDirty = false
		l.dirty[i] = nil
	}
	l.dirty = l.dirty[:0]
}

// respond queues an ACK, NAK or ATOMIC ACK for q with the current MSN.
func (l *loop) respond(q *qp, op roce.Opcode, syn roce.Syndrome, psn uint32, orig uint64) {
	r := l.r
	st := &r.stats
	switch syn {
	case roce.ACKUnlimited:
		if op == roce.OpAtomicACK {
			l.hot.atomicACKs++ // published before the response leaves
		} else {
			l.hot.acks++
		}
	case roce.NAKPSNSequenceError:
		st.NAKSequence.Add(1)
	case roce.NAKInvalidRequest:
		st.NAKInvalidRequest.Add(1)
	case roce.NAKRemoteAccessError:
		st.NAKRemoteAccess.Add(1)
	default:
		st.NAKRemoteOperational.Add(1)
	}
	pkt := roce.Packet{
		BTH:          roce.BTH{Opcode: op, PKey: roce.DefaultPKey, DestQP: q.remoteQPN, PSN: psn},
		AETH:         roce.AETH{Syndrome: syn, MSN: q.msn},
		AtomicAckETH: roce.AtomicAckETH{OrigData: orig},
	}
	b := pkt.AppendTo(l.tx.Buf())
	if l.icrc.Seal(&q.out, b) != nil {
		return
	}
	l.queueQP(q, b)
}

// execute runs a request whose PSN is the expected one. It returns
// ACKUnlimited on success or the NAK syndrome, whether it was an atomic,
// and the atomic's original value.
func (l *loop) execute(q *qp, p *roce.Packet) (syn roce.Syndrome, atomic bool, orig uint64) {
	r := l.r
	st := &r.stats
	op := p.BTH.Opcode
	pay := len(p.Payload)
	padOK := int(p.BTH.PadCnt) == roce.PadCount(pay)
	switch op {
	case roce.OpWriteFirst, roce.OpWriteOnly, roce.OpWriteOnlyImm:
		q.skip = false
		if q.wr.active {
			q.wr = writeState{}
			st.RejectOpcode.Add(1)
			return roce.NAKInvalidRequest, false, 0
		}
		reth := &p.RETH
		n := uint64(reth.DMALen)
		first := op == roce.OpWriteFirst
		switch {
		case n > 1<<31,
			first && (pay != q.pmtu || n <= uint64(q.pmtu) || !padOK),
			!first && (uint64(pay) != n || pay > q.pmtu || !padOK):
			st.RejectLength.Add(1)
			q.skip = first
			return roce.NAKInvalidRequest, false, 0
		}
		if n == 0 {
			q.msn = (q.msn + 1) & roce.PSNMask
			l.hot.writes++
			if op == roce.OpWriteOnlyImm {
				l.immediate(q, "", 0, 0, p.ImmDt.Data)
			}
			return roce.ACKUnlimited, false, 0
		}
		m, syn := l.lookup(reth.RKey, AccessRemoteWrite, reth.VA, n)
		if m == nil {
			q.skip = first
			return syn, false, 0
		}
		off := reth.VA - m.VA
		if !place(m, off, p.Payload) {
			q.skip = first
			return roce.NAKRemoteOperationalError, false, 0
		}
		l.hot.writeBytes += uint64(pay)
		if first {
			q.wr = writeState{active: true, m: m, start: off, off: off + uint64(pay), remaining: n - uint64(pay)}
			return roce.ACKUnlimited, false, 0
		}
		q.msn = (q.msn + 1) & roce.PSNMask
		l.hot.writes++
		if op == roce.OpWriteOnlyImm {
			l.immediate(q, m.Name, off, n, p.ImmDt.Data)
		}
		return roce.ACKUnlimited, false, 0

	case roce.OpWriteMiddle, roce.OpWriteLast, roce.OpWriteLastImm:
		if !q.wr.active {
			if q.skip {
				// The rest of a message already refused: consumed silently.
				q.skip = op == roce.OpWriteMiddle
				return roce.ACKUnlimited, false, 0
			}
			st.RejectOpcode.Add(1)
			q.skip = op == roce.OpWriteMiddle
			return roce.NAKInvalidRequest, false, 0
		}
		w := &q.wr
		last := op != roce.OpWriteMiddle
		if (!last && (pay != q.pmtu || w.remaining <= uint64(q.pmtu))) ||
			(last && (uint64(pay) != w.remaining || !padOK)) {
			q.wr = writeState{}
			q.skip = !last
			st.RejectLength.Add(1)
			return roce.NAKInvalidRequest, false, 0
		}
		if !place(w.m, w.off, p.Payload) {
			q.wr = writeState{}
			q.skip = !last
			return roce.NAKRemoteOperationalError, false, 0
		}
		l.hot.writeBytes += uint64(pay)
		w.off += uint64(pay)
		w.remaining -= uint64(pay)
		if !last {
			return roce.ACKUnlimited, false, 0
		}
		m, start, n := w.m, w.start, w.off-w.start
		q.wr = writeState{}
		q.msn = (q.msn + 1) & roce.PSNMask
		l.hot.writes++
		if op == roce.OpWriteLastImm {
			l.immediate(q, m.Name, start, n, p.ImmDt.Data)
		}
		return roce.ACKUnlimited, false, 0

	case roce.OpFetchAdd, roce.OpCompareSwap:
		q.skip = false
		if q.wr.active {
			q.wr = writeState{}
			st.RejectOpcode.Add(1)
			return roce.NAKInvalidRequest, false, 0
		}
		eth := &p.AtomicETH
		m, syn := l.lookup(eth.RKey, AccessRemoteAtomic, eth.VA, 8)
		if m == nil {
			return syn, false, 0
		}
		if eth.VA%8 != 0 {
			st.RejectMisaligned.Add(1)
			return roce.NAKInvalidRequest, false, 0
		}
		off := eth.VA - m.VA
		var err error
		if op == roce.OpFetchAdd {
			orig, err = m.r.Add64(off, eth.SwapAdd)
		} else {
			_, orig, err = m.r.CompareAndSwap64(off, eth.Compare, eth.SwapAdd)
		}
		if err != nil {
			return roce.NAKRemoteOperationalError, false, 0
		}
		m.r.Written(off, 8)
		q.msn = (q.msn + 1) & roce.PSNMask
		l.hot.atomics++
		a := &q.atomics[q.atomicNext]
		*a = atomicResult{valid: true, psn: p.BTH.PSN, msn: q.msn, orig: orig}
		q.atomicNext = (q.atomicNext + 1) % len(q.atomics)
		return roce.ACKUnlimited, true, orig
	}
	// SEND, READ and anything else a requester may not send here.
	q.wr = writeState{}
	q.skip = false
	st.RejectOpcode.Add(1)
	return roce.NAKInvalidRequest, false, 0
}

// lookup finds the MR for rkey and checks the access right and that
// [va, va+n) lies inside it; on failure it counts the reason and returns
// the NAK syndrome.
func (l *loop) lookup(rkey uint32, need Access, va, n uint64) (*mr, roce.Syndrome) {
	r := l.r
	st := &r.stats
	t := r.mrs.Load()
	if t != l.mrTab || rkey != l.mrKey {
		l.mrTab, l.mrKey, l.mr = t, rkey, t.byKey[rkey]
	}
	m := l.mr
	switch {
	case m == nil:
		st.RejectRKey.Add(1)
	case m.Access&need == 0:
		st.RejectRights.Add(1)
	case !m.contains(va, n):
		st.RejectBounds.Add(1)
	default:
		return m, roce.ACKUnlimited
	}
	return nil, roce.NAKRemoteAccessError
}

// plainWordStores: on amd64 an aligned 8-byte plain store (one MOV, which
// Go emits for PutUint64) is single-copy atomic, so a reader polling the
// word never sees it torn, and stores become visible in program order
// (TSO), so an Append head written after its entries is never seen before
// them: what a NIC's in-order DMA writes guarantee. Unlike an atomic
// exchange it does not wait for the cache miss of a random write, which
// dominated the responder's profile. Elsewhere (arm64 reorders plain
// stores) the word is stored atomically, with release order.
const plainWordStores = runtime.GOARCH == "amd64"

// place writes b at off and records it for the region's trackers. An 8-byte
// write to an aligned offset is a single store of the word, as an RDMA NIC
// places it, so that readers polling a word never see it torn.
func place(m *mr, off uint64, b []byte) bool {
	var err error
	if len(b) == 8 && off%8 == 0 {
		if plainWordStores {
			err = m.r.Write64(off, binary.LittleEndian.Uint64(b))
		} else {
			err = m.r.Store64(off, binary.LittleEndian.Uint64(b))
		}
	} else {
		err = m.r.Write(off, b)
	}
	if err != nil {
		return false
	}
	m.r.Written(off, uint64(len(b)))
	return true
}

func (l *loop) immediate(q *qp, name string, off, n uint64, imm uint32) {
	r := l.r
	r.stats.Immediates.Add(1)
	if fn := r.onImm.Load(); fn != nil {
		(*fn)(Immediate{QPN: q.qpn, MR: name, Offset: off, Length: n, Imm: imm})
	}
}

// logRefusal logs a refused request, at most once per 10 s.
func (l *loop) logRefusal(q *qp, p *roce.Packet, syn roce.Syndrome) {
	r := l.r
	if ok, sup := r.limiter.Allow(logAccess, l.now); ok {
		r.logger.LogAttrs(context.Background(), slog.LevelWarn, "rdma responder: request refused",
			slog.String("peer", q.peer.String()), slog.Uint64("qpn", uint64(q.qpn)),
			slog.String("opcode", p.BTH.Opcode.String()), slog.Uint64("psn", uint64(p.BTH.PSN)),
			slog.String("nak", syn.String()), slog.Uint64("suppressed", sup))
	}
}
