package telemetry

import (
	"time"

	"github.com/dta-go/dta/internal/hawkeye/netsim"
)

// AgentConfig configures the host detection agent.
type AgentConfig struct {
	// Threshold fires the agent when a packet's RTT exceeds Threshold
	// percent of its flow's base RTT (e.g. 300).
	Threshold float64
	// After ignores what happens before this time.
	After time.Duration
	// Check is how often the agent looks at unacknowledged packets
	// (default 10 µs): a packet outstanding for longer than the threshold
	// fires it too (a stalled flow has no RTT samples).
	Check time.Duration
	// HoldDown is how long a flow that fired stays quiet (default 1 ms):
	// the paper's interval between polls of one 5-tuple.
	HoldDown time.Duration
	// Max stops the agent after that many triggers (0: no limit).
	Max int
}

// Trigger is one firing of the agent: a victim flow and when its source
// host sends the polling packet.
type Trigger struct {
	At   time.Duration
	Flow *netsim.Flow
	RTT  time.Duration // the RTT (or outstanding time) that exceeded the threshold
}

// Agent is the detection agent of every host of a simulation.
type Agent struct {
	sim  *netsim.Sim
	cfg  AgentConfig
	fn   func(Trigger)
	last map[int]time.Duration
	n    int
}

// NewAgent attaches an agent to sim that calls fn (from the simulation's
// goroutine, at the trigger's time) whenever it fires.
func NewAgent(sim *netsim.Sim, cfg AgentConfig, fn func(Trigger)) *Agent {
	if cfg.Check == 0 {
		cfg.Check = 10 * time.Microsecond
	}
	if cfg.HoldDown == 0 {
		cfg.HoldDown = time.Millisecond
	}
	a := &Agent{sim: sim, cfg: cfg, fn: fn, last: map[int]time.Duration{}}
	sim.ObserveHosts(a)
	sim.Every(cfg.Check, a.scan)
	return a
}

// Acked implements netsim.HostObserver.
func (a *Agent) Acked(at time.Duration, f *netsim.Flow, rtt time.Duration) { a.check(at, f, rtt) }

func (a *Agent) exceeds(f *netsim.Flow, rtt time.Duration) bool {
	return float64(rtt)*100 > a.cfg.Threshold*float64(f.BaseRTT())
}

func (a *Agent) check(at time.Duration, f *netsim.Flow, rtt time.Duration) {
	if at < a.cfg.After || (a.cfg.Max > 0 && a.n >= a.cfg.Max) || !a.exceeds(f, rtt) {
		return
	}
	if t, ok := a.last[f.ID]; ok && at-t < a.cfg.HoldDown {
		return
	}
	a.last[f.ID] = at
	a.n++
	tr := Trigger{At: at, Flow: f, RTT: rtt}
	a.sim.At(at, func() { a.fn(tr) })
}

// scan fires for flows whose oldest packet has been outstanding too long.
func (a *Agent) scan() bool {
	now := a.sim.Now()
	if a.cfg.Max > 0 && a.n >= a.cfg.Max {
		return false
	}
	if now < a.cfg.After {
		return true
	}
	for _, f := range a.sim.Flows() {
		if sent, ok := f.OldestUnacked(); ok {
			a.check(now, f, now-sent)
		}
	}
	return true
}
