package sock

import (
	"sync"
	"sync/atomic"
	"time"
)

// Ticker drives the retransmission and expiry checks of a requester or a
// responder: it ticks every period while its owner has something to time,
// sleeps while the owner has nothing (no packet outstanding, no handshake
// or advertisement in flight), so that an idle endpoint does not wake up
// every few milliseconds, and wakes when the owner Arms it.
type Ticker struct {
	period time.Duration
	idle   atomic.Bool // the loop sleeps, or is about to; set with the owner's lock held
	wake   chan struct{}
}

// NewTicker returns a ticker of the given period (at least 1ms).
func NewTicker(period time.Duration) *Ticker {
	return &Ticker{period: max(period, time.Millisecond), wake: make(chan struct{}, 1)}
}

// Run calls tick every period, with mu held, until done is closed. tick
// reports whether anything still needs timing; when nothing does, the loop
// sleeps until Arm. mu is usually a *sync.Mutex; an owner whose state is
// guarded by several locks passes a Locker that takes them all.
func (t *Ticker) Run(mu sync.Locker, done <-chan struct{}, tick func() (busy bool)) {
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
		t.idle.Store(!busy)
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

// Arm wakes the loop if it sleeps: the owner has something to time again.
// Call it with the mutex given to Run held (or, when Run was given a
// Locker of several locks, one of them), so that it cannot slip between a
// tick finding nothing and the loop going to sleep. Several goroutines may
// call it at once.
func (t *Ticker) Arm() {
	if t.idle.CompareAndSwap(true, false) {
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
}
