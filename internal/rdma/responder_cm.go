package rdma

import (
	"net/netip"
	"time"

	"github.com/dta-go/dta/internal/admit"
	"github.com/dta-go/dta/wire/roce"
)

// The passive side of the CM handshake and the advertisement SEND.
//
//	REQ ──▶ validate ──▶ REJ (bad service ID, transport, MTU; table full)
//	                └──▶ new QP, REP ──▶ half-open ──RTU or first request──▶ established: post advertisement
//	REQ again (same TID) ──▶ the same REP;  REQ from the same address, new TID ──▶ old QP dropped, fresh QP
//	DREQ ──▶ DREP, QP dropped
//
// All of it runs with mu and the lock of the loop owning the QP concerned
// held: a MAD a loop receives about another loop's QP is run by runSlow.

func (l *loop) handleCM(p *roce.Packet, b []byte, from netip.AddrPort, dst netip.Addr) {
	r := l.r
	st := &r.stats
	if p.BTH.Opcode != roce.OpUDSendOnly || p.DETH.QKey != roce.GSIQKey {
		st.CMDropped.Add(1)
		return
	}
	if l.cm.Decode(p.Payload) != nil {
		st.CMDropped.Add(1)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// A MAD about a QP another loop owns (or, for a REQ, a full table,
	// where reclaiming may pick any loop's QP) runs with every loop lock
	// held, after the batch.
	peerQP := r.byPeer[from]
	foreign := peerQP != nil && peerQP.owner != l
	if !l.all {
		switch l.cm.Header.AttrID {
		case roce.AttrREQ:
			if foreign || len(r.qps) >= r.cfg.MaxQPs {
				l.deferPacket(b, from, dst)
				return
			}
		case roce.AttrRTU, roce.AttrDREQ, roce.AttrREJ:
			if foreign {
				l.deferPacket(b, from, dst)
				return
			}
		}
	}
	env := roce.Envelope{Src: dst, Dst: from.Addr(), SrcPort: r.local.Port(), DstPort: from.Port()}
	tid := l.cm.Header.TID
	switch l.cm.Header.AttrID {
	case roce.AttrREQ:
		l.onREQ(&l.cm.REQ, tid, from, &env)
	case roce.AttrRTU:
		q := peerQP
		if q == nil || l.cm.RTU.RemoteCommID != q.localCommID {
			st.CMDropped.Add(1)
			return
		}
		q.lastActive = l.now
		if q.state == qpHalfOpen {
			l.establish(q)
		}
	case roce.AttrDREQ:
		st.CMDisconnects.Add(1)
		d := &l.cm.DREQ
		if q := peerQP; q != nil && d.RemoteCommID == q.localCommID {
			r.logger.Info("rdma responder: disconnected by peer", "peer", from.String(), "qpn", q.qpn)
			r.destroy(q)
		}
		// A DREQ is always answered, even for a connection already gone.
		m := &l.cmOut
		*m = roce.CM{Header: roce.CMHeader(roce.AttrDREP, tid)}
		m.DREP.LocalCommID = d.RemoteCommID
		m.DREP.RemoteCommID = d.LocalCommID
		l.sendCM(&env, m, from)
	case roce.AttrREJ:
		if q := peerQP; q != nil && l.cm.REJ.RemoteCommID == q.localCommID {
			r.destroy(q)
			return
		}
		st.CMDropped.Add(1)
	default: // DREP, MRA: nothing to do
		st.CMDropped.Add(1)
	}
}

// refuseCM answers a CM MAD from a source outside AllowTranslators: a REQ
// gets a REJ "consumer defined" (what rdma_reject in an rdma_cm application
// sends: the requester stops at once instead of retrying), anything else is
// dropped. Nothing about the source is kept.
func (l *loop) refuseCM(p *roce.Packet, from netip.AddrPort, dst netip.Addr) {
	r := l.r
	st := &r.stats
	st.NotAllowed.Add(1)
	if p.BTH.Opcode != roce.OpUDSendOnly || p.DETH.QKey != roce.GSIQKey || l.cm.Decode(p.Payload) != nil ||
		l.cm.Header.AttrID != roce.AttrREQ {
		return
	}
	st.CMRejectNotAllowed.Add(1)
	env := roce.Envelope{Src: dst, Dst: from.Addr(), SrcPort: r.local.Port(), DstPort: from.Port()}
	l.reject(&env, &l.cm.REQ, l.cm.Header.TID, from, roce.RejectConsumerDefined)
}

// SetAllowTranslators replaces the allowlist of requesters (nil or empty:
// every source). Connections of peers it no longer allows are torn down at
// once (a DREQ is sent to each), so a revoked translator cannot go on
// writing over a connection made before.
func (r *Responder) SetAllowTranslators(p *admit.Prefixes) {
	if p.Any() {
		p = nil
	}
	r.allow.Store(p)
	if p == nil {
		return
	}
	r.lockAll()
	defer r.unlockAll()
	if r.shut {
		return
	}
	l := r.loops[0] // sends for every loop
	for _, q := range r.qps {
		if p.Contains(q.peer.Addr()) {
			continue
		}
		r.logger.Warn("rdma responder: connection closed: its peer is no longer in allow_translators", "peer", q.peer.String(), "qpn", q.qpn)
		r.stats.QPsRevoked.Add(1)
		if q.state == qpEstablished {
			l.sendDREQ(q)
		}
		r.destroy(q)
	}
	l.flush()
}

// AllowTranslators returns the allowlist in force (nil: every source).
func (r *Responder) AllowTranslators() *admit.Prefixes { return r.allow.Load() }

func (l *loop) onREQ(req *roce.ConnectRequest, tid uint64, from netip.AddrPort, env *roce.Envelope) {
	r := l.r
	st := &r.stats
	st.CMRequests.Add(1)
	if old := r.byPeer[from]; old != nil {
		if old.tid == tid && old.remoteCommID == req.LocalCommID {
			st.CMDuplicateRequests.Add(1)
			l.queue(&old.out, old.rep, from)
			return
		}
		// The requester restarted (or reconnects): its old QP is gone.
		r.logger.Info("rdma responder: new REQ replaces a connection", "peer", from.String(), "old_qpn", old.qpn)
		st.QPsReclaimed.Add(1)
		r.destroy(old)
	}
	pmtu := req.PathMTU.Bytes()
	switch {
	case req.ServiceID != r.cfg.ServiceID:
		st.CMRejectService.Add(1)
		l.reject(env, req, tid, from, roce.RejectInvalidServiceID)
		return
	case req.TransportServiceType != 0:
		st.CMRejectInvalid.Add(1)
		l.reject(env, req, tid, from, roce.RejectInvalidTransportType)
		return
	case pmtu == 0 || pmtu > r.cfg.MTU:
		st.CMRejectInvalid.Add(1)
		l.reject(env, req, tid, from, roce.RejectInvalidMTU)
		return
	case len(r.qps) >= r.cfg.MaxQPs && !l.reclaim():
		st.CMRejectResources.Add(1)
		l.reject(env, req, tid, from, roce.RejectNoResources)
		return
	}
	res := r.cfg.AtomicDepth
	if d := int(req.InitiatorDepth); d > 0 && d < res {
		res = d
	}
	q := &qp{
		qpn:          r.newQPN(),
		remoteQPN:    req.LocalQPN & roce.PSNMask,
		peer:         from,
		owner:        l,
		out:          *env,
		pmtu:         pmtu,
		created:      l.now,
		lastActive:   l.now,
		tid:          tid,
		localCommID:  randomU32(),
		remoteCommID: req.LocalCommID,
		ePSN:         r.newPSN(),
		advPSN:       req.StartingPSN & roce.PSNMask,
		atomics:      make([]atomicResult, r.cfg.AtomicDepth),
		depth:        res,
	}
	m := &l.cmOut
	*m = roce.CM{Header: roce.CMHeader(roce.AttrREP, tid)}
	m.REP = roce.ConnectReply{
		LocalCommID:        q.localCommID,
		RemoteCommID:       req.LocalCommID,
		LocalQPN:           q.qpn,
		StartingPSN:        q.ePSN,
		ResponderResources: uint8(res),
		TargetACKDelay:     0,
		RNRRetryCount:      7,
		LocalCAGUID:        r.guid,
	}
	pkt := roce.CMPacket(0, m.AppendTo(l.mad[:0]))
	q.rep = pkt.AppendTo(make([]byte, 0, pkt.Len()))
	if q.out.Seal(q.rep) != nil {
		return
	}
	r.qps[q.qpn] = q
	r.byPeer[from] = q
	l.qps[q.qpn] = q
	r.timer.Arm() // the RTU has a deadline
	st.QPs.Add(1)
	st.CMReplies.Add(1)
	l.queue(&q.out, q.rep, from)
	r.logger.Info("rdma responder: connection requested", "peer", from.String(), "qpn", q.qpn,
		"remote_qpn", q.remoteQPN, "pmtu", pmtu, "responder_resources", res)
}

// reject answers a REQ with a REJ.
func (l *loop) reject(env *roce.Envelope, req *roce.ConnectRequest, tid uint64, to netip.AddrPort, why roce.RejectReason) {
	r := l.r
	if ok, sup := r.limiter.Allow(logCM, l.now); ok {
		r.logger.Warn("rdma responder: connection rejected", "peer", to.String(), "reason", why.String(), "suppressed", sup)
	}
	m := &l.cmOut
	*m = roce.CM{Header: roce.CMHeader(roce.AttrREJ, tid)}
	m.REJ.RemoteCommID = req.LocalCommID
	m.REJ.MessageRejected = roce.CMMsgREQ
	m.REJ.Reason = why
	l.sendCM(env, m, to)
}

// sendCM queues the MAD m in a UD SEND to QP1.
func (l *loop) sendCM(env *roce.Envelope, m *roce.CM, to netip.AddrPort) {
	pkt := roce.CMPacket(0, m.AppendTo(l.mad[:0]))
	b := pkt.AppendTo(l.tx.Buf())
	if env.Seal(b) != nil {
		return
	}
	l.queue(env, b, to)
}

func (l *loop) sendDREQ(q *qp) {
	m := &l.cmOut
	*m = roce.CM{Header: roce.CMHeader(roce.AttrDREQ, randomU64())}
	m.DREQ.LocalCommID = q.localCommID
	m.DREQ.RemoteCommID = q.remoteCommID
	m.DREQ.RemoteQPN = q.remoteQPN
	l.sendCM(&q.out, m, q.peer)
}

func (r *Responder) newQPN() uint32 {
	for {
		n := randomU32() & roce.PSNMask
		if n > roce.GSIQP && r.qps[n] == nil {
			return n
		}
	}
}

func (r *Responder) newPSN() uint32 {
	if r.startPSN != nil {
		return r.startPSN() & roce.PSNMask
	}
	return randomU32() & roce.PSNMask
}

// reclaim drops the longest-idle QP if it has been idle for more than
// IdleTimeout (half-open ones for more than HandshakeTimeout), making room
// for a new connection. It looks at every loop's QPs: called with every
// lock held (handleCM defers a REQ to a full table until it holds them).
func (l *loop) reclaim() bool {
	r := l.r
	var victim *qp
	for _, q := range r.qps {
		if victim == nil || q.lastActive < victim.lastActive {
			victim = q
		}
	}
	if victim == nil {
		return false
	}
	idle := time.Duration(l.now - victim.lastActive)
	if victim.state == qpHalfOpen && idle > r.cfg.HandshakeTimeout ||
		r.cfg.IdleTimeout > 0 && idle > r.cfg.IdleTimeout {
		r.logger.Info("rdma responder: idle connection reclaimed", "peer", victim.peer.String(), "qpn", victim.qpn, "idle", idle)
		r.stats.QPsReclaimed.Add(1)
		r.destroy(victim)
		return true
	}
	return false
}

// destroy removes q from the tables. Called with mu and q's owner loop's
// lock held.
func (r *Responder) destroy(q *qp) {
	if q.dead {
		return
	}
	q.dead = true
	if q.owner.last == q {
		q.owner.last = nil // not kept alive by the loop's memory of it
	}
	delete(q.owner.qps, q.qpn)
	delete(r.qps, q.qpn)
	if r.byPeer[q.peer] == q {
		delete(r.byPeer, q.peer)
	}
	r.stats.QPs.Add(-1)
}

// establish completes the handshake of q and posts the advertisement.
func (l *loop) establish(q *qp) {
	r := l.r
	q.state = qpEstablished
	r.stats.CMReadyToUse.Add(1)
	adv := r.advertisement()
	n := max(1, (len(adv)+q.pmtu-1)/q.pmtu)
	q.adv = make([][]byte, n)
	for i := range n {
		op := roce.OpSendMiddle
		switch {
		case n == 1:
			op = roce.OpSendOnly
		case i == 0:
			op = roce.OpSendFirst
		case i == n-1:
			op = roce.OpSendLast
		}
		chunk := adv[min(i*q.pmtu, len(adv)):min((i+1)*q.pmtu, len(adv))]
		pkt := roce.Packet{
			BTH:     roce.BTH{Opcode: op, PKey: roce.DefaultPKey, DestQP: q.remoteQPN, PSN: (q.advPSN + uint32(i)) & roce.PSNMask, AckReq: true},
			Payload: chunk,
		}
		b := pkt.AppendTo(make([]byte, 0, pkt.Len()))
		if q.out.Seal(b) != nil {
			return
		}
		q.adv[i] = b
	}
	r.logger.Info("rdma responder: connection established", "peer", q.peer.String(), "qpn", q.qpn, "advertisement_bytes", len(adv))
	l.pumpAdv(q)
}

// pumpAdv sends advertisement packets up to the window.
func (l *loop) pumpAdv(q *qp) {
	r := l.r
	for q.advNext < len(q.adv) && q.advNext-q.advUna < advWindow {
		l.queueQP(q, q.adv[q.advNext])
		q.advNext++
		q.advSentAt = l.now
	}
	if q.advUna < len(q.adv) {
		r.timer.Arm() // their acknowledgement has a deadline
	}
}

// advResponse handles the requester's ACK or NAK of advertisement packets.
func (l *loop) advResponse(q *qp, p *roce.Packet) {
	r := l.r
	if len(q.adv) == 0 {
		return
	}
	idx := int((p.BTH.PSN - q.advPSN) & roce.PSNMask)
	syn := p.AETH.Syndrome
	switch {
	case syn.IsACK():
		if idx < len(q.adv) && idx >= q.advUna {
			q.advUna = idx + 1
			q.advNext = max(q.advNext, q.advUna)
			q.advRetries = 0
			q.advSentAt = l.now
		}
	case syn == roce.NAKPSNSequenceError:
		if idx <= q.advNext && idx >= q.advUna {
			q.advUna = idx
			q.advNext = idx
		}
	default:
		r.logger.Warn("rdma responder: advertisement refused by the requester", "peer", q.peer.String(), "nak", syn.String())
		r.mu.Lock()
		r.destroy(q)
		r.mu.Unlock()
		return
	}
	l.pumpAdv(q)
}

// expire retransmits unacknowledged advertisement packets and drops
// half-open QPs whose RTU never came, of every loop. Called with every lock
// held, on the first loop (which sends for all).
func (l *loop) expire() {
	r := l.r
	for _, q := range r.qps {
		age := time.Duration(l.now - q.created)
		switch {
		case q.state == qpHalfOpen && age > r.cfg.HandshakeTimeout:
			r.stats.QPsTimedOut.Add(1)
			r.destroy(q)
		case q.state == qpEstablished && q.advUna < len(q.adv) && time.Duration(l.now-q.advSentAt) > r.cfg.Timeout:
			q.advRetries++
			if q.advRetries > r.cfg.Retries {
				r.logger.Warn("rdma responder: advertisement never acknowledged; dropping the connection", "peer", q.peer.String(), "qpn", q.qpn)
				r.stats.QPsTimedOut.Add(1)
				r.destroy(q)
				continue
			}
			r.stats.AdvertisementRetransmits.Add(uint64(min(q.advNext-q.advUna, advWindow)))
			q.advNext = q.advUna
			l.pumpAdv(q)
		}
	}
}
