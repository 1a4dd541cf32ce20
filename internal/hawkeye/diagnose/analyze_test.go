package diagnose

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/dta-go/dta/internal/hawkeye/record"
)

// fabric builds a poll's telemetry by hand: one epoch, port records, meters
// and flow records.
type fabric struct{ t *Telemetry }

func newFabric(victim record.Tuple, switches ...uint16) *fabric {
	t := &Telemetry{Poll: 1, Meters: map[string]uint64{}, Victim: victim}
	for _, sw := range switches {
		t.Manifests = append(t.Manifests, record.Manifest{Poll: 1, Switch: sw, Switches: uint16(len(switches)), Role: record.RoleVictimPath})
	}
	return &fabric{t}
}

// link records port sw.p facing a switch (peer, peerPort) or, when
// peer ≥ 100, a host.
func (f *fabric) port(sw uint16, p uint8, peer uint16, peerPort uint8, pkts, paused, avgQueue uint32) {
	kind := record.PeerSwitch
	if peer >= 100 {
		kind = record.PeerHost
	}
	f.t.Ports = append(f.t.Ports, record.Port{Poll: 1, Switch: sw, Epoch: 1, Port: p, PeerKind: kind, Peer: peer, PeerPort: peerPort,
		Pkts: pkts, Paused: paused, QDepth: pkts * avgQueue})
}

func (f *fabric) meter(sw uint16, in, out uint8, b uint64) {
	f.t.Meters[string(record.MeterKey(1, sw, 1, in, out))] = b
}

func (f *fabric) flow(sw uint16, p uint8, tu record.Tuple, pkts, paused, queued, depth uint32) {
	f.t.Flows = append(f.t.Flows, record.Flow{Poll: 1, Switch: sw, Epoch: 1, Port: p, Tuple: tu, Pkts: pkts, Paused: paused,
		QDepth: queued * depth, Queued: uint16(queued)})
}

func tup(n uint32) record.Tuple {
	return record.Tuple{SrcIP: 0x0a000000 + n, DstIP: 0x0a0000ff, SrcPort: 49152, DstPort: 4791, Proto: 17}
}

var (
	victim = tup(1)
	burst1 = tup(2)
	burst2 = tup(3)
	loopF  = tup(4)
)

// Every fabric below has switches 1..4; hosts are 100+. Switch s's port p
// faces the next switch's port 0 unless said otherwise.
func TestAnalyzeMatchesTheSignaturesOfTable2(t *testing.T) {
	for _, c := range []struct {
		name      string
		build     func() *fabric
		kind      Kind
		cause     string
		initial   Port
		loop      int
		roots     []record.Tuple
		rootHost  uint16
		pathStart Port
	}{
		{
			name: "PFC backpressure by micro-bursts two hops away",
			build: func() *fabric {
				f := newFabric(victim, 1, 2)
				f.port(1, 1, 2, 0, 500, 300, 40)  // s1.p1 → s2, paused
				f.port(2, 1, 100, 0, 3000, 0, 60) // s2.p1 → host 100, congested
				f.port(2, 2, 101, 0, 400, 0, 0)   // s2.p2 → host 101, idle (the victim's way)
				f.meter(2, 0, 1, 2e6)
				f.meter(2, 0, 2, 4e5)
				f.flow(1, 1, victim, 500, 300, 200, 40)
				f.flow(2, 2, victim, 400, 0, 0, 0)
				f.flow(2, 1, burst1, 1500, 0, 1500, 60)
				f.flow(2, 1, burst2, 1400, 0, 1400, 60)
				f.flow(2, 1, loopF, 100, 0, 100, 60)
				return f
			},
			kind: Incast, cause: CauseContention, initial: Port{2, 1}, roots: []record.Tuple{burst1, burst2}, pathStart: Port{1, 1},
		},
		{
			name: "PFC storm injected by a host",
			build: func() *fabric {
				f := newFabric(victim, 1, 2)
				f.port(1, 1, 2, 0, 500, 300, 40)
				f.port(2, 1, 100, 0, 800, 790, 80) // paused by its host
				f.meter(2, 0, 1, 8e5)
				f.flow(1, 1, victim, 500, 300, 200, 40)
				f.flow(2, 1, victim, 400, 395, 5, 3)
				f.flow(2, 1, burst1, 400, 395, 5, 3)
				return f
			},
			kind: Storm, cause: CauseInjection, initial: Port{2, 1}, rootHost: 100, pathStart: Port{1, 1},
		},
		{
			name: "normal flow contention, no PFC",
			build: func() *fabric {
				f := newFabric(victim, 1)
				f.port(1, 1, 100, 0, 3000, 0, 30)
				f.flow(1, 1, victim, 200, 0, 200, 30)
				f.flow(1, 1, burst1, 1400, 0, 1400, 30)
				f.flow(1, 1, burst2, 1400, 0, 1400, 30)
				return f
			},
			kind: Contention, cause: CauseContention, initial: Port{1, 1}, roots: []record.Tuple{burst1, burst2},
		},
		{
			name: "deadlock whose initial congestion is in the loop",
			build: func() *fabric {
				f := newFabric(victim, 1, 2, 3, 4)
				// Loop s1.p1 → s2.p1 → s3.p1 → s4.p1 → s1.p1; ports
				// facing the next switch's port 0.
				for sw := uint16(1); sw <= 4; sw++ {
					f.port(sw, 1, sw%4+1, 0, 1000, 600, 50)
					f.meter(sw, 0, 1, 1e6)
					f.flow(sw, 1, loopF, 1000, 600, 0, 0)
				}
				f.flow(1, 1, victim, 300, 200, 50, 40)
				f.flow(2, 1, burst1, 900, 0, 900, 50)
				f.flow(2, 1, burst2, 800, 0, 800, 50)
				f.flow(2, 1, tup(9), 100, 0, 100, 50)
				return f
			},
			kind: DeadlockIn, cause: CauseContention, initial: Port{2, 1}, loop: 4, roots: []record.Tuple{burst1, burst2},
		},
		{
			name: "deadlock whose initial congestion is a host outside the loop",
			build: func() *fabric {
				f := newFabric(victim, 1, 2, 3, 4)
				for sw := uint16(1); sw <= 4; sw++ {
					f.port(sw, 1, sw%4+1, 0, 1000, 600, 50)
					f.meter(sw, 0, 1, 1e6)
					f.flow(sw, 1, loopF, 1000, 600, 100, 10)
				}
				f.port(3, 2, 200, 0, 500, 490, 60) // s3.p2 → host 200, paused by it
				f.meter(3, 0, 2, 5e5)
				f.flow(1, 1, victim, 300, 200, 50, 40)
				f.flow(3, 2, burst1, 500, 490, 10, 5)
				return f
			},
			kind: DeadlockOut, cause: CauseInjection, initial: Port{3, 2}, loop: 4, rootHost: 200,
		},
		{
			name: "nothing wrong",
			build: func() *fabric {
				f := newFabric(victim, 1)
				f.port(1, 1, 100, 0, 300, 0, 0)
				f.flow(1, 1, victim, 300, 0, 0, 0)
				return f
			},
			kind: None,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := Build(c.build().t, Options{})
			d := Analyze(g, AnalyzeOptions{})
			if d.Kind != c.kind || d.Cause != c.cause {
				t.Fatalf("diagnosis %s, want %s (%s)", d, c.kind, c.cause)
			}
			if c.kind == None {
				return
			}
			if d.Initial != c.initial {
				t.Errorf("initial port %s, want %s", d.Initial, c.initial)
			}
			if len(d.Loop) != c.loop {
				t.Errorf("loop %v, want %d ports", d.Loop, c.loop)
			}
			if c.cause == CauseInjection && d.RootHost != c.rootHost {
				t.Errorf("root host %d, want %d", d.RootHost, c.rootHost)
			}
			if len(d.RootFlows) != len(c.roots) {
				t.Fatalf("root flows %v, want %v", d.RootFlows, c.roots)
			}
			want := map[record.Tuple]bool{}
			for _, r := range c.roots {
				want[r] = true
			}
			for _, r := range d.RootFlows {
				if !want[r.Tuple] || r.Weight <= 0 {
					t.Errorf("root flow %s (%+.1f) is not one of %v", r.Tuple, r.Weight, c.roots)
				}
			}
			if c.pathStart != (Port{}) && (len(d.Path) < 2 || d.Path[0] != c.pathStart || d.Path[len(d.Path)-1] != c.initial) {
				t.Errorf("PFC path %v, want %s → … → %s", d.Path, c.pathStart, c.initial)
			}
			var svg bytes.Buffer
			if err := WriteSVG(&svg, g, d, SVGOptions{}); err != nil || !strings.HasPrefix(svg.String(), "<svg") || !strings.Contains(svg.String(), c.initial.String()) {
				t.Errorf("SVG (%v) does not draw the initial port %s", err, c.initial)
			}
		})
	}
}

func TestContributionsSumToZeroAndFavourTheFlowsThatFillTheQueue(t *testing.T) {
	flows := []record.Flow{
		{Tuple: burst1, Pkts: 1000, Queued: 1000, QDepth: 1000 * 40},
		{Tuple: burst2, Pkts: 800, Queued: 800, QDepth: 800 * 40},
		{Tuple: victim, Pkts: 100, Paused: 50, Queued: 50, QDepth: 50 * 40},
		{Tuple: loopF, Pkts: 500, Paused: 500},
	}
	c := contribution(flows)
	var sum float64
	for _, w := range c {
		sum += w
	}
	if sum > 1e-6 || sum < -1e-6 {
		t.Errorf("contributions sum to %v, want 0", sum)
	}
	if !(c[burst1] > c[burst2] && c[burst2] > 0 && c[victim] < 0) {
		t.Errorf("contributions %v: want burst1 > burst2 > 0 > victim", c)
	}
	if _, ok := c[loopF]; ok {
		t.Errorf("a flow with only paused packets got a contribution")
	}
}

func TestPortOnlyTelemetryFollowsThePFCPathButNamesNoFlow(t *testing.T) {
	f := newFabric(victim, 1, 2)
	f.port(1, 1, 2, 0, 500, 300, 40)
	f.port(2, 1, 100, 0, 3000, 0, 60)
	f.meter(2, 0, 1, 2e6)
	f.flow(1, 1, victim, 500, 300, 200, 40)
	f.flow(2, 1, burst1, 1500, 0, 1500, 60)
	f.flow(2, 1, victim, 100, 0, 100, 60)
	d := Analyze(Build(f.t, Options{NoFlows: true}), AnalyzeOptions{})
	if d.Initial != (Port{2, 1}) || len(d.RootFlows) != 0 {
		t.Errorf("port-only diagnosis %s: want the initial port s2.p1 and no root flow", d)
	}
	d = Analyze(Build(f.t, Options{NoPorts: true}), AnalyzeOptions{})
	if d.Kind == Incast {
		t.Errorf("flow-only telemetry traced PFC: %s", d)
	}
}

// A flow that queued behind another in an epoch when the port was not
// congested (seed 103 of the contention scenario: a background flow gone
// before the elephants came) is no root cause of the contention later.
func TestAFlowOfAnUncongestedEpochIsNoContributor(t *testing.T) {
	for _, c := range []struct {
		name      string
		quietQ    uint32 // queue the early flows found in epoch 1
		wantEarly bool
	}{
		{"quiet epoch", 2, false},
		{"congested epoch", 30, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFabric(victim, 1)
			f.port(1, 1, 100, 0, 3000, 0, 30)
			early := tup(7)
			// Epoch 1: early and the victim, before the bursts.
			f.t.Flows = append(f.t.Flows,
				record.Flow{Poll: 1, Switch: 1, Epoch: 1, Port: 1, Tuple: early, Pkts: 80, Queued: 80, QDepth: 80 * c.quietQ},
				record.Flow{Poll: 1, Switch: 1, Epoch: 1, Port: 1, Tuple: victim, Pkts: 160, Queued: 10, QDepth: 10 * 2 * c.quietQ})
			// Epoch 2: the bursts fill the queue.
			for _, r := range []record.Flow{
				{Tuple: burst1, Pkts: 450, Queued: 450, QDepth: 450 * 66},
				{Tuple: burst2, Pkts: 580, Queued: 450, QDepth: 450 * 66},
				{Tuple: victim, Pkts: 160, Queued: 90, QDepth: 90 * 67},
			} {
				r.Poll, r.Switch, r.Epoch, r.Port = 1, 1, 2, 1
				f.t.Flows = append(f.t.Flows, r)
			}
			d := Analyze(Build(f.t, Options{}), AnalyzeOptions{})
			named := false
			for _, r := range d.RootFlows {
				named = named || r.Tuple == early
			}
			if d.Kind != Contention || named != c.wantEarly {
				t.Errorf("%s, root flows %v: early flow named %v, want %v", d, d.RootFlows, named, c.wantEarly)
			}
		})
	}
}

// Table 2 names every flow of positive weight at the initial port as a root
// cause, however small beside the heaviest (contention seeds 505, 537, 550:
// a background flow that started at line rate outweighed the elephants, of
// which one came out slightly positive).
func TestEveryPositiveContributorIsARootCause(t *testing.T) {
	bg, e1, e2 := tup(5), tup(6), tup(7)
	p := Port{1, 1}
	for _, c := range []struct {
		share float64
		want  []record.Tuple
	}{
		{0, []record.Tuple{bg, e1}},
		{0.1, []record.Tuple{bg}},
	} {
		t.Run(fmt.Sprint("share ", c.share), func(t *testing.T) {
			g := &Graph{Ports: map[Port]*PortNode{p: {Port: p, PeerKind: record.PeerHost, Peer: 100,
				Flows: map[record.Tuple]float64{bg: 98.9, e1: 3.1, e2: -45.7, victim: -56.3}}},
				Flows:  map[record.Tuple]*FlowNode{victim: {Tuple: victim, PausedAt: map[Port]uint64{}, Pkts: map[Port]uint64{p: 100}}},
				Victim: victim}
			d := Analyze(g, AnalyzeOptions{RootShare: c.share})
			var got []record.Tuple
			for _, r := range d.RootFlows {
				got = append(got, r.Tuple)
			}
			if d.Kind != Contention || fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("%s, root flows %v, want %v", d, got, c.want)
			}
		})
	}
}

// In a loop, the initial port is the loop port with the most contention
// among those where flows other than the loop's contend (deadlock-in seeds
// 58, 515: a loop flow's backlog behind another loop flow outweighed the
// bursts at the port the loop grew from).
func TestTheInLoopInitialPortHoldsContentionOfFlowsOffTheLoop(t *testing.T) {
	for _, c := range []struct {
		name        string
		s2Flows     map[record.Tuple]float64 // at s2.p1, beside the loop flow's backlog at s3.p1
		wantInitial Port
	}{
		{"bursts at s2.p1", map[record.Tuple]float64{burst1: 40, burst2: 30, victim: -70}, Port{2, 1}},
		{"only loop flows anywhere", map[record.Tuple]float64{loopF: 40, victim: -40}, Port{3, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := &Graph{Ports: map[Port]*PortNode{}, Victim: victim,
				Flows: map[record.Tuple]*FlowNode{
					victim: {Tuple: victim, PausedAt: map[Port]uint64{{1, 1}: 200}, Pkts: map[Port]uint64{{1, 1}: 300}},
					loopF:  {Tuple: loopF, PausedAt: map[Port]uint64{}, Pkts: map[Port]uint64{{2, 1}: 300, {3, 1}: 300, {4, 1}: 300}},
				}}
			for sw := uint16(1); sw <= 4; sw++ {
				next := Port{sw%4 + 1, 1}
				g.Ports[Port{sw, 1}] = &PortNode{Port: Port{sw, 1}, PeerKind: record.PeerSwitch, Peer: next.Switch,
					Pkts: 1000, Paused: 300, QDepth: 1000 * 50, Out: []Edge{{next, 1000}}, All: []Edge{{next, 1000}},
					Flows: map[record.Tuple]float64{}}
			}
			g.Ports[Port{2, 1}].Flows = c.s2Flows
			g.Ports[Port{3, 1}].Flows = map[record.Tuple]float64{loopF: 150, victim: -150}
			d := Analyze(g, AnalyzeOptions{})
			if d.Kind != DeadlockIn || d.Initial != c.wantInitial {
				t.Errorf("%s, want deadlock-in at %s", d, c.wantInitial)
			}
		})
	}
}
