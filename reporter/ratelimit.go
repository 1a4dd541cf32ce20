package reporter

import (
	"sync"
	"time"
)

// burstWindow sizes the token bucket: it holds the reports of this long at
// the configured rate, so that a sleep that overruns by up to this much is
// made up for.
const burstWindow = 5 * time.Millisecond

// minSleep is the smallest wait worth a sleep. Shorter deficits accumulate
// in the limiter's schedule and are slept off together, so the long-run rate
// holds while sleeps stay coarse.
const minSleep = 50 * time.Microsecond

// longSleep is the shortest wait that Close may end early (a timer and a
// select); shorter ones sleep without allocating.
const longSleep = 10 * time.Millisecond

// limiter is a token bucket in its GCRA form: tat is the theoretical arrival
// time of the next report; a report may go tau early, which lets a burst of
// burst reports through at once.
type limiter struct {
	mu       sync.Mutex
	base     time.Time // monotonic origin of the ns clock
	interval float64   // ns per report
	tau      float64   // burst tolerance, ns
	tat      float64   // ns since base
}

func newLimiter(rate float64, burst int) *limiter {
	iv := float64(time.Second) / rate
	return &limiter{base: time.Now(), interval: iv, tau: float64(max(burst, 1)-1) * iv}
}

// wait blocks until one more report may go, or until done is closed.
func (l *limiter) wait(done <-chan struct{}) {
	l.mu.Lock()
	now := float64(time.Since(l.base))
	if l.tat < now {
		l.tat = now
	}
	at := l.tat - l.tau
	l.tat += l.interval
	l.mu.Unlock()
	d := time.Duration(at - now)
	switch {
	case d < minSleep:
	case d < longSleep:
		time.Sleep(d)
	default: // long enough to be worth a timer that Close can end
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-done:
			t.Stop()
		}
	}
}
