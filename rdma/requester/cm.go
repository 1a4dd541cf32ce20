package requester

import (
	"context"
	"fmt"
	"time"

	"github.com/dta-go/dta/wire/roce"
)

// The active side of the CM handshake, and the receive queue that takes
// the advertisement SEND.
//
//	REQ ──(CMTimeout, CMRetries)──▶ REP ──▶ RTU ──(CMTimeout: RTU again)──▶ advertisement complete ──▶ connected
//	                           └──▶ REJ ──▶ *RejectError
//	connected ──(Retries ACK timeouts, DREQ or REJ from the responder)──▶ down ──(backoff)──▶ REQ ...

// cmEvent is a CM message for the current handshake, passed from the
// receive goroutine to connect.
type cmEvent struct {
	attr      roce.AttrID
	tid       uint64
	qpn       uint32
	psn       uint32
	resources uint8
	commID    uint32
	reason    roce.RejectReason
}

// connect runs one handshake on the requester's socket with a fresh QP and
// returns the advertisement. The state is left stateConnecting on success.
func (r *Requester) connect(ctx context.Context) ([]byte, error) {
	r.mu.Lock()
	if r.state == stateClosed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	r.state = stateConnecting
	r.qpn = randomU32()&roce.PSNMask | 2 // never 0 or 1
	r.tid = randomU64()
	r.localCommID = randomU32()
	r.rqPSN = randomU32() & roce.PSNMask
	r.rqMSN, r.rqNAKSent, r.rqInMsg = 0, false, false
	r.advBuf, r.advErr, r.advDone = r.advBuf[:0], nil, false
	r.resetWindow()
	tid := r.tid
	r.mu.Unlock()
	drain(r.cmEvents)
	drainSignal(r.advCh)

	timer := time.NewTimer(r.cfg.CMTimeout)
	defer timer.Stop()
	wait := func() (cmEvent, bool, error) {
		timer.Reset(r.cfg.CMTimeout)
		for {
			select {
			case ev := <-r.cmEvents:
				if ev.tid != tid {
					continue
				}
				return ev, true, nil
			case <-r.advCh:
				return cmEvent{}, false, nil
			case <-timer.C:
				return cmEvent{}, false, nil
			case <-ctx.Done():
				return cmEvent{}, false, ctx.Err()
			case <-r.done:
				return cmEvent{}, false, ErrClosed
			}
		}
	}

	// REQ until REP or REJ.
	var rep cmEvent
	for attempt := 0; ; attempt++ {
		if attempt > r.cfg.CMRetries {
			return nil, fmt.Errorf("no REP after %d REQs: %w", attempt, ErrTimeout)
		}
		r.mu.Lock()
		r.sendREQ()
		r.flushTx()
		r.mu.Unlock()
		ev, ok, err := wait()
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if ev.attr == roce.AttrREJ {
			return nil, &RejectError{Reason: ev.reason}
		}
		if ev.attr == roce.AttrREP {
			rep = ev
			break
		}
	}
	r.mu.Lock()
	r.remoteQPN = rep.qpn
	r.remoteCommID = rep.commID
	r.sendPSN = rep.psn
	r.maxAtomic = min(r.cfg.MaxAtomic, max(int(rep.resources), 1))
	r.resetWindow()
	r.mu.Unlock()

	// RTU until the advertisement is complete; a long advertisement that
	// keeps arriving does not use up the retries.
	got := 0
	for attempt := 0; ; attempt++ {
		r.mu.Lock()
		done, advErr := r.advDone, r.advErr
		if len(r.advBuf) > got {
			got, attempt = len(r.advBuf), 0
		}
		if advErr == nil && !done {
			r.sendRTU()
			r.flushTx()
		}
		r.mu.Unlock()
		if advErr != nil {
			return nil, advErr
		}
		if done {
			break
		}
		if attempt > r.cfg.CMRetries {
			return nil, fmt.Errorf("no advertisement after the RTU: %w", ErrTimeout)
		}
		ev, ok, err := wait()
		if err != nil {
			return nil, err
		}
		if ok && ev.attr == roce.AttrREJ {
			return nil, &RejectError{Reason: ev.reason}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state != stateConnecting {
		return nil, ErrClosed
	}
	r.adv = append([]byte(nil), r.advBuf...)
	return r.adv, nil
}

func drain(c chan cmEvent) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

func drainSignal(c chan struct{}) {
	select {
	case <-c:
	default:
	}
}

// sendMAD queues the MAD in r.cmOut. Called with mu held.
func (r *Requester) sendMAD() {
	pkt := roce.CMPacket(0, r.cmOut.AppendTo(r.mad[:0]))
	b := pkt.AppendTo(r.tx.Buf())
	if r.out.Seal(b) == nil {
		r.send(b)
	}
}

func (r *Requester) sendREQ() {
	m := &r.cmOut
	*m = roce.CM{Header: roce.CMHeader(roce.AttrREQ, r.tid)}
	q := &m.REQ
	mtu, _ := roce.MTUFromBytes(r.pmtu)
	cmTimeout := timeoutCode(r.cfg.CMTimeout)
	*q = roce.ConnectRequest{
		LocalCommID:             r.localCommID,
		ServiceID:               r.cfg.ServiceID,
		LocalCAGUID:             r.guid,
		LocalQPN:                r.qpn,
		InitiatorDepth:          uint8(r.cfg.MaxAtomic),
		RemoteCMResponseTimeout: cmTimeout,
		StartingPSN:             r.rqPSN,
		LocalCMResponseTimeout:  cmTimeout,
		RetryCount:              uint8(min(r.cfg.Retries, 7)),
		PKey:                    roce.DefaultPKey,
		PathMTU:                 mtu,
		RNRRetryCount:           7,
		MaxCMRetries:            uint8(min(r.cfg.CMRetries, 15)),
		Primary: roce.CMPath{
			LocalLID:        0xFFFF,
			RemoteLID:       0xFFFF,
			LocalGID:        roce.GIDFromAddr(r.out.Src),
			RemoteGID:       roce.GIDFromAddr(r.out.Dst),
			HopLimit:        roce.DefaultHopLimit,
			LocalACKTimeout: timeoutCode(r.cfg.Timeout),
		},
	}
	h := roce.IPCMHeader{SrcPort: r.out.SrcPort, Src: r.out.Src, Dst: r.out.Dst}
	h.AppendTo(q.PrivateData[:0])
	r.sendMAD()
}

func (r *Requester) sendRTU() {
	m := &r.cmOut
	*m = roce.CM{Header: roce.CMHeader(roce.AttrRTU, r.tid)}
	m.RTU.LocalCommID = r.localCommID
	m.RTU.RemoteCommID = r.remoteCommID
	r.sendMAD()
}

func (r *Requester) sendDREQ() {
	m := &r.cmOut
	*m = roce.CM{Header: roce.CMHeader(roce.AttrDREQ, randomU64())}
	m.DREQ.LocalCommID = r.localCommID
	m.DREQ.RemoteCommID = r.remoteCommID
	m.DREQ.RemoteQPN = r.remoteQPN
	r.sendMAD()
}

// handleCM handles a MAD from the responder. Called with mu held.
func (r *Requester) handleCM(p *roce.Packet) {
	if p.BTH.Opcode != roce.OpUDSendOnly || p.DETH.QKey != roce.GSIQKey || r.cm.Decode(p.Payload) != nil {
		r.stats.Stray.Add(1)
		return
	}
	m := &r.cm
	ev := cmEvent{attr: m.Header.AttrID, tid: m.Header.TID}
	switch m.Header.AttrID {
	case roce.AttrREP:
		if m.REP.RemoteCommID != r.localCommID {
			r.stats.Stray.Add(1)
			return
		}
		ev.qpn, ev.psn, ev.resources, ev.commID = m.REP.LocalQPN, m.REP.StartingPSN, m.REP.ResponderResources, m.REP.LocalCommID
	case roce.AttrREJ:
		if m.REJ.RemoteCommID != r.localCommID {
			r.stats.Stray.Add(1)
			return
		}
		ev.reason = m.REJ.Reason
		if r.state == stateConnected && ev.tid == r.tid {
			r.fail("rejected by the collector: " + ev.reason.String())
			return
		}
	case roce.AttrDREQ:
		d := m.DREQ
		mine := d.RemoteCommID == r.localCommID
		out := &r.cmOut
		*out = roce.CM{Header: roce.CMHeader(roce.AttrDREP, m.Header.TID)}
		out.DREP.LocalCommID = d.RemoteCommID
		out.DREP.RemoteCommID = d.LocalCommID
		r.sendMAD()
		if mine {
			r.fail("disconnected by the collector")
		}
		return
	case roce.AttrDREP:
		select {
		case r.drep <- struct{}{}:
		default:
		}
		return
	default:
		return
	}
	select {
	case r.cmEvents <- ev:
	default:
	}
}

// onSend takes a packet of the advertisement SEND: in order, appended;
// duplicates re-ACKed; a gap NAKed once. Called with mu held.
func (r *Requester) onSend(p *roce.Packet) {
	psn := p.BTH.PSN
	switch roce.ComparePSN(psn, r.rqPSN) {
	case 1:
		if !r.rqNAKSent {
			r.rqNAKSent = true
			r.ackSend(roce.NAKPSNSequenceError, r.rqPSN)
		}
		return
	case -1:
		r.ackSend(roce.ACKUnlimited, (r.rqPSN-1)&roce.PSNMask)
		return
	}
	r.rqNAKSent = false
	op := p.BTH.Opcode
	start := op == roce.OpSendFirst || op == roce.OpSendOnly
	last := op == roce.OpSendLast || op == roce.OpSendOnly
	if start == r.rqInMsg || r.advDone {
		// Out of message order, or a SEND after the advertisement: refused.
		r.rqPSN = (psn + 1) & roce.PSNMask
		r.ackSend(roce.NAKInvalidRequest, psn)
		return
	}
	if len(r.advBuf)+len(p.Payload) > r.cfg.MaxAdvertisement {
		r.rqPSN = (psn + 1) & roce.PSNMask
		r.ackSend(roce.NAKRemoteOperationalError, psn)
		r.advErr = fmt.Errorf("%w: more than %d bytes", ErrAdvertisementTooLarge, r.cfg.MaxAdvertisement)
		signal(r.advCh)
		return
	}
	r.advBuf = append(r.advBuf, p.Payload...)
	r.rqInMsg = !last
	r.rqPSN = (psn + 1) & roce.PSNMask
	if last {
		r.rqMSN = (r.rqMSN + 1) & roce.PSNMask
		r.advDone = true
		signal(r.advCh)
	}
	if p.BTH.AckReq || last {
		r.ackSend(roce.ACKUnlimited, psn)
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// ackSend acknowledges the responder's SEND packets.
func (r *Requester) ackSend(syn roce.Syndrome, psn uint32) {
	pkt := roce.Packet{
		BTH:  roce.BTH{Opcode: roce.OpACK, PKey: roce.DefaultPKey, DestQP: r.remoteQPN, PSN: psn},
		AETH: roce.AETH{Syndrome: syn, MSN: r.rqMSN},
	}
	b := pkt.AppendTo(r.tx.Buf())
	if r.out.Seal(b) == nil {
		r.send(b)
	}
}
