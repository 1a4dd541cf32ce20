package diagnose

import (
	"fmt"
	"sort"
	"strings"

	"github.com/dta-go/dta/internal/hawkeye/record"
)

// Kind names a diagnosed anomaly (Table 2).
type Kind string

// Anomalies.
const (
	// Incast is PFC backpressure by flow contention (micro-bursts).
	Incast Kind = "incast"
	// Storm is PFC backpressure by host PFC injection.
	Storm Kind = "storm"
	// DeadlockIn is a PFC deadlock whose initial congestion is in the loop.
	DeadlockIn Kind = "deadlock-in"
	// DeadlockOut is a PFC deadlock whose initial congestion is outside it.
	DeadlockOut Kind = "deadlock-out"
	// Contention is normal flow contention, without PFC.
	Contention Kind = "contention"
	// None: nothing in the telemetry explains the victim's degradation.
	None Kind = "none"
)

// Causes of the initial congestion.
const (
	CauseContention = "flow contention"
	CauseInjection  = "host PFC injection"
)

// Contributor is a flow with a positive port→flow edge at the initial port.
type Contributor struct {
	Tuple  record.Tuple
	Weight float64
}

// Diagnosis is Algorithm 2's answer.
type Diagnosis struct {
	Kind  Kind
	Cause string // CauseContention or CauseInjection ("" for None)
	// Initial is the initially congested port; InitialPeer what it faces.
	Initial         Port
	InitialPeerKind uint8
	InitialPeer     uint16
	// Path is the PFC spreading path from the victim's first paused port
	// to Initial (deadlocks: to the loop, then out of it).
	Path []Port
	// Loop is the cycle of port-level edges (deadlocks).
	Loop []Port
	// RootFlows are the root-cause flows, heaviest first (flow contention).
	RootFlows []Contributor
	// LoopFlows are the flows seen at two or more ports of the loop: the
	// flows whose routes close the cyclic buffer dependency (deadlocks).
	LoopFlows []record.Tuple
	// RootHost is the host injecting PFC (host injection): Initial's peer.
	RootHost uint16
	Victim   record.Tuple
}

// String returns a one-line summary.
func (d *Diagnosis) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", d.Kind)
	if d.Kind == None {
		return b.String()
	}
	fmt.Fprintf(&b, " (%s) at %s", d.Cause, d.Initial)
	if len(d.Loop) > 0 {
		fmt.Fprintf(&b, ", loop %s", joinPorts(d.Loop))
	}
	if len(d.Path) > 1 {
		fmt.Fprintf(&b, ", path %s", joinPorts(d.Path))
	}
	if d.Cause == CauseInjection {
		fmt.Fprintf(&b, ", host node %d", d.RootHost)
	} else {
		fmt.Fprintf(&b, ", %d root flows", len(d.RootFlows))
	}
	return b.String()
}

func joinPorts(ps []Port) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, " → ")
}

// AnalyzeOptions tune Analyze.
type AnalyzeOptions struct {
	// MinContribution is the contribution (packets waited for) from which
	// a flow counts as a contention contributor (default 0.5).
	MinContribution float64
	// RootShare, when above 0, keeps among contributors only those of at
	// least this share of the heaviest one as root causes. By default every
	// contributor is one: Table 2's F_c is every flow of positive weight.
	RootShare float64
}

func (o AnalyzeOptions) withDefaults() AnalyzeOptions {
	if o.MinContribution == 0 {
		o.MinContribution = 0.5
	}
	return o
}

// Analyze runs Algorithm 2 on g for its victim.
func Analyze(g *Graph, opt AnalyzeOptions) *Diagnosis {
	opt = opt.withDefaults()
	a := &analysis{g: g, opt: opt}
	d := &Diagnosis{Kind: None, Victim: g.Victim}
	victim := g.Flows[g.Victim]
	var vports []Port
	if victim != nil {
		vports = a.victimPath(victim)
		a.vports, a.victim = vports, victim
		// PFC causality from every port that paused the victim, the most
		// downstream one last (its terminals are preferred: pauses
		// upstream on the victim's path usually come from it).
		for i, p := range vports {
			if victim.PausedAt[p] > 0 {
				a.start = i
				a.walk(p, nil)
			}
		}
	} else {
		// No flow records (port-level telemetry only): start from the
		// paused ports of the switches on the victim's path.
		for p, n := range g.Ports {
			if g.VictimSwitches[p.Switch] && n.Paused > 0 {
				vports = append(vports, p)
			}
		}
		sort.Slice(vports, func(i, j int) bool { return less(vports[i], vports[j]) })
		for _, p := range vports {
			a.walk(p, nil)
		}
	}
	if len(a.loops) == 0 && len(a.terminals) > 0 {
		a.closeLoops(vports)
	}
	if len(a.loops) > 0 {
		return a.deadlock(d)
	}
	if len(a.terminals) > 0 {
		return a.spreading(d, a.heaviest())
	}
	// The victim was not paused: a port of its path may still be where
	// others' PFC paths end (it went through the initial congestion).
	for _, p := range vports {
		if a.hasIncoming(p) {
			return a.spreading(d, walkResult{port: p, path: []Port{p}})
		}
	}
	// Normal flow contention: the victim's port with the largest positive
	// contributions.
	best, bestW := Port{}, 0.0
	for _, p := range vports {
		if w := a.positive(p); w > bestW {
			best, bestW = p, w
		}
	}
	if bestW > 0 {
		d.Kind, d.Cause, d.Initial = Contention, CauseContention, best
		a.fill(d, best)
		d.RootFlows = a.contributors(best, nil)
	}
	return d
}

type walkResult struct {
	port  Port
	path  []Port
	start int // index of the victim port the walk started from
}

type analysis struct {
	g         *Graph
	opt       AnalyzeOptions
	loops     [][]Port
	terminals []walkResult
	visited   map[Port]bool
	start     int
	vports    []Port
	victim    *FlowNode
	light     bool // walk every edge (All), for loops only
}

// victimPath returns the ports the victim crossed, in path order (each
// port's peer switch holds the next).
func (a *analysis) victimPath(v *FlowNode) []Port {
	bySwitch := map[uint16]Port{}
	for p := range v.Pkts {
		bySwitch[p.Switch] = p
	}
	isNext := map[uint16]bool{}
	for p := range v.Pkts {
		if n := a.g.Ports[p]; n != nil && n.PeerKind == record.PeerSwitch {
			isNext[n.Peer] = true
		}
	}
	var out []Port
	for sw, p := range bySwitch {
		if !isNext[sw] {
			for {
				out = append(out, p)
				n := a.g.Ports[p]
				if n == nil || n.PeerKind != record.PeerSwitch {
					break
				}
				q, ok := bySwitch[n.Peer]
				if !ok || len(out) > len(bySwitch) {
					break
				}
				p = q
			}
			break
		}
	}
	if len(out) < len(bySwitch) { // no clear start (a loop in the victim's own path)
		out = out[:0]
		for _, p := range bySwitch {
			out = append(out, p)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Switch < out[j].Switch })
	}
	return out
}

// walk is CheckPortNode: a depth-first walk of port-level edges from p,
// recording loops (a port already on the path) and terminal ports
// (out-degree 0).
func (a *analysis) walk(p Port, path []Port) {
	for i, q := range path {
		if q == p {
			a.addLoop(path[i:])
			return
		}
	}
	path = append(path, p)
	n := a.g.Ports[p]
	var edges []Edge
	if n != nil {
		edges = n.Out
		if a.light {
			edges = n.All
		}
	}
	if len(edges) == 0 {
		if a.light {
			return
		}
		a.terminals = append(a.terminals, walkResult{p, append([]Port(nil), path...), a.start})
		return
	}
	if a.visited == nil {
		a.visited = map[Port]bool{}
	}
	if a.visited[p] {
		return
	}
	a.visited[p] = true
	for _, e := range edges {
		a.walk(e.To, path)
	}
	delete(a.visited, p)
}

// closeLoops walks again from the victim's paused ports vports, along every
// port-level edge, the light ones MinEdge dropped included, for loops only:
// a deadlock's loop may just have closed, one of its edges still light
// beside the heavy wait the PFC path followed out of it.
func (a *analysis) closeLoops(vports []Port) {
	a.light = true
	defer func() { a.light = false }()
	for _, p := range vports {
		if a.victim == nil || a.victim.PausedAt[p] > 0 {
			a.walk(p, nil)
		}
	}
}

// heaviest returns, among the terminals found from the most downstream
// port that paused the victim, the one reached by the path of largest total
// edge weight: where the strongest chain of waiting ends (several terminals
// arise when PFC spreads through a switch that also queues other traffic).
func (a *analysis) heaviest() walkResult {
	last := 0
	for _, t := range a.terminals {
		last = max(last, t.start)
	}
	best, bestW := a.terminals[0], -1.0
	for _, t := range a.terminals {
		if t.start != last {
			continue
		}
		var w float64
		for i := 0; i+1 < len(t.path); i++ {
			for _, e := range a.g.Ports[t.path[i]].Out {
				if e.To == t.path[i+1] {
					w += e.Weight
				}
			}
		}
		if w > bestW {
			best, bestW = t, w
		}
	}
	return best
}

func (a *analysis) addLoop(l []Port) {
	// One loop per set of ports, in rotation starting at its least port.
	key := append([]Port(nil), l...)
	sort.Slice(key, func(i, j int) bool { return less(key[i], key[j]) })
	for _, x := range a.loops {
		k2 := append([]Port(nil), x...)
		sort.Slice(k2, func(i, j int) bool { return less(k2[i], k2[j]) })
		if fmt.Sprint(k2) == fmt.Sprint(key) {
			return
		}
	}
	a.loops = append(a.loops, append([]Port(nil), l...))
}

func less(a, b Port) bool {
	if a.Switch != b.Switch {
		return a.Switch < b.Switch
	}
	return a.Port < b.Port
}

func (a *analysis) hasIncoming(p Port) bool {
	for _, n := range a.g.Ports {
		for _, e := range n.Out {
			if e.To == p {
				return true
			}
		}
	}
	return false
}

// positive returns the sum of p's positive contributions at or above the
// threshold.
func (a *analysis) positive(p Port) float64 {
	n := a.g.Ports[p]
	if n == nil {
		return 0
	}
	var s float64
	for _, w := range n.Flows {
		if w >= a.opt.MinContribution {
			s += w
		}
	}
	return s
}

// contributors is AnalyzeFlowContention: p's root-cause flows (those in
// skip left out).
func (a *analysis) contributors(p Port, skip map[record.Tuple]bool) []Contributor {
	n := a.g.Ports[p]
	if n == nil {
		return nil
	}
	var cs []Contributor
	var top float64
	for t, w := range n.Flows {
		if w >= a.opt.MinContribution && !skip[t] {
			cs = append(cs, Contributor{t, w})
			top = max(top, w)
		}
	}
	kept := cs[:0]
	for _, c := range cs {
		if c.Weight >= a.opt.RootShare*top {
			kept = append(kept, c)
		}
	}
	sort.Slice(kept, func(i, j int) bool {
		if kept[i].Weight != kept[j].Weight {
			return kept[i].Weight > kept[j].Weight
		}
		return kept[i].Tuple.String() < kept[j].Tuple.String()
	})
	return kept
}

func (a *analysis) fill(d *Diagnosis, p Port) {
	d.Initial = p
	if n := a.g.Ports[p]; n != nil {
		d.InitialPeerKind, d.InitialPeer = n.PeerKind, n.Peer
	}
}

// spreading diagnoses a PFC path ending at terminal t: flow contention
// there (incast) or none (host injection: storm).
func (a *analysis) spreading(d *Diagnosis, t walkResult) *Diagnosis {
	a.fill(d, t.port)
	d.Path = t.path
	// The PFC path starts where the victim was first paused on its way.
	if a.victim != nil && t.start > 0 && t.start < len(a.vports) {
		first := t.start
		for i := t.start - 1; i >= 0 && a.victim.PausedAt[a.vports[i]] > 0; i-- {
			first = i
		}
		d.Path = append(append([]Port(nil), a.vports[first:t.start]...), t.path...)
	}
	if cs := a.contributors(t.port, nil); len(cs) > 0 && !a.pausedByPeer(t.port) {
		d.Kind, d.Cause, d.RootFlows = Incast, CauseContention, cs
		return d
	}
	d.Kind, d.Cause, d.RootHost = Storm, CauseInjection, d.InitialPeer
	return d
}

// deadlock is DeadlockDiagnose on the first loop found. A loop port with an
// edge leaving the loop (out-degree above one, counting the light edges
// MinEdge drops: the loop's own wait dwarfs the wait for the port that
// started it) leads to a candidate initial port out of the loop. A candidate
// paused by the device it faces (host PFC injection) is the initiator; one
// with flow contention is when its contention outweighs that of every loop
// port (a port out of the loop merely queueing what the deadlock lets
// through is no initiator); otherwise the initiator is in the loop: the loop
// port with the most contention, among the loop ports where flows other
// than the loop's own contend (if any does): the in-loop root causes are
// those flows (the loop's flows only close the cyclic buffer dependency), so
// a loop port whose only contributors are loop flows — one loop flow's
// backlog behind another — holds no root cause and is not where the
// congestion began.
func (a *analysis) deadlock(d *Diagnosis) *Diagnosis {
	loop := a.loops[0]
	d.Loop = loop
	d.LoopFlows = a.loopFlows(loop)
	in := map[Port]bool{}
	for _, p := range loop {
		in[p] = true
	}
	skip := map[record.Tuple]bool{}
	for _, t := range d.LoopFlows {
		skip[t] = true
	}
	// Initial node in the loop: the loop port with the most contention,
	// among those where flows other than the loop's contend if any.
	rooted := false
	for _, p := range loop {
		rooted = rooted || len(a.contributors(p, skip)) > 0
	}
	best, bestW := loop[0], -1.0
	for _, p := range loop {
		if rooted && len(a.contributors(p, skip)) == 0 {
			continue
		}
		if w := a.contention(p, nil); w > bestW {
			best, bestW = p, w
		}
	}
	// Initial node out of the loop.
	var host, cont *walkResult
	var hostPaused uint64
	contW := 0.0
	for _, p := range loop {
		for _, e := range a.g.Ports[p].All {
			if in[e.To] {
				continue
			}
			t, ok := a.exit(e.To, in, map[Port]bool{}, []Port{p})
			if !ok {
				continue
			}
			if a.pausedByPeer(t.port) {
				if n := a.g.Ports[t.port]; host == nil || n.Paused > hostPaused {
					host, hostPaused = &t, n.Paused
				}
			} else if w := a.contention(t.port, nil); w > contW {
				cont, contW = &t, w
			}
		}
	}
	switch {
	case host != nil:
		d.Kind, d.Cause = DeadlockOut, CauseInjection
		a.fill(d, host.port)
		d.Path, d.RootHost = host.path, d.InitialPeer
		return d
	case cont != nil && contW > bestW:
		d.Kind, d.Cause = DeadlockOut, CauseContention
		a.fill(d, cont.port)
		d.Path, d.RootFlows = cont.path, a.contributors(cont.port, nil)
		return d
	}
	d.Kind, d.Cause = DeadlockIn, CauseContention
	a.fill(d, best)
	d.RootFlows = a.contributors(best, skip)
	if len(d.RootFlows) == 0 {
		d.RootFlows = a.contributors(best, nil)
	}
	return d
}

// contention returns the sum of p's root-cause contributions (flows in
// skip left out).
func (a *analysis) contention(p Port, skip map[record.Tuple]bool) float64 {
	var w float64
	for _, c := range a.contributors(p, skip) {
		w += c.Weight
	}
	return w
}

// loopFlows returns the flows seen at two or more ports of loop.
func (a *analysis) loopFlows(loop []Port) []record.Tuple {
	var out []record.Tuple
	for t, f := range a.g.Flows {
		n := 0
		for _, p := range loop {
			if f.Pkts[p] > 0 {
				n++
			}
		}
		if n >= 2 {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// pausedByPeer reports whether p itself was paused: a port with no
// port-level edge out that is paused waits for the device it faces (a host
// injecting PFC), whatever contention it saw before.
func (a *analysis) pausedByPeer(p Port) bool {
	n := a.g.Ports[p]
	return n != nil && n.Paused > 0 && len(n.Out) == 0
}

// exit follows port-level edges from p, avoiding the loop, to a terminal.
func (a *analysis) exit(p Port, loop, seen map[Port]bool, path []Port) (walkResult, bool) {
	if seen[p] || loop[p] {
		return walkResult{}, false
	}
	seen[p] = true
	path = append(path, p)
	n := a.g.Ports[p]
	if n == nil || len(n.Out) == 0 {
		return walkResult{port: p, path: append([]Port(nil), path...)}, true
	}
	for _, e := range n.Out {
		if r, ok := a.exit(e.To, loop, seen, path); ok {
			return r, true
		}
	}
	return walkResult{}, false
}
