package rdma

import (
	"context"
	"log/slog"
	"time"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/wire/roce"
)

var _ memop.Sink = (*Requester)(nil)

// window holds the packets sent and not yet acknowledged, oldest first,
// as sealed bytes ready to resend. Slot i from head has PSN una+i.
type window struct {
	slots []slot
	head  int
	n     int
	una   uint32 // PSN of the oldest packet
}

type slot struct {
	buf    []byte
	atomic bool
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
	r.sinceAckReq = 0
	r.rnrAt = 0
	r.retries = 0
	r.stats.InFlight.Store(0)
	r.stats.AckedPSN.Store(r.sendPSN)
	r.stats.SendPSN.Store(r.sendPSN)
}

// Apply sends ops in order as RDMA WRITE (FIRST/MIDDLE/LAST above the path
// MTU), WRITE with immediate and FETCH_ADD packets. It returns once they
// are sent (not acknowledged: see Flush), blocking while the window or the
// atomic limit is full. It stops at the first op it cannot send and
// returns ErrUnknownTarget, ErrOutOfRange, ErrMisaligned or ErrBadOp (the
// ops before it are sent), or ErrNotConnected if the connection is down.
// It is safe for concurrent use; concurrent calls are serialised.
func (r *Requester) Apply(ops []memop.Op) error { return r.apply(ops, true) }

// ApplyDeferred is Apply without the send at the end (memop.Deferrer): the
// ops' packets are numbered and queued in order, and go out with the next
// Apply, Push, full send queue or full window, or at the latest at the next
// tick of the retransmission timer.
func (r *Requester) ApplyDeferred(ops []memop.Op) error { return r.apply(ops, false) }

// Push sends the packets that ApplyDeferred queued.
func (r *Requester) Push() {
	r.mu.Lock()
	r.flushTx()
	r.mu.Unlock()
}

var _ memop.Deferrer = (*Requester)(nil)

// apply posts ops in order and, when send is set, sends what it queued.
func (r *Requester) apply(ops []memop.Op, send bool) error {
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
		if int(op.Store) >= len(targets) {
			r.stats.Refused.Add(1)
			r.flushTx()
			return ErrUnknownTarget
		}
		t := &targets[op.Store]
		if err := checkOp(op, t); err != nil {
			r.stats.Refused.Add(1)
			r.flushTx()
			return err
		}
		npk := 1
		if op.Kind != memop.FetchAdd && len(op.Data) > r.pmtu {
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
		atomic := op.Kind == memop.FetchAdd
		for k := range npk {
			for r.win.n == len(r.win.slots) || atomic && r.atomicsOut >= r.maxAtomic {
				r.stats.WindowFull.Add(1)
				r.flushTx()
				r.cond.Wait()
				if r.state != stateConnected {
					return r.stateErr()
				}
			}
			r.post(op, t, k, npk, i == len(ops)-1 && k == npk-1)
		}
		switch op.Kind {
		case memop.Write:
			r.stats.Writes.Add(1)
		case memop.WriteImm:
			r.stats.WriteImms.Add(1)
		default:
			r.stats.FetchAdds.Add(1)
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
func checkOp(op *memop.Op, t *Target) error {
	n := op.Len()
	switch op.Kind {
	case memop.Write, memop.WriteImm:
		if n > 1<<31 {
			return ErrBadOp
		}
	case memop.FetchAdd:
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

// post encodes packet k of npk of op into the next window slot and queues
// it. Called with mu held and room in the window.
func (r *Requester) post(op *memop.Op, t *Target, k, npk int, lastOfCall bool) {
	w := &r.win
	s := w.at(w.n)
	psn := r.sendPSN
	r.sinceAckReq++
	pkt := roce.Packet{BTH: roce.BTH{PKey: roce.DefaultPKey, DestQP: r.remoteQPN, PSN: psn}}
	pkt.BTH.AckReq = lastOfCall || r.sinceAckReq >= r.cfg.AckEvery || w.n+1 == len(w.slots)
	va := t.VA + op.Offset
	if op.Kind == memop.FetchAdd {
		pkt.BTH.Opcode = roce.OpFetchAdd
		pkt.BTH.AckReq = true
		pkt.AtomicETH = roce.AtomicETH{VA: va, RKey: t.RKey, SwapAdd: op.Delta}
	} else {
		imm := op.Kind == memop.WriteImm
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
	_ = r.out.Seal(s.buf)
	s.atomic = op.Kind == memop.FetchAdd
	if w.n == 0 {
		r.lastProgress = r.now
	}
	w.n++
	if s.atomic {
		r.atomicsOut++
	}
	r.sendPSN = (psn + 1) & roce.PSNMask
	r.timer.arm()
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
			r.ackThrough(psn, true)
		} else {
			st.ACKs.Add(1)
			r.ackThrough(psn, false)
		}
	case roce.SyndromeRNRNAK:
		st.RNRNAKs.Add(1)
		r.ackThrough((psn-1)&roce.PSNMask, false)
		if r.win.index(psn) == 0 {
			r.rnrAt = r.now + int64(roce.RNRTimer(syn.Value()))
			r.rnrPSN = psn
			r.lastProgress = r.rnrAt
		}
	case roce.SyndromeNAK:
		r.ackThrough((psn-1)&roce.PSNMask, false)
		if syn == roce.NAKPSNSequenceError {
			st.NAKSequence.Add(1)
			// The responder NAKs a gap once; a second NAK for the same PSN
			// within a timeout is a duplicate, and the resend is under way.
			if r.goBackPSN == psn && r.now-r.goBackAt < int64(r.cfg.Timeout) {
				return
			}
			r.goBackN(psn)
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
			r.ackThrough(psn, false)
		}
		if ok, sup := r.limiter.Allow(logNAK, r.now); ok {
			r.logger.LogAttrs(context.Background(), slog.LevelWarn, "rdma requester: op refused by the collector",
				slog.String("nak", syn.String()), slog.Uint64("psn", uint64(psn)), slog.Uint64("suppressed", sup))
		}
	}
}

// ackThrough completes every packet up to and including psn. An ACK
// for a PSN outside the window (old, or never sent) changes nothing.
// atomicACK says psn's own ATOMIC ACK is the one completing it.
func (r *Requester) ackThrough(psn uint32, atomicACK bool) {
	w := &r.win
	d := w.index(psn)
	if d < 0 {
		return
	}
	for i := 0; i <= d; i++ {
		s := w.at(0)
		if s.atomic {
			r.atomicsOut--
			if !atomicACK || i != d {
				r.stats.AtomicsLost.Add(1)
			}
		}
		w.head = (w.head + 1) % len(w.slots)
		w.n--
	}
	w.una = (psn + 1) & roce.PSNMask
	r.retries = 0
	r.lastProgress = r.now
	r.stats.InFlight.Store(int64(w.n))
	r.stats.AckedPSN.Store(w.una)
	r.cond.Broadcast()
}

// goBackN resends every packet from psn on, asking for an ACK on the last.
func (r *Requester) goBackN(psn uint32) {
	w := &r.win
	d := w.index(psn)
	if d < 0 {
		return
	}
	r.goBackPSN, r.goBackAt = psn, r.now
	for i := d; i < w.n; i++ {
		s := w.at(i)
		if i == w.n-1 && s.buf[8]&0x80 == 0 {
			s.buf[8] |= 0x80 // AckReq
			_ = r.out.Seal(s.buf)
		}
		r.send(s.buf)
	}
	r.stats.Retransmits.Add(uint64(w.n - d))
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
		r.fail("ACK timeout")
		return
	}
	r.goBackN(r.win.una)
}
