package requester

import "time"

// tokenBucket paces packets to rate per second with bursts of burst
// packets. It is used by one goroutine at a time (Post holds applyMu).
type tokenBucket struct {
	rate   float64 // tokens per nanosecond
	burst  float64
	tokens float64
	last   int64 // ns
}

func newTokenBucket(perSecond float64, burst int, now int64) *tokenBucket {
	if perSecond <= 0 {
		return nil
	}
	return &tokenBucket{rate: perSecond / 1e9, burst: float64(burst), tokens: float64(burst), last: now}
}

// take removes n tokens and returns how long to wait before the packets
// may leave (0 if there were enough). Tokens may go negative: the debt is
// the wait.
func (b *tokenBucket) take(n int, now int64) time.Duration {
	if dt := now - b.last; dt > 0 {
		b.tokens = min(b.burst, b.tokens+float64(dt)*b.rate)
		b.last = now
	}
	b.tokens -= float64(n)
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.rate)
}
