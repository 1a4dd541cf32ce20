package requester

import (
	"sync"

	"github.com/dta-go/dta/wire/roce"
)

// OnRead sets the function that receives the Completion of every Read
// posted with Post or PostDeferred (Requester.Read waits for its own), in PSN order, from the requester's
// receive goroutine (or from Close, or the goroutine that finds the
// connection lost). Its Data is the op's Dst, filled. It runs with the
// requester's lock held: it must return quickly and must not call the
// Requester. nil stops the calls (the READs still complete).
func (r *Requester) OnRead(fn func(ReadCompletion)) {
	if fn == nil {
		r.onRead.Store(nil)
		return
	}
	r.onRead.Store(&fn)
}

// readWaits holds the channels Read waits on, so that a Read allocates none.
var readWaits = sync.Pool{New: func() any { return make(chan ReadCompletion, 1) }}

// Read reads len(dst) bytes at offset of target into dst with one RDMA
// READ and waits for them. It returns nil once dst holds them; the errors
// Post returns (ErrUnknownTarget, ErrOutOfRange, ErrBadOp, ErrNotConnected,
// ErrClosed) if the READ was not sent; ErrRefused if the responder NAKed it
// (no read right, wrong R_Key, out of its region); or ErrNotConnected (with
// ErrTimeout after Config.Retries ACK timeouts) if the connection went down
// first. It waits at most about Timeout × (Retries+1). Its completion does
// not reach OnRead. Safe for concurrent use; many Reads (and Posts) may be
// in flight at once.
func (r *Requester) Read(target uint16, offset uint64, dst []byte) error {
	ch := readWaits.Get().(chan ReadCompletion)
	ops := [1]Op{{Kind: Read, Target: target, Offset: offset, Dst: dst, done: ch}}
	if err := r.Post(ops[:]); err != nil {
		readWaits.Put(ch)
		return err
	}
	c := <-ch
	readWaits.Put(ch)
	return c.Err
}

// postRead encodes op's READ Request into the next window slot, reserves
// the span-1 slots after it for the PSNs of its other responses, and
// queues it. Called with mu held and span free slots.
func (r *Requester) postRead(op *Op, t *Target, span int) {
	w := &r.win
	s := w.at(w.n)
	psn := r.sendPSN
	pkt := roce.Packet{
		BTH:  roce.BTH{Opcode: roce.OpReadRequest, PKey: roce.DefaultPKey, DestQP: r.remoteQPN, PSN: psn, AckReq: true},
		RETH: roce.RETH{VA: t.VA + op.Offset, RKey: t.RKey, DMALen: uint32(len(op.Dst))},
	}
	r.sinceAckReq = 0
	s.buf = pkt.AppendTo(s.buf[:0])
	_ = r.icrc.Seal(&r.out, s.buf)
	s.atomic, s.kind, s.id = false, Read, op.ID
	s.read, s.rk, s.rn, s.got, s.dst, s.done = true, 0, span, 0, op.Dst, op.done
	for k := 1; k < span; k++ {
		x := w.at(w.n + k)
		x.buf = x.buf[:0]
		x.atomic, x.read, x.rk, x.rn, x.dst, x.done = false, true, k, span, nil, nil
	}
	if w.n == 0 {
		r.lastProgress = r.now
	}
	w.n += span
	r.atomicsOut++
	r.sendPSN = (psn + uint32(span)) & roce.PSNMask
	r.timer.Arm()
	r.stats.Packets.Add(1)
	r.stats.Bytes.Add(uint64(len(s.buf)))
	r.send(s.buf)
}

// onReadResponse handles a READ Response packet. Responses are taken in
// order only: the first of a READ acknowledges every op before it (an
// atomic or READ before it still lacking its own response is resent, an
// implied NAK); a response after a missing one resends the READ, which the
// responder executes again, and the parts already received are then
// ignored. Called with mu held.
func (r *Requester) onReadResponse(p *roce.Packet) {
	if r.state != stateConnected {
		return
	}
	st := &r.stats
	w := &r.win
	psn := p.BTH.PSN
	d := w.index(psn)
	if d < 0 {
		st.ReadDuplicates.Add(1) // a replay of a READ already complete
		return
	}
	s := w.at(d)
	if !s.read {
		st.Stray.Add(1)
		return
	}
	k := s.rk
	if d > k && !r.ackThrough((psn-uint32(k)-1)&roce.PSNMask, false, 0) {
		return // an earlier atomic or READ is being resent
	}
	h := w.at(0) // the READ's request slot
	switch {
	case k < h.got:
		st.ReadDuplicates.Add(1)
		return
	case k > h.got:
		if r.resendFrom(w.una) {
			st.ReadsLost.Add(1)
		}
		return
	}
	lo := k * r.pmtu
	n := min(len(h.dst)-lo, r.pmtu)
	if p.BTH.Opcode != readOpcode(k, h.rn) || len(p.Payload) != n {
		st.Stray.Add(1) // not what the READ asked for
		return
	}
	copy(h.dst[lo:], p.Payload)
	h.got++
	st.ReadResponses.Add(1)
	r.retries = 0
	r.lastProgress = r.now
	if h.got == h.rn {
		st.ReadBytes.Add(uint64(len(h.dst)))
		r.completeRead(nil)
	}
}

// readOpcode returns the opcode of response k of a READ of n responses.
func readOpcode(k, n int) roce.Opcode {
	switch {
	case n == 1:
		return roce.OpReadResponseOnly
	case k == 0:
		return roce.OpReadResponseFirst
	case k == n-1:
		return roce.OpReadResponseLast
	}
	return roce.OpReadResponseMiddle
}

// completeRead completes the READ at the head of the window with err: it
// frees its slots, then hands the outcome on (so that a waiting Read sees
// the window without it).
func (r *Requester) completeRead(err error) {
	h := r.win.at(0)
	n := h.rn
	s := *h
	for k := range n {
		x := r.win.at(k)
		x.read, x.dst, x.done = false, nil, nil
	}
	r.atomicsOut--
	r.freeHead(n)
	r.finishRead(&s, err)
}

// finishRead hands the outcome of the READ whose request slot is s to its
// waiting Read call or to OnRead's function, and drops its references.
func (r *Requester) finishRead(s *slot, err error) {
	c := ReadCompletion{ID: s.id, Err: err}
	if err == nil {
		c.Data = s.dst
	}
	if s.done != nil {
		s.done <- c
	} else if fn := r.onRead.Load(); fn != nil {
		(*fn)(c)
	}
	s.read, s.dst, s.done = false, nil, nil
}
