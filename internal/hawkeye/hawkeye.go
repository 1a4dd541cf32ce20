package hawkeye

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/dta-go/dta/client"
	"github.com/dta-go/dta/internal/hawkeye/diagnose"
	"github.com/dta-go/dta/internal/hawkeye/netsim"
	"github.com/dta-go/dta/internal/hawkeye/record"
	"github.com/dta-go/dta/internal/hawkeye/telemetry"
	"github.com/dta-go/dta/reporter"
)

// Session is a connection to a running DTA system: a reporter to its
// translator and a reader of its collector.
type Session struct {
	rep  *reporter.Reporter
	rd   *diagnose.Reader
	poll uint32
}

// Open connects to the translator at reportAddr (UDP host:port) and the
// collector at queryBase (http://host:port). The collector must hold the
// stores of record.ConfigYAML.
func Open(ctx context.Context, reportAddr, queryBase string) (*Session, error) {
	c, err := client.New(queryBase, &http.Client{Timeout: 30 * time.Second})
	if err != nil {
		return nil, err
	}
	for _, name := range []string{record.FlowStore, record.PortStore, record.MeterStore, record.PollStore} {
		if _, err := c.Store(ctx, name); err != nil {
			return nil, fmt.Errorf("hawkeye: collector %s: store %s: %w (start dta up with the configuration of dta hawkeye config)", queryBase, name, err)
		}
	}
	rd, err := diagnose.NewReader(ctx, c)
	if err != nil {
		return nil, err
	}
	rep, err := reporter.New(reporter.Config{To: reportAddr, Local: "127.0.0.1:0", Batch: 32, Retransmit: true}, nil)
	if err != nil {
		return nil, err
	}
	// Poll numbers start at a random point so that polls of earlier runs
	// still in the collector's Key-Write store never share a key.
	return &Session{rep: rep, rd: rd, poll: rand.Uint32() &^ 0xff}, nil
}

// SetReadWait bounds how long Read waits for a poll's records (default
// 10 s).
func (s *Session) SetReadWait(d time.Duration) { s.rd.Wait = d }

// Close closes the reporter.
func (s *Session) Close() error { return s.rep.Close() }

// ReporterStats returns the reporter's counters.
func (s *Session) ReporterStats() *reporter.Stats { return s.rep.Stats() }

// Exported is one poll after its trip through DTA.
type Exported struct {
	Poll uint32
	Cost telemetry.Cost
}

// Export sends a collection through the translator and returns its poll
// number.
func (s *Session) Export(c *telemetry.Collection, parts telemetry.Parts) (Exported, error) {
	s.poll++
	cost, err := telemetry.Export(s.rep, s.poll, c, parts)
	return Exported{s.poll, cost}, err
}

// Read reads a poll back from the collector.
func (s *Session) Read(ctx context.Context, poll uint32) (*diagnose.Telemetry, error) {
	return s.rd.Read(ctx, poll)
}

// Method is one diagnosis method: a polling strategy and the telemetry the
// analyzer uses.
type Method string

// Methods compared (Figs. 8 and 10).
const (
	MethodHawkeye    Method = "hawkeye"
	MethodFull       Method = "full"
	MethodVictimOnly Method = "victim-only"
	MethodPortOnly   Method = "port-only"
	MethodFlowOnly   Method = "flow-only"
)

// Methods lists every method.
var Methods = []Method{MethodHawkeye, MethodFull, MethodVictimOnly, MethodPortOnly, MethodFlowOnly}

func (m Method) strategy() telemetry.Strategy {
	switch m {
	case MethodFull:
		return telemetry.Full
	case MethodVictimOnly:
		return telemetry.VictimOnly
	}
	return telemetry.Hawkeye
}

func (m Method) parts() telemetry.Parts {
	switch m {
	case MethodPortOnly:
		return telemetry.PartPorts | telemetry.PartMeters
	case MethodFlowOnly:
		return telemetry.PartFlows
	}
	return telemetry.PartAll
}

func (m Method) options() diagnose.Options {
	return diagnose.Options{NoFlows: m == MethodPortOnly, NoPorts: m == MethodFlowOnly}
}

// Setting is one telemetry configuration and detection threshold.
type Setting struct {
	EpochBits uint
	Threshold float64 // percent of base RTT
}

// String returns "epoch 1.05ms, threshold 300%".
func (s Setting) String() string {
	return fmt.Sprintf("epoch %v, threshold %.0f%%", time.Duration(1)<<s.EpochBits, s.Threshold)
}

// Trace is one simulated scenario with its polls.
type Trace struct {
	Kind     netsim.Kind
	Seed     uint64
	Truth    netsim.Truth
	Topology *netsim.Topology
	Stats    netsim.Stats
	// Formed says whether the anomaly took hold (a deadlock's loop closed).
	Formed bool
	// LoopAt is when a deadlock's loop first closed (0: never).
	LoopAt time.Duration
	// PFCAt is when a contention turned into PFC backpressure (0: never).
	PFCAt time.Duration
	// Flows is the scenario's flows (tuples and tags), to name them.
	Flows []FlowInfo
	// Polls holds, per setting, the agent's first trigger (nil when it
	// never fired) and the collection of each strategy.
	Polls map[Setting]*SettingPolls
}

// FlowInfo names a flow of a trace.
type FlowInfo struct {
	Tuple    record.Tuple
	Src, Dst netsim.NodeID
	Tag      string
}

// SettingPolls is what one setting's agent triggered.
type SettingPolls struct {
	Trigger     *telemetry.Trigger
	Collections map[telemetry.Strategy]*telemetry.Collection
	// Causal are the switches a correct diagnosis needs (the victim's
	// path, the initial port's switch, the loop's switches).
	Causal map[netsim.NodeID]bool
	// Roots are the truth's root flows that had started by the trigger.
	Roots []record.Tuple
	// Crosses says the victim crosses the truth's initial port.
	Crosses bool
	// OffLoop says the victim crosses the truth's initial port but no port
	// of its loop (deadlocks).
	OffLoop bool
	// Contenders are other flows crossing the initial port during the
	// anomaly (netsim.Scenario.Contenders): naming them is not wrong.
	Contenders []record.Tuple
	// VictimPaused says a packet of the victim had been enqueued at a
	// paused egress port (anywhere on its path) by the trigger: the
	// simulator's truth, not the telemetry's.
	VictimPaused bool
}

// pauseTruth records, from the simulator, when each flow first had a
// packet enqueued at an egress port paused by PFC.
type pauseTruth map[netsim.FiveTuple]time.Duration

func (w pauseTruth) Enqueue(now time.Duration, _ netsim.NodeID, _, _ int, p *netsim.Packet, _ int, paused bool) {
	if _, ok := w[p.Flow.Tuple]; paused && !ok {
		w[p.Flow.Tuple] = now
	}
}

func (pauseTruth) PFC(time.Duration, netsim.NodeID, int, time.Duration)     {}
func (pauseTruth) PFCSent(time.Duration, netsim.NodeID, int, time.Duration) {}

// SimConfig configures Simulate.
type SimConfig struct {
	Kind       netsim.Kind
	Seed       uint64
	Load       float64
	Settings   []Setting
	Strategies []telemetry.Strategy
	Telemetry  telemetry.Config // EpochBits is taken from each setting
	Net        netsim.Config
}

// Simulate runs one scenario with a telemetry instance per epoch size and
// an agent per setting that fires at most once, at or after the anomaly's
// start; every firing polls with every strategy. It refuses a cfg that
// does not Validate.
func Simulate(cfg SimConfig) (*Trace, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sc, err := netsim.NewScenario(netsim.ScenarioConfig{Kind: cfg.Kind, Seed: cfg.Seed, Load: cfg.Load, Sim: cfg.Net})
	if err != nil {
		return nil, fmt.Errorf("hawkeye: %s seed %d: %w", cfg.Kind, cfg.Seed, err)
	}
	s := sc.Sim
	tr := &Trace{Kind: cfg.Kind, Seed: cfg.Seed, Truth: sc.Truth, Topology: s.Topology(), Polls: map[Setting]*SettingPolls{}}
	pt := pauseTruth{}
	s.Observe(pt)
	tels := map[uint]*telemetry.Telemetry{}
	for _, st := range cfg.Settings {
		tel := tels[st.EpochBits]
		if tel == nil {
			tc := cfg.Telemetry
			tc.EpochBits = st.EpochBits
			tel, err = telemetry.New(s.Topology(), tc)
			if err != nil {
				return nil, err
			}
			s.Observe(tel)
			tels[st.EpochBits] = tel
		}
		sp := &SettingPolls{Collections: map[telemetry.Strategy]*telemetry.Collection{}}
		tr.Polls[st] = sp
		telemetry.NewAgent(s, telemetry.AgentConfig{Threshold: st.Threshold, After: sc.Truth.Start, Max: 1}, func(t telemetry.Trigger) {
			sp.Trigger = &t
			sp.Causal = causal(s, sc.Truth, t.Flow)
			sp.OffLoop = offLoop(s, sc.Truth, t.Flow)
			_, sp.VictimPaused = pt[t.Flow.Tuple]
			for _, p := range s.Path(t.Flow) {
				sp.Crosses = sp.Crosses || p == sc.Truth.Initial
			}
			for _, rf := range sc.Truth.RootFlows {
				if f := s.FlowByTuple(rf); f != nil && f.Start <= t.At {
					sp.Roots = append(sp.Roots, record.Tuple(rf))
				}
			}
			for _, strat := range cfg.Strategies {
				tel.Poll(s, strat, t.Flow, t.At, func(c *telemetry.Collection) { sp.Collections[strat] = c })
			}
		})
	}
	tr.Stats = s.Run(sc.Duration)
	tr.Formed = sc.Formed()
	if at, ok := sc.LoopClosed(); ok {
		tr.LoopAt = at
	}
	if at, ok := sc.ContentionPFC(); ok {
		tr.PFCAt = at
	}
	var cont []record.Tuple
	for _, c := range sc.Contenders() {
		cont = append(cont, record.Tuple(c))
	}
	for _, sp := range tr.Polls {
		sp.Contenders = cont
	}
	for _, f := range s.Flows() {
		tr.Flows = append(tr.Flows, FlowInfo{record.Tuple(f.Tuple), f.Src, f.Dst, f.Tag})
	}
	return tr, nil
}

// TruthAt returns the ground truth as it stood at time t: a contention
// that had turned into PFC backpressure by then is PFC backpressure by flow
// contention (Incast) at the same port with the same root flows.
func (tr *Trace) TruthAt(t time.Duration) netsim.Truth {
	truth := tr.Truth
	if truth.Kind == netsim.Contention && tr.PFCAt != 0 && tr.PFCAt <= t {
		truth.Kind = netsim.Incast
	}
	return truth
}

// Judgeable reports whether the trace's anomaly had taken hold when the
// agent of setting st fired: false when it never fired, when the anomaly
// never formed (Formed), for a deadlock whose loop closed only after the
// firing (until then it is PFC backpressure on its way to a deadlock, which
// the telemetry may show either way), and for a contention without PFC
// when the agent fired for a flow that does not cross the contended port, or
// that PFC had paused by then (something else — background traffic's own
// congestion, PFC the contention did not send — slowed it). The runner
// leaves such traces out, blind to the diagnosis: every rule is the
// simulator's truth.
func (tr *Trace) Judgeable(st Setting) bool {
	return tr.WhyNotJudged(st) == ""
}

// WhyNotJudged returns why the runner leaves the trace out at setting st
// (see Judgeable), "" when it judges it.
func (tr *Trace) WhyNotJudged(st Setting) string {
	sp := tr.Polls[st]
	switch {
	case sp == nil || sp.Trigger == nil:
		return "the agent never fired"
	case !tr.Formed:
		return "the anomaly never formed"
	case tr.Truth.Kind == netsim.DeadlockIn || tr.Truth.Kind == netsim.DeadlockOut:
		if tr.LoopAt == 0 || tr.LoopAt > sp.Trigger.At {
			return "the deadlock's loop closed only after the agent fired"
		}
	case tr.Truth.Kind == netsim.Contention && (tr.PFCAt == 0 || tr.PFCAt > sp.Trigger.At):
		if !sp.Crosses {
			return "the victim does not cross the contended port"
		}
		if sp.VictimPaused {
			return "PFC the contention did not send had paused the victim"
		}
	}
	return ""
}

// truthFor returns the truth a diagnosis from collection c is judged
// against: as it stood when c read the switch of the initial port
// (JudgedAt), and as the victim meets it — a deadlock initiated out of its
// loop by a host, whose victim crosses the injecting host's port but no
// port of the loop, is for that victim a PFC storm from that host (its PFC
// path never reaches the loop, and HAWKEYE follows PFC downstream only).
func (tr *Trace) truthFor(sp *SettingPolls, c *telemetry.Collection) netsim.Truth {
	t := tr.TruthAt(tr.JudgedAt(c))
	if t.Kind == netsim.DeadlockOut && sp.OffLoop {
		t.Kind, t.Loop = netsim.Storm, nil
	}
	return t
}

// TruthFor is the truth a diagnosis from collection c of setting sp is
// judged against (see truthFor): what `dta hawkeye sim` prints beside it.
func (tr *Trace) TruthFor(sp *SettingPolls, c *telemetry.Collection) netsim.Truth {
	return tr.truthFor(sp, c)
}

// JudgedAt returns when c read the switch of the truth's initial port (when
// it ended if it never did): the telemetry a diagnosis rests on shows the
// anomaly as it stood then, not when the agent fired.
func (tr *Trace) JudgedAt(c *telemetry.Collection) time.Duration {
	for _, sn := range c.Snapshots {
		if sn.Switch == tr.Truth.Initial.Node {
			return sn.At
		}
	}
	return c.Done
}

// offLoop reports whether the victim crosses t's initial port but no port
// of its loop.
func offLoop(s *netsim.Sim, t netsim.Truth, victim *netsim.Flow) bool {
	if len(t.Loop) == 0 {
		return false
	}
	loop := map[netsim.PortRef]bool{}
	for _, p := range t.Loop {
		loop[p] = true
	}
	initial := false
	for _, p := range s.Path(victim) {
		if loop[p] {
			return false
		}
		initial = initial || p == t.Initial
	}
	return initial
}

// causal returns the switches a diagnosis of the victim needs.
func causal(s *netsim.Sim, t netsim.Truth, victim *netsim.Flow) map[netsim.NodeID]bool {
	c := map[netsim.NodeID]bool{t.Initial.Node: true}
	for _, p := range s.Path(victim) {
		c[p.Node] = true
	}
	for _, p := range t.Loop {
		c[p.Node] = true
	}
	return c
}

// Verdict is one method's diagnosis of one trace at one setting, judged.
type Verdict struct {
	Method    Method
	Diagnosis *diagnose.Diagnosis
	Correct   bool
	Why       string // what was wrong
	Cost      telemetry.Cost
	Poll      uint32
	// Coverage is the share of the causal switches the poll collected.
	Coverage float64
	Lookups  int // meter lookups the analyzer made
	// Graph is the provenance graph the diagnosis was made on.
	Graph *diagnose.Graph
}

// Diagnose exports the trace's polls of one setting through s for every
// method, reads them back, diagnoses and judges them. It returns nil when
// the agent never fired.
func (s *Session) Diagnose(ctx context.Context, tr *Trace, st Setting, methods []Method) ([]Verdict, error) {
	sp := tr.Polls[st]
	if sp == nil || sp.Trigger == nil {
		return nil, nil
	}
	type sent struct {
		m Method
		e Exported
		c *telemetry.Collection
	}
	var all []sent
	for _, m := range methods {
		c := sp.Collections[m.strategy()]
		if c == nil {
			return nil, fmt.Errorf("hawkeye: %s seed %d %s: no %s collection", tr.Kind, tr.Seed, st, m.strategy())
		}
		e, err := s.Export(c, m.parts())
		if err != nil {
			return nil, err
		}
		all = append(all, sent{m, e, c})
	}
	var out []Verdict
	for _, x := range all {
		t, err := s.Read(ctx, x.e.Poll)
		if err != nil {
			return nil, err
		}
		g := diagnose.Build(t, x.m.options())
		d := diagnose.Analyze(g, diagnose.AnalyzeOptions{})
		ok, why := Judge(tr.truthFor(sp, x.c), sp.Roots, sp.Contenders, d)
		cov := 0
		for sw := range sp.Causal {
			if g.Switches[uint16(sw)] {
				cov++
			}
		}
		out = append(out, Verdict{Method: x.m, Diagnosis: d, Correct: ok, Why: why, Cost: x.e.Cost, Poll: x.e.Poll,
			Coverage: float64(cov) / float64(len(sp.Causal)), Lookups: t.Lookups, Graph: g})
	}
	return out, nil
}

// Judge says whether d names truth's anomaly, initial port and root cause:
// for host injection the host; for flow contention at least one root flow
// (roots: those of truth that had started when the agent fired), and at
// least three quarters of the flows named being root flows or contenders
// (other flows in the congested queue). The contribution of a flow is
// relative to the others in the queue: of equal bursts only those above the
// average come out positive, so the flows named need not be all of them.
func Judge(truth netsim.Truth, roots, contenders []record.Tuple, d *diagnose.Diagnosis) (bool, string) {
	if string(d.Kind) != string(truth.Kind) {
		return false, fmt.Sprintf("kind %s, want %s", d.Kind, truth.Kind)
	}
	want := diagnose.Port{Switch: uint16(truth.Initial.Node), Port: uint8(truth.Initial.Port)}
	if d.Initial != want {
		return false, fmt.Sprintf("initial port %s, want %s", d.Initial, want)
	}
	if truth.RootHost != netsim.None {
		if d.Cause != diagnose.CauseInjection || d.RootHost != uint16(truth.RootHost) {
			return false, fmt.Sprintf("cause %s (host %d), want host injection by %d", d.Cause, d.RootHost, truth.RootHost)
		}
		return true, ""
	}
	if d.Cause != diagnose.CauseContention || len(d.RootFlows) == 0 {
		return false, fmt.Sprintf("cause %q, want flow contention", d.Cause)
	}
	t := map[record.Tuple]bool{}
	for _, f := range roots {
		t[f] = true
	}
	other := map[record.Tuple]bool{}
	for _, f := range contenders {
		other[f] = true
	}
	hit, ok := 0, 0
	for _, c := range d.RootFlows {
		if t[c.Tuple] {
			hit++
		}
		if t[c.Tuple] || other[c.Tuple] {
			ok++
		}
	}
	if hit == 0 || 4*ok < 3*len(d.RootFlows) {
		return false, fmt.Sprintf("%d of %d flows named are root flows (%d contenders), of %d root flows", hit, len(d.RootFlows), ok-hit, len(t))
	}
	return true, ""
}
