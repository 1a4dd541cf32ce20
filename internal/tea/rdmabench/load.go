package rdmabench

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dta-go/dta/internal/tea"
)

// run is one closed-loop run: window lookups kept in flight against an
// engine, each tagged with its start time.
type run struct {
	eng    *tea.Engine
	base   time.Time
	window chan struct{}

	mu      sync.Mutex
	lat     []time.Duration // up to maxSamples
	buckets []bucket        // per Bucket of time since base, when Bucket > 0
	bucket  time.Duration

	done    atomic.Uint64
	failed  atomic.Uint64
	retried atomic.Uint64
	lost    atomic.Uint64 // parked packets not read back
}

type bucket struct {
	served  [2]uint64
	retried uint64
	failed  uint64
}

const maxSamples = 1 << 20

// newRun starts an engine over c's readers with window lookups in flight.
// bucketWidth > 0 keeps a timeline of buckets for duration d.
func newRun(c *cluster, window int, timeout, holddown time.Duration, bucketWidth, d time.Duration, cache bool) (*run, context.CancelFunc, error) {
	r := &run{window: make(chan struct{}, window), bucket: bucketWidth, base: time.Now()}
	if bucketWidth > 0 {
		r.buckets = make([]bucket, int(d/bucketWidth)+1)
	}
	cfg := tea.Config{
		Placement: c.place, Readers: c.readers(), Stash: c.table.Stash(),
		InFlight: 4 * window, Timeout: timeout, Holddown: holddown, HotThreshold: ^uint32(0), Done: r.complete,
	}
	if cache {
		cfg.Cache, cfg.HotThreshold = c.table.Cache(), 0
	}
	eng, err := tea.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	r.eng = eng
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { eng.Run(ctx) })
	return r, func() { cancel(); wg.Wait() }, nil
}

func (r *run) complete(res *tea.Result) {
	now := time.Since(r.base)
	lat := now - time.Duration(res.Tag)
	r.done.Add(1)
	if res.Err != nil {
		r.failed.Add(1)
	}
	if res.Retries > 0 {
		r.retried.Add(1)
	}
	if res.PacketLost {
		r.lost.Add(1)
	}
	r.mu.Lock()
	if len(r.lat) < maxSamples {
		r.lat = append(r.lat, lat)
	}
	if r.bucket > 0 {
		b := &r.buckets[min(int(now/r.bucket), len(r.buckets)-1)]
		switch {
		case res.Err != nil:
			b.failed++
		case res.Source == tea.FromMemory && res.Server < 2:
			b.served[res.Server]++
		}
		if res.Retries > 0 {
			b.retried++
		}
	}
	r.mu.Unlock()
	<-r.window
}

// drive looks up keys chosen by next, with pkt parked, until d has passed
// or n lookups were issued (n ≤ 0: no limit), then waits for the window to
// drain (at most a second). It returns the lookups issued and the time
// they took.
func (r *run) drive(c *cluster, pkt []byte, d time.Duration, n int, next func() int, at func(time.Duration)) (int, time.Duration, error) {
	start := time.Now()
	issued := 0
	for ; n <= 0 || issued < n; issued++ {
		el := time.Since(start)
		if el >= d {
			break
		}
		if at != nil {
			at(el)
		}
		r.window <- struct{}{}
		key := c.key(next())
		for {
			err := r.eng.LookupPacket(key, pkt, uint64(time.Since(r.base)))
			if err == nil {
				break
			}
			if !errors.Is(err, tea.ErrBusy) {
				<-r.window
				return issued, time.Since(start), err
			}
			runtime.Gosched()
		}
	}
	deadline := time.Now().Add(time.Second)
	for len(r.window) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Microsecond)
	}
	return issued, time.Since(start), nil
}

// latencies returns the percentiles of the latencies recorded so far.
func (r *run) latencies() Percentiles {
	r.mu.Lock()
	defer r.mu.Unlock()
	return percentiles(r.lat)
}

// Percentiles are latencies at the 10th, 50th and 90th percentile.
type Percentiles struct {
	P10    time.Duration `json:"p10_ns"`
	Median time.Duration `json:"median_ns"`
	P90    time.Duration `json:"p90_ns"`
}

func percentiles(lat []time.Duration) Percentiles {
	if len(lat) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(int(q*float64(len(s))), len(s)-1)] }
	return Percentiles{P10: at(0.1), Median: at(0.5), P90: at(0.9)}
}
