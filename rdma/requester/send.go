package requester

import (
	"context"
	"log/slog"
	"time"

	"github.com/dta-go/dta/wire/roce"
)

// window holds the packets sent and not yet acknowledged, oldest first,
// as sealed bytes ready to resend. Slot i from head has PSN una+i.
type window struct {
	slots []slot
	head  int
	n     int
	una   uint32 // PSN of the oldest packet
}

type slot struct {
	buf    []byte // sealed request; empty for the PSNs a READ reserves for its responses
	atomic bool   // a FETCH_ADD or COMPARE_SWAP whose result is awaited
	kind   Kind   // of an atomic
	id     uint64 // of an atomic or READ: its Op.ID
	// keepalive marks a keep-alive (keepAliveLoop): no op of the caller's,
	// so not counted lost when the connection goes down.
	keepalive bool

	// A READ of rn response packets takes rn slots (PSNs): the request's
	// (rk 0, which also holds the READ's state) and rn-1 reserved ones.
	read   bool
	rk, rn int
	got    int                   // request slot: response packets received, in order
	dst    []byte                // request slot: Op.Dst
	done   chan<- ReadCompletion // request slot: Op.done
}

func newWindow(n, size int) window {
	w := window{slots: make([]slot, n)}
	backing := make([]byte, n*size)
	for i := range w.slots {
		w.slots[i].buf = backing[i*size : i*size : (i+1)*size]
	}
	return w
}

func (w *window) at(i int) *slot { return &w.slots[(w.head+i)%len(w.slots)] }

// index returns the position of psn in the window, or -1.
func (w *window) index(psn uint32) int {
	d := int((psn - w.una) & roce.PSNMask)
	if d >= w.n {
		return -1
	}
	return d
}

// resetWindow empties the window, keeping its memory.
func (r *Requester) resetWindow() {
	r.win.head, r.win.n = 0, 0
	r.win.una = r.sendPSN
	r.atomicsOut = 0
	r.goBackPSN, r.goBackAt = 0, 0
	r.sinceAckReq = 0
	r.rnrAt = 0
	r.retries = 0
	r.stats.InFlight.Store(0)
	r.stats.AckedPSN.Store(r.sendPSN)
	r.stats.SendPSN.Store(r.sendPSN)
}

// Post sends ops in order as RDMA WRITE (FIRST/MIDDLE/LAST above the path
// MTU), WRITE with immediate, FETCH_ADD, COMPARE_SWAP and READ Request
// packets. Their bytes are copied: ops and their Data may be reused once
// Post returns (a Read's Dst is kept until its Completion). It returns once
// they are sent (not acknowledged: see Flush; atomics report their results
// through OnAtomic, reads through OnRead), blocking while the window or the
// atomic limit (which READs share) is full. It stops at the first op it cannot send and returns
// ErrUnknownTarget, ErrOutOfRange, ErrMisaligned or ErrBadOp (the ops
// before it are sent), or ErrNotConnected if the connection is down.
// Concurrent calls are serialised. It does not allocate once the window is
// warm.
func (r *Requester) Post(ops []Op) error { return r.post(ops, true) }

// PostDeferred is Post without the send at the end: the ops' packets are
// numbered and queued in order, and go out with the next Post, Push, full
// send queue or full window, or at the latest at the next tick of the
// retransmission timer. A caller with many small batches (a translator
// applying a datagram's reports) pays one system call per Push instead of
// one per batch.
func (r *Requester) PostDeferred(ops []Op) error { return r.post(ops, false) }

// Push sends the packets that PostDeferred queued.
func (r *Requester) Push() {
	r.mu.Lock()
	r.flushTx()
	r.mu.Unlock()
}

// post posts ops in order and, when send is set, sends what it queued.
func (r *Requester) post(ops []Op, send bool) error {
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state != stateConnected {
		return r.stateErr()
	}
	var targets []Target
	if t := r.targets.Load(); t != nil {
		targets = *t
	}
	now := time.Now().UnixNano()
	r.now = now
	for i := range ops {
		op := &ops[i]
		if int(op.Target) >= len(targets) {
			r.stats.Refused.Add(1)
			r.flushTx()
			return ErrUnknownTarget
		}
		t := &targets[op.Target]
		if err := checkOp(op, t); err != nil {
			r.stats.Refused.Add(1)
			r.flushTx()
			return err
		}
		atomic := op.atomic() || op.Kind == Read
		npk, span := 1, 1 // packets sent, PSNs taken by each
		switch {
		case op.Kind == Read:
			span = readPackets(len(op.Dst), r.pmtu)
			if span > len(r.win.slots) {
				r.stats.Refused.Add(1)
				r.flushTx()
				return ErrBadOp
			}
		case !atomic && len(op.Data) > r.pmtu:
			npk = (len(op.Data) + r.pmtu - 1) / r.pmtu
		}
		if r.bucket != nil {
			now = time.Now().UnixNano()
			if d := r.bucket.take(npk, now); d > 0 {
				r.stats.RateWaits.Add(1)
				r.flushTx()
				r.mu.Unlock()
				time.Sleep(d)
				r.mu.Lock()
				now = time.Now().UnixNano()
				r.now = now
				if r.state != stateConnected {
					return r.stateErr()
				}
			}
		}
		for k := range npk {
			for r.win.n+span > len(r.win.slots) || atomic && r.atomicsOut >= r.maxAtomic {
				r.stats.WindowFull.Add(1)
				r.flushTx()
				r.cond.Wait()
				if r.state != stateConnected {
					return r.stateErr()
				}
			}
			if op.Kind == Read {
				r.postRead(op, t, span)
				break
			}
			r.postPacket(op, t, k, npk, i == len(ops)-1 && k == npk-1)
		}
		switch op.Kind {
		case Write:
			r.stats.Writes.Add(1)
		case WriteImm:
			r.stats.WriteImms.Add(1)
		case FetchAdd:
			r.stats.FetchAdds.Add(1)
		case Read:
			r.stats.Reads.Add(1)
		default:
			r.stats.CompareSwaps.Add(1)
		}
	}
	if send {
		r.flushTx()
	}
	r.stats.InFlight.Store(int64(r.win.n))
	r.stats.SendPSN.Store(r.sendPSN)
	return nil
}

func (r *Requester) stateErr() error {
	if r.state == stateClosed {
		return ErrClosed
	}
	return ErrNotConnected
}

// checkOp validates op against its target.
func checkOp(op *Op, t *Target) error {
	n := op.Len()
	switch op.Kind {
	case Write, WriteImm, Read:
		if n > 1<<31 {
			return ErrBadOp
		}
	case FetchAdd, CompareSwap:
		if op.Offset%8 != 0 || t.VA%8 != 0 {
			return ErrMisaligned
		}
	default:
		return ErrBadOp
	}
	if op.Offset > t.Length || n > t.Length-op.Offset {
		return ErrOutOfRange
	}
	return nil
}

// postPacket encodes packet k of npk of op into the next window slot and
// queues it. Called with mu held and room in the window.
func (r *Requester) postPacket(op *Op, t *Target, k, npk int, lastOfCall bool) {
	w := &r.win
	s := w.at(w.n)
	psn := r.sendPSN
	r.sinceAckReq++
	pkt := roce.Packet{BTH: roce.BTH{PKey: roce.DefaultPKey, DestQP: r.remoteQPN, PSN: psn}}
	pkt.BTH.AckReq = lastOfCall || r.sinceAckReq >= r.cfg.AckEvery || w.n+1 == len(w.slots)
	va := t.VA + op.Offset
	switch op.Kind {
	case FetchAdd:
		pkt.BTH.Opcode = roce.OpFetchAdd
		pkt.BTH.AckReq = true
		pkt.AtomicETH = roce.AtomicETH{VA: va, RKey: t.RKey, SwapAdd: op.Add}
	case CompareSwap:
		pkt.BTH.Opcode = roce.OpCompareSwap
		pkt.BTH.AckReq = true
		pkt.AtomicETH = roce.AtomicETH{VA: va, RKey: t.RKey, SwapAdd: op.Swap, Compare: op.Compare}
	default:
		imm := op.Kind == WriteImm
		lo := k * r.pmtu
		pkt.Payload = op.Data[lo:min(lo+r.pmtu, len(op.Data))]
		reth := roce.RETH{VA: va, RKey: t.RKey, DMALen: uint32(len(op.Data))}
		switch {
		case npk == 1 && imm:
			pkt.BTH.Opcode, pkt.RETH, pkt.ImmDt.Data = roce.OpWriteOnlyImm, reth, op.Imm
		case npk == 1:
			pkt.BTH.Opcode, pkt.RETH = roce.OpWriteOnly, reth
		case k == 0:
			pkt.BTH.Opcode, pkt.RETH = roce.OpWriteFirst, reth
		case k == npk-1 && imm:
			pkt.BTH.Opcode, pkt.ImmDt.Data = roce.OpWriteLastImm, op.Imm
		case k == npk-1:
			pkt.BTH.Opcode = roce.OpWriteLast
		default:
			pkt.BTH.Opcode = roce.OpWriteMiddle
		}
	}
	if pkt.BTH.AckReq {
		r.sinceAckReq = 0
	}
	s.buf = pkt.AppendTo(s.buf[:0])
	_ = r.icrc.Seal(&r.out, s.buf)
	s.atomic, s.kind, s.id = op.atomic(), op.Kind, op.ID
	s.read, s.keepalive = false, op == &keepAliveOp
	if w.n == 0 {
		r.lastProgress = r.now
	}
	w.n++
	if s.atomic {
		r.atomicsOut++
	}
	r.sendPSN = (psn + 1) & roce.PSNMask
	r.timer.Arm()
	r.stats.Packets.Add(1)
	r.stats.Bytes.Add(uint64(len(s.buf)))
	r.send(s.buf)
}

// onResponse handles an ACK, NAK or ATOMIC ACK for the send queue. Called
// with mu held.
func (r *Requester) onResponse(p *roce.Packet) {
	if r.state != stateConnected {
		return
	}
	st := &r.stats
	psn := p.BTH.PSN
	syn := p.AETH.Syndrome
	switch syn.Type() {
	case roce.SyndromeACK:
		if p.BTH.Opcode == roce.OpAtomicACK {
			st.AtomicACKs.Add(1)
			st.LastAtomic.Store(p.AtomicAckETH.OrigData)
			r.ackThrough(psn, true, p.AtomicAckETH.OrigData)
		} else {
			st.ACKs.Add(1)
			r.ackThrough(psn, false, 0)
		}
	case roce.SyndromeRNRNAK:
		st.RNRNAKs.Add(1)
		if !r.ackThrough((psn-1)&roce.PSNMask, false, 0) {
			return
		}
		if r.win.index(psn) == 0 {
			r.rnrAt = r.now + int64(roce.RNRTimer(syn.Value()))
			r.rnrPSN = psn
			r.lastProgress = r.rnrAt
		}
	case roce.SyndromeNAK:
		if syn == roce.NAKPSNSequenceError {
			st.NAKSequence.Add(1)
		}
		if !r.ackThrough((psn-1)&roce.PSNMask, false, 0) {
			// An atomic before psn lacks its response: the resend from it,
			// under way, covers psn too (and draws this NAK again if the
			// op at psn is refused).
			return
		}
		if syn == roce.NAKPSNSequenceError {
			r.resendFrom(psn)
			return
		}
		switch syn {
		case roce.NAKInvalidRequest:
			st.NAKInvalidRequest.Add(1)
		case roce.NAKRemoteAccessError:
			st.NAKRemoteAccess.Add(1)
		default:
			st.NAKRemoteOperational.Add(1)
		}
		// The responder consumed the request without executing it (and
		// the rest of its message, if any): drop it and go on.
		if r.win.index(psn) == 0 {
			st.OpsFailed.Add(1)
			r.dropHead()
		}
		if ok, sup := r.limiter.allow(logNAK, r.now); ok {
			r.logger.LogAttrs(context.Background(), slog.LevelWarn, "rdma requester: op refused by the collector",
				slog.String("nak", syn.String()), slog.Uint64("psn", uint64(psn)), slog.Uint64("suppressed", sup))
		}
	}
}

// ackThrough completes every packet up to and including psn; an ACK for a
// PSN outside the window (old, or never sent) changes nothing. atomicACK
// says psn's own ATOMIC ACK, carrying orig, is the one completing it. An
// atomic before that whose ATOMIC ACK has not come stops it: that response
// was lost or is late, and, as IBA has a requester do for atomics and
// READs (an implied NAK), the window is resent from the atomic; the
// responder answers the duplicate from its saved result without executing
// it again. It returns false then.
func (r *Requester) ackThrough(psn uint32, atomicACK bool, orig uint64) bool {
	w := &r.win
	d := w.index(psn)
	if d < 0 {
		return true
	}
	stopped := false
	freed := 0
	for i := 0; i <= d; i++ {
		s := w.at(0)
		if s.read {
			stopped = true // its responses complete it, not an ACK
			break
		}
		if s.atomic {
			if !atomicACK || i != d {
				stopped = true
				break
			}
			r.atomicsOut--
			s.atomic = false
			r.complete(s, orig, nil)
		}
		w.head = (w.head + 1) % len(w.slots)
		w.n--
		freed++
	}
	if freed > 0 {
		w.una = (w.una + uint32(freed)) & roce.PSNMask
		r.retries = 0
		r.lastProgress = r.now
		r.stats.InFlight.Store(int64(w.n))
		r.stats.AckedPSN.Store(w.una)
		r.cond.Broadcast()
	}
	if stopped {
		read := w.at(0).read
		if r.resendFrom(w.una) {
			if read {
				r.stats.ReadsLost.Add(1)
			} else {
				r.stats.AtomicsLost.Add(1)
			}
		}
	}
	return !stopped
}

// dropHead removes the oldest op, refused by the responder, from the
// window; an atomic or READ completes with ErrRefused.
func (r *Requester) dropHead() {
	w := &r.win
	s := w.at(0)
	if s.read {
		r.completeRead(ErrRefused)
		return
	}
	if s.atomic {
		r.atomicsOut--
		s.atomic = false
		r.complete(s, 0, ErrRefused)
	}
	r.freeHead(1)
}

// freeHead removes the n oldest slots from the window: their ops are done.
func (r *Requester) freeHead(n int) {
	w := &r.win
	w.head = (w.head + n) % len(w.slots)
	w.n -= n
	w.una = (w.una + uint32(n)) & roce.PSNMask
	r.retries = 0
	r.lastProgress = r.now
	r.stats.InFlight.Store(int64(w.n))
	r.stats.AckedPSN.Store(w.una)
	r.cond.Broadcast()
}

// complete hands an atomic's outcome to OnAtomic's function.
func (r *Requester) complete(s *slot, orig uint64, err error) {
	if fn := r.onAtomic.Load(); fn != nil {
		(*fn)(Completion{ID: s.id, Kind: s.kind, Orig: orig, Err: err})
	}
}

// failPending completes every atomic and READ still in the window with
// err (ErrNotConnected, or errTimedOut): the connection is gone.
func (r *Requester) failPending(err error) {
	w := &r.win
	for i := range w.n {
		s := w.at(i)
		switch {
		case s.atomic:
			s.atomic = false
			r.complete(s, 0, err)
		case s.read && s.rk == 0:
			r.finishRead(s, err)
		}
		s.read = false
	}
	r.atomicsOut = 0
}

// resendFrom resends go-back-N from psn, unless a resend from psn began
// less than a timeout ago (the responder NAKs a gap once: a second NAK, or
// a second implied NAK, for the same PSN is a network duplicate or the
// echo of the resend under way). It reports whether it resent.
func (r *Requester) resendFrom(psn uint32) bool {
	if r.goBackPSN == psn && r.now-r.goBackAt < int64(r.cfg.Timeout) {
		return false
	}
	r.goBackN(psn)
	return true
}

// goBackN resends every packet from psn on, asking for an ACK on the last.
func (r *Requester) goBackN(psn uint32) {
	w := &r.win
	d := w.index(psn)
	if d < 0 {
		return
	}
	r.goBackPSN, r.goBackAt = psn, r.now
	sent := 0
	for i := d; i < w.n; i++ {
		s := w.at(i)
		if len(s.buf) == 0 {
			continue // a PSN a READ reserved for a response
		}
		if i == w.n-1 && s.buf[8]&0x80 == 0 {
			s.buf[8] |= 0x80 // AckReq
			_ = r.icrc.Seal(&r.out, s.buf)
		}
		r.send(s.buf)
		sent++
	}
	r.stats.Retransmits.Add(uint64(sent))
	r.lastProgress = r.now
}

// checkTimeouts resends after an RNR delay or an ACK timeout, and declares
// the connection lost after Retries timeouts without progress.
func (r *Requester) checkTimeouts() {
	if r.state != stateConnected || r.win.n == 0 {
		return
	}
	if r.rnrAt != 0 {
		if r.now >= r.rnrAt {
			r.rnrAt = 0
			r.goBackN(r.rnrPSN)
		}
		return
	}
	if time.Duration(r.now-r.lastProgress) <= r.cfg.Timeout {
		return
	}
	r.retries++
	r.stats.Timeouts.Add(1)
	if r.retries > r.cfg.Retries {
		r.failWith("ACK timeout", errTimedOut)
		return
	}
	r.goBackN(r.win.una)
}
