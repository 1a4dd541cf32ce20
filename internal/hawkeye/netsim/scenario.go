package netsim

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Kind names an injected anomaly (the paper's §2.1).
type Kind string

// The anomalies a scenario can inject.
const (
	// Incast: synchronized micro-bursts from many hosts to one; the
	// congestion spreads upstream by PFC (PFC backpressure by flow
	// contention).
	Incast Kind = "incast"
	// Storm: a host injects PAUSE frames; the pause spreads upstream.
	Storm Kind = "storm"
	// DeadlockIn: misrouted flows close a cyclic buffer dependency and
	// micro-bursts on a port of the loop deadlock it (initiator in loop).
	DeadlockIn Kind = "deadlock-in"
	// DeadlockOut: the same loop, deadlocked by a host outside it that
	// injects PAUSE frames (initiator out of loop).
	DeadlockOut Kind = "deadlock-out"
	// Contention: a few elephants share a queue with a flow; the queue
	// builds without PFC.
	Contention Kind = "contention"
)

// Kinds lists every anomaly, in the order of the paper's Table 2.
var Kinds = []Kind{Incast, Storm, DeadlockIn, DeadlockOut, Contention}

// ParseKind parses an anomaly name.
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("netsim: unknown scenario %q (want incast, storm, deadlock-in, deadlock-out or contention)", s)
}

// Truth is what a scenario injected: what a diagnosis must find.
type Truth struct {
	Kind Kind
	// Initial is the initially congested egress port: where the bursts or
	// elephants meet, or the port toward the host injecting PAUSE frames.
	Initial PortRef
	// RootFlows are the flows causing the congestion (bursts, elephants);
	// empty when a host is the cause.
	RootFlows []FiveTuple
	// RootHost is the host injecting PAUSE frames, or None.
	RootHost NodeID
	// Loop is the cyclic buffer dependency's egress ports (deadlocks).
	Loop []PortRef
	// Start is when the anomaly is injected; End when its cause stops.
	Start, End time.Duration
}

// ScenarioConfig configures NewScenario.
type ScenarioConfig struct {
	Kind Kind
	Seed uint64
	// Load is the background load, a fraction of the hosts' line rate
	// (default 0.3; negative: no background traffic).
	Load float64
	// Sim configures the switches and hosts (its Seed is replaced by Seed).
	Sim Config
}

// Scenario is a simulation on FatTree(4) with background traffic and one
// injected anomaly, ready to Run until Duration.
type Scenario struct {
	Sim      *Sim
	Truth    Truth
	Duration time.Duration
	loop     *loopWatch
	quiet    *pauseWatch
}

// ContentionPFC returns, after a contention run, when the initial port's
// switch first sent a PAUSE frame out of the contending flows' ingress
// ports after the anomaly started: from then on the contention has become
// PFC backpressure by flow contention. ok is false when it never did.
func (sc *Scenario) ContentionPFC() (at time.Duration, ok bool) {
	if sc.quiet == nil || !sc.quiet.paused {
		return 0, false
	}
	return sc.quiet.at, true
}

// pauseWatch records when a switch first sent a PAUSE frame out of one of
// some ports after a time.
type pauseWatch struct {
	sw     NodeID
	ports  map[int]bool
	start  time.Duration
	paused bool
	at     time.Duration
}

// Enqueue implements SwitchObserver (nothing to watch).
func (w *pauseWatch) Enqueue(time.Duration, NodeID, int, int, *Packet, int, bool) {}

// PFC implements SwitchObserver (nothing to watch).
func (w *pauseWatch) PFC(time.Duration, NodeID, int, time.Duration) {}

// PFCSent records the first PAUSE out of a watched port.
func (w *pauseWatch) PFCSent(now time.Duration, sw NodeID, port int, pause time.Duration) {
	if sw == w.sw && w.ports[port] && pause > 0 && now >= w.start && !w.paused {
		w.paused, w.at = true, now
	}
}

// Formed reports, after the run, whether the injected anomaly took hold as
// injected: for the deadlocks, whether the loop closed (every port of it
// paused at once) after the injection and is still closed (a loop that never
// closed is no deadlock; one that closed before the injection was not
// initiated by it); true for the other kinds.
func (sc *Scenario) Formed() bool {
	if sc.loop == nil {
		return true
	}
	for _, p := range sc.Truth.Loop {
		if !sc.Sim.Paused(p) {
			return false
		}
	}
	return sc.loop.closedAt >= sc.Truth.Start
}

// Contenders returns, after the run, the flows other than the root flows
// that crossed the initial port while the anomaly was active (started
// before its end and not finished before its start): background traffic
// that really shares the congested queue.
func (sc *Scenario) Contenders() []FiveTuple {
	root := map[FiveTuple]bool{}
	for _, t := range sc.Truth.RootFlows {
		root[t] = true
	}
	var out []FiveTuple
	for _, f := range sc.Sim.Flows() {
		if root[f.Tuple] || f.Start >= sc.Truth.End || f.Finish() != 0 && f.Finish() < sc.Truth.Start || f.Sent() == 0 {
			continue
		}
		for _, p := range sc.Sim.Path(f) {
			if p == sc.Truth.Initial {
				out = append(out, f.Tuple)
				break
			}
		}
	}
	return out
}

// LoopClosed returns, after a deadlock run, when every port of the loop was
// first paused at once (the cyclic buffer dependency closed); ok is false
// when it never did, or for the other kinds.
func (sc *Scenario) LoopClosed() (at time.Duration, ok bool) {
	if sc.loop == nil || !sc.loop.closed {
		return 0, false
	}
	return sc.loop.closedAt, true
}

// loopWatch records when every port of a loop was first paused at once.
type loopWatch struct {
	ports    map[PortRef]int
	until    []time.Duration
	closed   bool
	closedAt time.Duration
}

// Enqueue implements SwitchObserver (nothing to watch).
func (w *loopWatch) Enqueue(time.Duration, NodeID, int, int, *Packet, int, bool) {}

// PFCSent implements SwitchObserver (nothing to watch).
func (w *loopWatch) PFCSent(time.Duration, NodeID, int, time.Duration) {}

// PFC tracks the loop's ports' pauses and records when all hold at once.
func (w *loopWatch) PFC(now time.Duration, sw NodeID, port int, pause time.Duration) {
	i, ok := w.ports[PortRef{sw, port}]
	if !ok || w.closed {
		return
	}
	w.until[i] = now + pause
	for _, u := range w.until {
		if u <= now {
			return
		}
	}
	w.closed, w.closedAt = true, now
}

// DefaultLoad is the background load of a scenario when none is given.
const DefaultLoad = 0.3

// fatTree4 names the nodes of FatTree(4).
type fatTree4 struct{}

func (fatTree4) edge(p, e int) NodeID    { return NodeID(p*2 + e) }
func (fatTree4) agg(p, a int) NodeID     { return NodeID(8 + p*2 + a) }
func (fatTree4) core(c int) NodeID       { return NodeID(16 + c) }
func (fatTree4) host(p, e, i int) NodeID { return NodeID(20 + p*4 + e*2 + i) }

// Ports: edge→host i is i, edge→agg a is 2+a; agg→edge e is e, agg a→core
// a*2+j is 2+j; core→pod p is p.

// NewScenario builds the scenario c describes. Everything it draws comes
// from c.Seed.
func NewScenario(c ScenarioConfig) (*Scenario, error) {
	cfg := c.Sim
	cfg.Seed = c.Seed
	s, err := New(FatTree(4), cfg)
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(c.Seed, 0x5ce4a110))
	ta := time.Millisecond + time.Duration(r.IntN(200))*time.Microsecond
	sc := &Scenario{Sim: s, Duration: ta + 1200*time.Microsecond}
	load := c.Load
	if load == 0 {
		load = DefaultLoad
	}
	if load > 1 {
		return nil, fmt.Errorf("netsim: load %v above 1", load)
	}
	if load > 0 {
		if _, err := (Workload{Load: load, Span: sc.Duration}).Add(s, r); err != nil {
			return nil, err
		}
	}
	b := builder{s: s, r: r, ta: ta, t: &sc.Truth}
	sc.Truth = Truth{Kind: c.Kind, RootHost: None, Start: ta, End: ta}
	switch c.Kind {
	case Incast:
		err = b.incast()
	case Storm:
		err = b.storm()
	case DeadlockIn, DeadlockOut:
		err = b.deadlock(c.Kind == DeadlockOut)
	case Contention:
		err = b.contention()
	default:
		_, err = ParseKind(string(c.Kind))
	}
	if err != nil {
		return nil, err
	}
	if len(sc.Truth.Loop) > 0 {
		sc.loop = &loopWatch{ports: map[PortRef]int{}, until: make([]time.Duration, len(sc.Truth.Loop))}
		for i, p := range sc.Truth.Loop {
			sc.loop.ports[p] = i
		}
		s.Observe(sc.loop)
	}
	if c.Kind == Contention {
		// The edge's ingress ports from the neighbour and both
		// aggregation switches: those of the contending flows.
		in := map[int]bool{1 - sc.Truth.Initial.Port: true, 2: true, 3: true}
		sc.quiet = &pauseWatch{sw: sc.Truth.Initial.Node, ports: in, start: sc.Truth.Start}
		s.Observe(sc.quiet)
	}
	return sc, nil
}

type builder struct {
	s    *Sim
	r    *rand.Rand
	ta   time.Duration
	t    *Truth
	tree fatTree4
}

func (b *builder) us(lo, hi int) time.Duration {
	return time.Duration(lo+b.r.IntN(hi-lo+1)) * time.Microsecond
}

func (b *builder) flow(f Flow) (*Flow, error) { return b.s.AddFlow(f) }

// via adds a flow pinned to a route through the switches given.
func (b *builder) via(f Flow, via ...NodeID) (*Flow, error) {
	route, err := b.s.RouteVia(f.Src, f.Dst, via...)
	if err != nil {
		return nil, err
	}
	f.Route = route
	return b.s.AddFlow(f)
}

// otherPod returns a random pod other than those given.
func (b *builder) otherPod(not ...int) int {
	for {
		p := b.r.IntN(4)
		ok := true
		for _, n := range not {
			ok = ok && p != n
		}
		if ok {
			return p
		}
	}
}

// incast: a group of eight hosts off the receiver's edge switch send
// 100–400 KB each at line rate to one host, synchronized within 1 µs; all
// of them pass through the receiver's link, where they meet (ECMP spreads
// them over the aggregation switches on the way; when it sends them all
// through one, they meet at its port toward the edge, and the receiver's
// link, fed by that one link, never queues: see meet). A 20 Gbps flow to
// the receiver's neighbour shares the aggregation switches' queues toward
// the edge.
func (b *builder) incast() error {
	t := b.tree
	p, e, i := b.r.IntN(4), b.r.IntN(2), b.r.IntN(2)
	dst := t.host(p, e, i)
	var cand []NodeID
	var paths [][]PortRef
	for _, h := range b.s.topo.Hosts() {
		if h/2 != dst/2 { // not on the receiver's edge
			cand = append(cand, h)
		}
	}
	b.r.Shuffle(len(cand), func(x, y int) { cand[x], cand[y] = cand[y], cand[x] })
	for _, src := range cand[:8] {
		f, err := b.flow(Flow{Src: src, Dst: dst, Start: b.ta + time.Duration(b.r.IntN(1000)), Size: int64(100_000 + b.r.IntN(300_001)), Tag: "burst"})
		if err != nil {
			return err
		}
		b.t.RootFlows = append(b.t.RootFlows, f.Tuple)
		paths = append(paths, b.s.Path(f))
	}
	if _, err := b.flow(Flow{Src: t.host(b.otherPod(p), b.r.IntN(2), b.r.IntN(2)), Dst: t.host(p, e, 1-i),
		Start: b.ta - b.us(300, 500), MaxGbps: 20, Tag: "victim"}); err != nil {
		return err
	}
	b.t.Initial = meet(paths)
	b.t.End = b.ta + 40*time.Microsecond
	return nil
}

// meet returns the port where flows of the same line rate ending at the same
// port first queue: walking back from that last port, the first one the
// flows reach by two or more links (a port fed by one link of its own rate
// does not queue).
func meet(paths [][]PortRef) PortRef {
	for back := 1; ; back++ {
		p := paths[0][len(paths[0])-back]
		var prev *PortRef
		for _, path := range paths {
			if len(path) <= back {
				return p // a flow enters here from its host
			}
			q := path[len(path)-back-1]
			if prev != nil && q != *prev {
				return p
			}
			prev = &q
		}
	}
}

// storm: a host injects PAUSE frames for 400–800 µs while three hosts of
// other pods send to it at 30 Gbps each (no contention before the
// injection) and a 20 Gbps flow goes to its neighbour.
func (b *builder) storm() error {
	p, e, i := b.r.IntN(4), b.r.IntN(2), b.r.IntN(2)
	h := b.tree.host(p, e, i)
	for range 3 {
		if _, err := b.flow(Flow{Src: b.tree.host(b.otherPod(p), b.r.IntN(2), b.r.IntN(2)), Dst: h,
			Start: b.ta - b.us(300, 500), MaxGbps: 30, Tag: "into-host"}); err != nil {
			return err
		}
	}
	if _, err := b.flow(Flow{Src: b.tree.host(b.otherPod(p), b.r.IntN(2), b.r.IntN(2)), Dst: b.tree.host(p, e, 1-i),
		Start: b.ta - b.us(300, 500), MaxGbps: 20, Tag: "victim"}); err != nil {
		return err
	}
	end := b.ta + b.us(400, 800)
	if err := b.s.InjectPFC(h, b.ta, end); err != nil {
		return err
	}
	b.t.Initial = PortRef{b.tree.edge(p, e), i}
	b.t.RootHost = h
	b.t.End = end
	return nil
}

// LoopGbps caps the rate of the misrouted traffic on each link of the loop
// of the deadlock scenarios (two flows a link, 2 × LoopGbps): the loop
// carries it without congestion until something pauses one of its ports.
const LoopGbps = 40

// deadlock closes a cyclic buffer dependency over the four switches of a
// pod, edges E1, E2 and aggregations A1, A2:
//
//	E1 → A1 → E2 → A2 → E1
//
// with flows each on two consecutive links of the loop (so each flow's path
// misses one switch of the loop): G1 (LoopGbps) from a host of E1 to a host
// X of E2 through A1 and G3 (LoopGbps) from a host of E2 to a host of E1
// through A2 (shortest paths, pinned); G2 from other pods through A1, E2, A2
// and on to a third pod, and G4 from other pods through A2, E1, A1 and on
// (both misrouted: a down-up bounce at E2 and E1), each two flows of
// LoopGbps/2 from two hosts entering the aggregation switch by its two
// cores. In loop: micro-bursts from three hosts to E2's hosts, all through
// A1, congest the loop port A1→E2. Out of loop: X, outside the loop,
// injects PAUSE frames.
//
// The loop flows start 10–30 µs before the anomaly, at their full rate:
// started earlier, background traffic on the loop's links had often cut
// them by DCQCN before the anomaly came, and the loop no longer held
// enough of their packets to close. Splitting G2 and G4 over two
// ingresses of the aggregation switch doubles what the bounce holds
// there when the loop pauses (the PFC thresholds are per ingress): when
// the anomaly's cause stops, enough of it reaches the bouncing edge switch
// to hold the loop closed before the pauses unwind. No host sends two of
// the loop flows or a loop flow and a burst (a NIC paused for one flow
// stops every flow it sends).
func (b *builder) deadlock(out bool) error {
	t := b.tree
	P := b.r.IntN(4)
	e1 := b.r.IntN(2)
	a1 := b.r.IntN(2)
	e2, a2 := 1-e1, 1-a1
	E1, E2, A1, A2 := t.edge(P, e1), t.edge(P, e2), t.agg(P, a1), t.agg(P, a2)
	b.t.Loop = []PortRef{{E1, 2 + a1}, {A1, e2}, {E2, 2 + a2}, {A2, e1}}
	start := b.ta - b.us(10, 30)
	x, y := b.r.IntN(2), b.r.IntN(2)
	X := t.host(P, e2, x)
	// G2 and G4 come from and go to other pods: two flows each, entering
	// the aggregation switch by its two cores and leaving by a random core
	// of the other one, from four different hosts.
	type loopFlow struct {
		f    Flow
		via  []NodeID
		gbps float64
	}
	flows := []loopFlow{
		{Flow{Src: t.host(P, e1, y), Dst: X}, []NodeID{A1, E2}, LoopGbps},
		{Flow{Src: t.host(P, e2, 1-x), Dst: t.host(P, e1, 1-y)}, []NodeID{A2, E1}, LoopGbps},
	}
	used := map[NodeID]bool{}
	bounce := func(in, out NodeID, ain, aout int) {
		for j := range 2 {
			var q, qe int
			var h NodeID
			for {
				q, qe = b.otherPod(P), b.r.IntN(2)
				h = t.host(q, qe, b.r.IntN(2))
				if !used[h] {
					break
				}
			}
			used[h] = true
			q2, qe2 := b.otherPod(P, q), b.r.IntN(2)
			flows = append(flows, loopFlow{Flow{Src: h, Dst: t.host(q2, qe2, b.r.IntN(2))},
				[]NodeID{t.edge(q, qe), t.agg(q, ain), t.core(ain*2 + j), in, out, t.agg(P, aout), t.core(aout*2 + b.r.IntN(2)), t.agg(q2, aout), t.edge(q2, qe2)},
				LoopGbps / 2})
		}
	}
	bounce(A1, E2, a1, a2) // G2: A1 → E2 → A2
	bounce(A2, E1, a2, a1) // G4: A2 → E1 → A1
	for _, x := range flows {
		x.f.Start, x.f.MaxGbps, x.f.Tag = start, x.gbps, "loop"
		if _, err := b.via(x.f, x.via...); err != nil {
			return err
		}
	}
	if out {
		end := b.ta + b.us(300, 600)
		if err := b.s.InjectPFC(X, b.ta, end); err != nil {
			return err
		}
		b.t.Initial = PortRef{E2, x}
		b.t.RootHost = X
		b.t.End = end
		return nil
	}
	// Micro-bursts to E2's hosts, all through A1, synchronized within
	// 1 µs: 1–2 MB at line rate from E1's other host and from hosts of two
	// other pods through both cores of A1.
	pods := []int{(P + 1) % 4, (P + 2) % 4, (P + 3) % 4}
	b.r.Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
	type src struct {
		h   NodeID
		via []NodeID
	}
	var srcs []src
	srcs = append(srcs, src{t.host(P, e1, 1-y), []NodeID{A1, E2}})
	// Two of the other pods with a host that sends no loop flow (a
	// burst paused back to its NIC would stop the loop flow).
	j := 0
	for _, q := range pods {
		var free []NodeID
		for i := range 4 {
			if h := t.host(q, i/2, i%2); !used[h] {
				free = append(free, h)
			}
		}
		if len(free) == 0 || j == 2 {
			continue
		}
		h := free[b.r.IntN(len(free))]
		qe := int(h-t.host(q, 0, 0)) / 2
		srcs = append(srcs, src{h, []NodeID{t.edge(q, qe), t.agg(q, a1), t.core(a1*2 + j), A1, E2}})
		j++
	}
	for k, sr := range srcs {
		fl, err := b.via(Flow{Src: sr.h, Dst: t.host(P, e2, k%2), Start: b.ta + time.Duration(b.r.IntN(1000)),
			Size: int64(1_000_000 + b.r.IntN(1_000_001)), Tag: "burst"}, sr.via...)
		if err != nil {
			return err
		}
		b.t.RootFlows = append(b.t.RootFlows, fl.Tuple)
	}
	b.t.Initial = b.t.Loop[1]
	b.t.End = b.ta + 160*time.Microsecond
	return nil
}

// contention: two elephants of 2–4 MB at 50–60 Gbps from other pods, the
// second 20–40 µs after the first, meet at a host's edge port through both
// aggregation switches, sharing the queue with a 10 Gbps flow from the
// host's neighbour. Congestion control mostly holds the queue below the
// PFC threshold; when it does not, the anomaly turns into PFC backpressure
// by flow contention (ContentionPFC says when).
func (b *builder) contention() error {
	t := b.tree
	p, e, i := b.r.IntN(4), b.r.IntN(2), b.r.IntN(2)
	dst := t.host(p, e, i)
	if _, err := b.flow(Flow{Src: t.host(p, e, 1-i), Dst: dst, Start: b.ta - b.us(300, 500), MaxGbps: 10, Tag: "victim"}); err != nil {
		return err
	}
	start := b.ta
	for a := range 2 {
		q := b.otherPod(p)
		at := start + b.us(0, 5)
		if a == 1 {
			at = start + b.us(20, 40)
		}
		f, err := b.via(Flow{Src: t.host(q, b.r.IntN(2), b.r.IntN(2)), Dst: dst, Start: at,
			Size: int64(2_000_000 + b.r.IntN(2_000_001)), MaxGbps: float64(50 + b.r.IntN(11)), Tag: "elephant"}, t.agg(p, a), t.edge(p, e))
		if err != nil {
			return err
		}
		b.t.RootFlows = append(b.t.RootFlows, f.Tuple)
	}
	b.t.Initial = PortRef{t.edge(p, e), i}
	b.t.End = start + 400*time.Microsecond
	return nil
}
