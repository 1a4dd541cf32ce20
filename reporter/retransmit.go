package reporter

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/dta-go/dta/wire/dta"
)

// readAcks receives ACK/NACK datagrams and runs the retransmission timer.
func (r *Reporter) readAcks() {
	defer r.wg.Done()
	tick := max(r.cfg.RetransmitTimeout/4, time.Millisecond)
	var buf [64]byte
	for {
		_ = r.conn.SetReadDeadline(time.Now().Add(tick))
		n, from, err := r.conn.ReadFromUDPAddrPort(buf[:])
		select {
		case <-r.done:
			return
		default:
		}
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				// ICMP errors surface here on some systems; do not spin.
				time.Sleep(tick)
			}
			r.onTick(time.Now())
			continue
		}
		var a dta.Ack
		if !r.fromTranslator(from) || a.Decode(buf[:n]) != nil {
			continue
		}
		now := time.Now()
		r.handleAck(a, now)
		r.onTick(now)
	}
}

// fromTranslator reports whether an ACK/NACK from addr may come from the
// translator: the prototype sends NACKs from the collector's address (the
// report's destination) with the reporter's port as source port, so only the
// address is compared.
func (r *Reporter) fromTranslator(addr netip.AddrPort) bool {
	want := r.to.Addr()
	return want.IsUnspecified() || addr.Addr().Unmap() == want
}

// handleAck applies one ACK or NACK. seq is the last sequence number the
// translator accepted in order: every datagram up to it is freed; on a NACK
// every datagram after it is resent, once per RetransmitTimeout for the same
// seq (a gap makes the translator NACK every later datagram).
func (r *Reporter) handleAck(a dta.Ack, now time.Time) {
	if a.NACK {
		r.stats.Nacks.Add(1)
	} else {
		r.stats.Acks.Add(1)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.room.Broadcast() // what a sender waits for may have changed
	r.heardAt, r.silent = now, false
	w := r.win
	freed, ok := w.ackThrough(a.Seq)
	if !ok {
		// The translator expects a.Seq+1, which is not in the window.
		// Either it tracked this address and port before we started (an
		// earlier reporter used it), or it missed datagrams the window has
		// forgotten: then it drops everything after the gap. Either way
		// the datagrams held can only get through under the numbers it
		// expects: renumber them from a.Seq+1 and send them again. Any
		// other answer outside the window is stale, in particular one
		// older than what the translator has confirmed already.
		evicted := w.wasEvicted(a.Seq + 1)
		if w.count == 0 || (r.synced && (!evicted || seqBefore(a.Seq, r.confirmed))) {
			return
		}
		if evicted {
			// The translator accepted every datagram up to a.Seq and
			// none of the forgotten ones after it, up to the window.
			r.lost += min(r.forgotten, uint64(w.head-a.Seq-1))
			r.forgotten = 0
			r.stats.Unrecoverable.Add(1)
			r.warnLocked("translator missed datagrams the retransmission window had forgotten; they are lost, the rest is renumbered and resent",
				"expected", a.Seq+1, "window", WindowSize)
		} else {
			r.log.Info("translator expects another sequence number; renumbering", "expected", a.Seq+1, "had", w.head)
		}
		w.renumber(a.Seq + 1)
		r.lastNack, r.lastNackAt, r.lastNackUsed = a.Seq, now, true
		r.resendLocked(now)
		return
	}
	r.synced, r.confirmed = true, a.Seq
	r.forgotten = 0 // a.Seq is at or after the datagram before the window: every forgotten one was accepted
	if freed > 0 {
		r.progressAt, r.timeouts = now, 0
	}
	if !a.NACK || w.count == 0 {
		return
	}
	if r.lastNackUsed && r.lastNack == a.Seq && now.Sub(r.lastNackAt) < r.cfg.RetransmitTimeout {
		return
	}
	r.lastNack, r.lastNackAt, r.lastNackUsed = a.Seq, now, true
	r.resendLocked(now)
}

// onTick resends the window when nothing made progress for
// RetransmitTimeout, at most MaxTimeoutResends times in a row.
func (r *Reporter) onTick(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.room.Broadcast() // waiters check their deadline
	if r.win.count == 0 || r.timeouts >= MaxTimeoutResends || now.Sub(r.progressAt) < r.cfg.RetransmitTimeout {
		return
	}
	r.timeouts++
	r.resendLocked(now)
}

// resendLocked sends every datagram of the window again, oldest first.
func (r *Reporter) resendLocked(now time.Time) {
	r.progressAt = now
	for i := range r.win.count {
		if _, err := r.conn.WriteToUDPAddrPort(r.win.at(i), r.to); err != nil {
			r.stats.WriteErrors.Add(1)
			r.warnLocked("resending a datagram failed", "err", err)
			return
		}
		r.stats.Retransmits.Add(1)
	}
}

// drain waits until the window is empty, the timeout resends have given up,
// or MaxLinger has passed. Close calls it after the last flush.
func (r *Reporter) drain() {
	deadline := time.Now().Add(min(time.Duration(MaxTimeoutResends+2)*r.cfg.RetransmitTimeout, MaxLinger))
	poll := min(max(r.cfg.RetransmitTimeout/16, time.Millisecond), 10*time.Millisecond)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		idle := r.win.count == 0 ||
			(r.timeouts >= MaxTimeoutResends && time.Since(r.progressAt) >= r.cfg.RetransmitTimeout)
		r.mu.Unlock()
		if idle {
			return
		}
		time.Sleep(poll)
	}
}

// ackReadBuffer is the receive buffer asked for the ACK socket: one small
// datagram per report datagram adds up when the reader falls behind.
const ackReadBuffer = 1 << 20

// windowFullLocked reports whether a new datagram must wait for an answer:
// the window is full, or the translator has not yet answered inside it.
// Until then a translator that tracked this address and port before may
// take our datagrams for duplicates of its own last seq (and ACK them);
// with one datagram outstanding that needs its last seq to be exactly ours
// (a chance of 1/256, thanks to the random start), with a whole window in
// flight it is likely.
func (r *Reporter) windowFullLocked() bool {
	return r.win.count == WindowSize || (!r.synced && r.win.count > 0)
}

// awaitRoomLocked waits, releasing mu, while the window is full, for at
// most RetransmitTimeout, unless the translator has proven silent: a wait
// that ended without any ACK or NACK heard makes later ones return at once
// until the translator answers again. The read loop wakes waiters on every
// ACK that frees room and on every tick.
func (r *Reporter) awaitRoomLocked() {
	if r.silent {
		return
	}
	start := time.Now()
	deadline := start.Add(r.cfg.RetransmitTimeout)
	for r.windowFullLocked() && !r.closed {
		if !time.Now().Before(deadline) {
			if r.heardAt.Before(start) {
				r.silent = true
			}
			return
		}
		r.room.Wait()
	}
}

// seqBefore reports whether 8-bit sequence number a comes before b, within
// half the sequence space.
func seqBefore(a, b uint8) bool { return a != b && b-a < 128 }
