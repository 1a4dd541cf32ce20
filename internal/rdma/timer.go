package rdma

import (
	"sync"
	"time"
)

// timer drives the retransmission and expiry checks of a requester or a
// responder: a ticker that sleeps while its owner has nothing to time (no
// packet outstanding, no handshake or advertisement in flight), so that an
// idle endpoint does not wake up every few milliseconds, and that the owner
// wakes when it has something again.
type timer struct {
	period time.Duration
	idle   bool // the loop sleeps, or is about to; guarded by the owner's mutex
	wake   chan struct{}
}

func newTimer(period time.Duration) *timer {
	return &timer{period: max(period, time.Millisecond), wake: make(chan struct{}, 1)}
}

// run calls tick every period, with mu held, until done is closed. tick
// reports whether anything still needs timing; when nothing does, the loop
// sleeps until arm.
func (t *timer) run(mu *sync.Mutex, done <-chan struct{}, tick func() (busy bool)) {
	tk := time.NewTicker(t.period)
	defer tk.Stop()
	for {
		select {
		case <-done:
			return
		case <-tk.C:
		}
		mu.Lock()
		busy := tick()
		t.idle = !busy
		mu.Unlock()
		if busy {
			continue
		}
		tk.Stop()
		select {
		case <-done:
			return
		case <-t.wake:
		}
		tk.Reset(t.period)
	}
}

// arm wakes the loop if it sleeps: the owner has something to time again.
// Called with the owner's mutex held, so that it cannot slip between a tick
// finding nothing and the loop going to sleep.
func (t *timer) arm() {
	if t.idle {
		t.idle = false
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
}
