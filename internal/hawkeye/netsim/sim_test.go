package netsim

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// star returns a switch with n hosts.
func star(n int) (*Topology, NodeID, []NodeID) {
	t := NewTopology()
	sw := t.AddSwitch("s0")
	var hs []NodeID
	for i := range n {
		h := t.AddHost("h" + string(rune('0'+i)))
		t.Connect(sw, h)
		hs = append(hs, h)
	}
	return t, sw, hs
}

type pfcCounter struct{ pauses, enq, paused int }

func (c *pfcCounter) Enqueue(_ time.Duration, _ NodeID, _, _ int, _ *Packet, _ int, paused bool) {
	c.enq++
	if paused {
		c.paused++
	}
}

func (c *pfcCounter) PFCSent(time.Duration, NodeID, int, time.Duration) {}

func (c *pfcCounter) PFC(_ time.Duration, _ NodeID, _ int, pause time.Duration) {
	if pause > 0 {
		c.pauses++
	}
}

func TestOneFlowRunsAtLineRateWithoutPFC(t *testing.T) {
	topo, _, hs := star(2)
	s, err := New(topo, Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.AddFlow(Flow{Src: hs[0], Dst: hs[1], Size: 1_000_000})
	if err != nil {
		t.Fatal(err)
	}
	st := s.Run(time.Millisecond)
	if f.Delivered() != 1_000_000 {
		t.Fatalf("delivered %d bytes, want 1e6", f.Delivered())
	}
	// 1 MB at 100 Gbps is 80 µs, plus two link delays and a packet.
	if fin := f.Finish(); fin < 80*time.Microsecond || fin > 85*time.Microsecond {
		t.Errorf("finished at %v, want about 84 µs", fin)
	}
	if st.PFCFrames != 0 || st.Drops != 0 || st.ECNMarks != 0 {
		t.Errorf("stats %+v, want no PFC, drop or mark", st)
	}
	// 2 links: 2×(2 µs + 80 ns) forward, 2×(2 µs + 6 ns) for the ACK back.
	if want := 8172 * time.Nanosecond; f.BaseRTT() != want {
		t.Errorf("base RTT %v, want %v", f.BaseRTT(), want)
	}
}

func TestIncastOnOneSwitchPausesTheSendersAndLosesNothing(t *testing.T) {
	topo, _, hs := star(5)
	s, err := New(topo, Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var c pfcCounter
	s.Observe(&c)
	var fs []*Flow
	for _, h := range hs[1:] {
		f, err := s.AddFlow(Flow{Src: h, Dst: hs[0], Size: 2_000_000})
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	st := s.Run(5 * time.Millisecond)
	for _, f := range fs {
		if f.Delivered() != 2_000_000 {
			t.Errorf("flow %d delivered %d bytes, want 2e6", f.ID, f.Delivered())
		}
	}
	if st.Drops != 0 {
		t.Errorf("%d drops, want 0", st.Drops)
	}
	if st.PFCFrames == 0 {
		t.Errorf("no PFC frame in a 4:1 incast")
	}
	if st.CNPs == 0 {
		t.Errorf("no CNP in a 4:1 incast")
	}
	t.Logf("%+v", st)
}

func TestFatTreeHasThePapersShape(t *testing.T) {
	topo := FatTree(4)
	if n := len(topo.Switches()); n != 20 {
		t.Errorf("%d switches, want 20", n)
	}
	if n := len(topo.Hosts()); n != 16 {
		t.Errorf("%d hosts, want 16", n)
	}
	for _, sw := range topo.Switches() {
		if p := topo.Ports(sw); p != 4 {
			t.Errorf("switch %s has %d ports, want 4", topo.Name(sw), p)
		}
	}
	s, err := New(topo, Config{})
	if err != nil {
		t.Fatal(err)
	}
	h := topo.Hosts()
	for _, c := range []struct {
		name     string
		src, dst NodeID
		switches int
	}{
		{"same edge", h[0], h[1], 1},
		{"same pod", h[0], h[2], 3},
		{"other pod", h[0], h[15], 5},
	} {
		f, err := s.AddFlow(Flow{Src: c.src, Dst: c.dst, Size: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(s.Path(f)); n != c.switches {
			t.Errorf("%s: path crosses %d switches, want %d", c.name, n, c.switches)
		}
		// 2 µs per link, both ways, one packet per link.
		links := time.Duration(c.switches + 1)
		if f.BaseRTT() < links*4*time.Microsecond || f.BaseRTT() > links*4100*time.Nanosecond {
			t.Errorf("%s: base RTT %v, want about %v", c.name, f.BaseRTT(), links*4*time.Microsecond)
		}
	}
}

// line returns hA — s0 — s1 — hB.
func line() (*Topology, NodeID, NodeID, NodeID, NodeID) {
	t := NewTopology()
	s0, s1 := t.AddSwitch("s0"), t.AddSwitch("s1")
	a, b := t.AddHost("hA"), t.AddHost("hB")
	t.Connect(s0, a)
	t.Connect(s0, s1)
	t.Connect(s1, b)
	return t, s0, s1, a, b
}

type pauses struct{ got map[PortRef][]time.Duration }

func (p *pauses) Enqueue(time.Duration, NodeID, int, int, *Packet, int, bool) {}
func (p *pauses) PFCSent(time.Duration, NodeID, int, time.Duration)           {}
func (p *pauses) PFC(now time.Duration, sw NodeID, port int, pause time.Duration) {
	p.got[PortRef{sw, port}] = append(p.got[PortRef{sw, port}], pause)
}

func TestAHostInjectingPFCStopsItsSenderUpstreamUntilThePauseEnds(t *testing.T) {
	topo, s0, s1, a, b := line()
	s, err := New(topo, Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	obs := &pauses{got: map[PortRef][]time.Duration{}}
	s.Observe(obs)
	f, err := s.AddFlow(Flow{Src: a, Dst: b})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.InjectPFC(b, 100*time.Microsecond, 300*time.Microsecond); err != nil {
		t.Fatal(err)
	}
	s.Run(150 * time.Microsecond)
	if !s.Paused(PortRef{s1, 1}) {
		t.Errorf("s1's port to the injecting host is not paused")
	}
	if !s.Paused(PortRef{s0, 1}) {
		t.Errorf("s0's port to s1 is not paused: the pause did not spread upstream")
	}
	during := f.Delivered()
	s.Run(400 * time.Microsecond)
	if f.Delivered() != during {
		t.Errorf("delivered %d bytes while paused, want none", f.Delivered()-during)
	}
	// The last PAUSE, sent before 300 µs, holds for PauseTime (335.5 µs).
	s.Run(700 * time.Microsecond)
	if f.Delivered() == during {
		t.Errorf("nothing delivered after the pause expired")
	}
	if len(obs.got[PortRef{s1, 1}]) == 0 || len(obs.got[PortRef{s0, 1}]) == 0 {
		t.Errorf("PAUSE frames seen by observers: %v", obs.got)
	}
	var resumed bool
	for _, p := range obs.got[PortRef{s0, 1}] {
		resumed = resumed || p == 0
	}
	if !resumed {
		t.Errorf("s1 never sent a RESUME to s0")
	}
}

func TestECMPSpreadsFlowsOverEveryEqualCostPath(t *testing.T) {
	topo := FatTree(4)
	s, err := New(topo, Config{})
	if err != nil {
		t.Fatal(err)
	}
	cores := map[NodeID]bool{}
	for i := range 64 {
		f, err := s.AddFlow(Flow{Src: topo.Hosts()[i%4], Dst: topo.Hosts()[12+i%4], Size: 1000})
		if err != nil {
			t.Fatal(err)
		}
		cores[s.Path(f)[2].Node] = true
	}
	if len(cores) != 4 {
		t.Errorf("64 flows between two pods crossed %d cores, want all 4", len(cores))
	}
}

func TestRouteViaMakesTheFlowBounce(t *testing.T) {
	topo := FatTree(4)
	s, err := New(topo, Config{})
	if err != nil {
		t.Fatal(err)
	}
	var ft fatTree4
	// Down to e0.1 and up again to a0.1 before reaching h1's edge.
	route, err := s.RouteVia(ft.host(0, 0, 0), ft.host(0, 0, 1), ft.agg(0, 0), ft.edge(0, 1), ft.agg(0, 1), ft.edge(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.AddFlow(Flow{Src: ft.host(0, 0, 0), Dst: ft.host(0, 0, 1), Route: route, Size: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range s.Path(f) {
		names = append(names, topo.Name(p.Node))
	}
	if got, want := fmt.Sprint(names), "[e0.0 a0.0 e0.1 a0.1 e0.0]"; got != want {
		t.Errorf("path %s, want %s", got, want)
	}
	s.Run(time.Millisecond)
	if f.Delivered() != 10_000 {
		t.Errorf("bounced flow delivered %d bytes, want 10000", f.Delivered())
	}
}

func TestARunIsDeterministicForItsSeed(t *testing.T) {
	run := func(seed uint64) (Stats, []int64) {
		sc, err := NewScenario(ScenarioConfig{Kind: Incast, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		st := sc.Sim.Run(sc.Duration)
		var d []int64
		for _, f := range sc.Sim.Flows() {
			d = append(d, f.Delivered())
		}
		st.Wall, st.EventsPerSec = 0, 0
		return st, d
	}
	a, da := run(3)
	b, db := run(3)
	if a != b || fmt.Sprint(da) != fmt.Sprint(db) {
		t.Errorf("two runs of seed 3 differ:\n%+v\n%+v", a, b)
	}
	c, _ := run(4)
	if a == c {
		t.Errorf("seeds 3 and 4 ran identically")
	}
}

func TestEveryScenarioInjectsItsAnomaly(t *testing.T) {
	for _, c := range []struct {
		kind  Kind
		seed  uint64
		check func(*Scenario, Stats) string
	}{
		{Incast, 11, func(sc *Scenario, st Stats) string {
			if st.PFCFrames == 0 {
				return "no PFC frame"
			}
			return ""
		}},
		{Storm, 11, func(sc *Scenario, st Stats) string {
			if st.Injected == 0 || sc.Truth.RootHost == None {
				return "no PAUSE frame injected"
			}
			return ""
		}},
		{DeadlockIn, 12, func(sc *Scenario, st Stats) string {
			if !sc.Formed() {
				return "the loop did not close"
			}
			return ""
		}},
		{DeadlockOut, 11, func(sc *Scenario, st Stats) string {
			if !sc.Formed() || st.Injected == 0 {
				return "the loop did not close"
			}
			return ""
		}},
		{Contention, 11, func(sc *Scenario, st Stats) string {
			if len(sc.Truth.RootFlows) != 2 {
				return "want two elephants"
			}
			return ""
		}},
	} {
		t.Run(string(c.kind), func(t *testing.T) {
			sc, err := NewScenario(ScenarioConfig{Kind: c.kind, Seed: c.seed})
			if err != nil {
				t.Fatal(err)
			}
			st := sc.Sim.Run(sc.Duration)
			if st.Drops != 0 {
				t.Errorf("%d drops in a lossless fabric", st.Drops)
			}
			if msg := c.check(sc, st); msg != "" {
				t.Error(msg)
			}
			if st.EventsPerSec <= 0 {
				t.Errorf("events per second not measured")
			}
		})
	}
}

func TestTheWorkloadIsLongTailed(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 100_000
	var below10MB, below100MB int
	for range n {
		s := SampleSize(r)
		if s < 10e6 {
			below10MB++
		}
		if s < 100e6 {
			below100MB++
		}
		if s > 300e6 {
			t.Fatalf("size %d above 300 MB", s)
		}
	}
	if p := float64(below10MB) / n; p < 0.79 || p > 0.81 {
		t.Errorf("%.3f of flows below 10 MB, want 0.80", p)
	}
	if p := float64(below100MB) / n; p < 0.89 || p > 0.91 {
		t.Errorf("%.3f of flows below 100 MB, want 0.90", p)
	}
}

func TestWorkloadArrivalsOfferTheLoad(t *testing.T) {
	topo := FatTree(4)
	s, err := New(topo, Config{})
	if err != nil {
		t.Fatal(err)
	}
	span := 2 * time.Second
	fs, err := Workload{Load: 0.5, Span: span}.Add(s, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	var bytes float64
	for _, f := range fs {
		bytes += float64(f.Size)
	}
	offered := bytes * 8 / span.Seconds() / (16 * 100e9)
	if offered < 0.3 || offered > 0.8 {
		t.Errorf("offered load %.2f over %v, want about 0.5", offered, span)
	}
}

// BenchmarkIncastScenario measures the simulator's speed on the incast
// scenario (2.2 ms of fat-tree traffic at 30 % load).
func BenchmarkIncastScenario(b *testing.B) {
	var events uint64
	var wall time.Duration
	for b.Loop() {
		sc, err := NewScenario(ScenarioConfig{Kind: Incast, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		st := sc.Sim.Run(sc.Duration)
		events += st.Events
		wall += st.Wall
	}
	b.ReportMetric(float64(events)/wall.Seconds(), "events/s")
}
