package teabench

import (
	"errors"
	"fmt"
	"time"

	"github.com/dta-go/dta/internal/tea"
)

// FailoverConfig is the availability experiment (Fig. 10) on a simulated
// clock: a table replicated on two servers (each the primary of half the
// buckets) is looked up at Rate lookups per millisecond; at StopFirst server
// 0 stops answering (its reads are lost; its queue pair flushes them with
// an error at the end of each window), and at Swap server 0 answers again
// while server 1 stops.
type FailoverConfig struct {
	Keys      int
	Rate      int           // lookups per simulated millisecond
	Duration  time.Duration // simulated
	Window    time.Duration // one output row per window
	StopFirst time.Duration // server 0 stops answering
	Swap      time.Duration // server 0 answers again, server 1 stops
	Timeout   time.Duration // the engine's read timeout
	Holddown  time.Duration // how long a server that timed out is left alone
	Seed      uint64
}

// DefaultFailoverConfig is the experiment of docs/REPRODUCTION.md.
func DefaultFailoverConfig() FailoverConfig {
	return FailoverConfig{
		Keys: 100_000, Rate: 100, Duration: 300 * time.Millisecond, Window: 10 * time.Millisecond,
		StopFirst: 100 * time.Millisecond, Swap: 200 * time.Millisecond,
		Timeout: time.Millisecond, Holddown: 10 * time.Millisecond, Seed: 1,
	}
}

// FailoverRow is one window of the timeline.
type FailoverRow struct {
	Start       time.Duration `json:"start_ns"`
	Served      [2]uint64     `json:"served"`      // lookups each server answered
	Retried     uint64        `json:"retried"`     // lookups answered after a timeout or an error
	Unavailable uint64        `json:"unavailable"` // lookups no server answered
	MaxDelay    time.Duration `json:"max_delay_ns"`
	MaxReads    int           `json:"max_reads_per_lookup"`
}

// silentReader forwards reads, or holds them while silent until flushed.
type silentReader struct {
	inner  tea.Reader
	silent bool
	held   []heldRead
}

type heldRead struct {
	id   uint64
	done func(uint64, error)
}

var errFlushed = errors.New("queue pair flushed")

// Read holds the read while silent, else passes it on.
func (r *silentReader) Read(off uint64, dst []byte, id uint64, done func(uint64, error)) {
	if r.silent {
		r.held = append(r.held, heldRead{id, done})
		return
	}
	r.inner.Read(off, dst, id, done)
}

func (r *silentReader) flush() {
	held := r.held
	r.held = nil
	for _, h := range held {
		h.done(h.id, errFlushed)
	}
}

// Failover runs the availability experiment.
func Failover(c FailoverConfig) ([]FailoverRow, error) {
	if c.Keys < 2 || c.Rate < 1 || c.Window <= 0 || c.Duration < c.Window || c.Timeout <= 0 {
		return nil, fmt.Errorf("failover: keys %d, rate %d, window %v, duration %v, timeout %v: want positive values, a duration of at least one window",
			c.Keys, c.Rate, c.Window, c.Duration, c.Timeout)
	}
	plan, err := tea.PlanTable(uint64(c.Keys), 13, 6, 8, 0.7, 0)
	if err != nil {
		return nil, err
	}
	p, err := tea.PlaceEqual(plan.Spec, 2, 2)
	if err != nil {
		return nil, err
	}
	mems := []tea.Memory{tea.NewLocalMemory(p.Used(0)), tea.NewLocalMemory(p.Used(1))}
	cm, err := tea.NewClusterMemory(p, mems)
	if err != nil {
		return nil, err
	}
	tab, err := tea.NewTable(plan.Spec, cm, tea.TableConfig{MaxTries: tea.DefaultMaxTries, Seed: c.Seed})
	if err != nil {
		return nil, err
	}
	keys := FiveTuples(c.Keys, 13, c.Seed)
	for i := range c.Keys {
		if err := tab.Insert(keys[i*13:(i+1)*13], make([]byte, 6)); err != nil {
			return nil, err
		}
	}
	readers := []*silentReader{{inner: tea.MemoryReader{Mem: mems[0]}}, {inner: tea.MemoryReader{Mem: mems[1]}}}
	var now time.Duration
	clock := func() time.Time { return time.Unix(0, int64(now)) }
	rows := make([]FailoverRow, int(c.Duration/c.Window))
	row := func() *FailoverRow { return &rows[min(int(now/c.Window), len(rows)-1)] }
	eng, err := tea.New(tea.Config{
		Placement: p, Readers: []tea.Reader{readers[0], readers[1]}, Stash: tab.Stash(),
		InFlight: 4096, Timeout: c.Timeout, Holddown: c.Holddown, Now: clock, HotThreshold: ^uint32(0),
		Done: func(r *tea.Result) {
			w := row()
			switch {
			case r.Err != nil:
				w.Unavailable++
			case r.Source == tea.FromMemory:
				w.Served[r.Server]++
			}
			if r.Retries > 0 {
				w.Retried++
			}
			w.MaxDelay = max(w.MaxDelay, now-time.Duration(r.Tag))
			w.MaxReads = max(w.MaxReads, r.Reads)
		},
	})
	if err != nil {
		return nil, err
	}
	for i := range rows {
		rows[i].Start = time.Duration(i) * c.Window
	}
	z, err := NewZipf(c.Keys, 0, c.Seed+1) // uniform: both ranges busy
	if err != nil {
		return nil, err
	}
	step := time.Millisecond / time.Duration(c.Rate)
	tick := max(c.Timeout/10, step)
	nextTick, nextWindow := tick, c.Window
	for now = 0; now < c.Duration; now += step {
		readers[0].silent = now >= c.StopFirst && now < c.Swap
		readers[1].silent = now >= c.Swap
		k := z.Next()
		if err := eng.Lookup(keys[k*13:(k+1)*13], uint64(now)); err != nil {
			return nil, fmt.Errorf("at %v: %w", now, err)
		}
		if now >= nextTick {
			eng.Expire(clock())
			nextTick += tick
		}
		if now >= nextWindow {
			readers[0].flush()
			readers[1].flush()
			nextWindow += c.Window
		}
	}
	return rows, nil
}
