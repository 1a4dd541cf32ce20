// Package ratelog throttles log lines on paths that may see a flood of
// identical events (a malformed packet per microsecond). A Limiter lets one
// line per key through per interval and reports how many were suppressed in
// between. It never allocates when it suppresses.
package ratelog

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Limiter logs at most one line per key and interval.
type Limiter struct {
	logger   *slog.Logger
	interval int64 // ns
	mu       sync.Mutex
	keys     []keyState
}

type keyState struct {
	last       atomic.Int64 // ns of the last line logged
	suppressed atomic.Uint64
}

// New returns a limiter for nkeys keys (0..nkeys-1) that lets one line per key
// through every interval. A nil logger discards.
func New(logger *slog.Logger, nkeys int, interval time.Duration) *Limiter {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Limiter{logger: logger, interval: int64(interval), keys: make([]keyState, nkeys)}
}

// Allow reports whether a line for key may be logged at now (ns). When it
// returns true it also returns how many lines were suppressed since the last.
func (l *Limiter) Allow(key int, now int64) (bool, uint64) {
	if key < 0 || key >= len(l.keys) {
		return false, 0
	}
	k := &l.keys[key]
	last := k.last.Load()
	if last != 0 && now-last < l.interval || !k.last.CompareAndSwap(last, now) {
		k.suppressed.Add(1)
		return false, 0
	}
	return true, k.suppressed.Swap(0)
}

// Log logs msg at level for key unless throttled, adding the count of
// suppressed lines as the attribute "suppressed".
func (l *Limiter) Log(key int, now int64, level slog.Level, msg string, attrs ...slog.Attr) {
	ok, n := l.Allow(key, now)
	if !ok {
		return
	}
	attrs = append(attrs, slog.Uint64("suppressed", n))
	l.logger.LogAttrs(context.Background(), level, msg, attrs...)
}
