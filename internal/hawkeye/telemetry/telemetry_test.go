package telemetry

import (
	"sort"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/hawkeye/netsim"
	"github.com/dta-go/dta/internal/hawkeye/record"
)

// pair returns a switch with three hosts and flows between them (not
// simulated: the tests feed the data plane directly).
func pair(t *testing.T) (*netsim.Topology, netsim.NodeID, []*netsim.Flow) {
	t.Helper()
	topo := netsim.NewTopology()
	sw := topo.AddSwitch("s0")
	var hs []netsim.NodeID
	for _, n := range []string{"a", "b", "c"} {
		h := topo.AddHost(n)
		topo.Connect(sw, h)
		hs = append(hs, h)
	}
	s, err := netsim.New(topo, netsim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var fs []*netsim.Flow
	for _, src := range hs[:2] {
		f, err := s.AddFlow(netsim.Flow{Src: src, Dst: hs[2]})
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	return topo, sw, fs
}

func TestEpochsAreSelectedByTimestampBitsAndResetWhenTheRingWraps(t *testing.T) {
	topo, sw, fs := pair(t)
	tel, err := New(topo, Config{EpochBits: 10, Epochs: 4})
	if err != nil {
		t.Fatal(err)
	}
	pkt := &netsim.Packet{Flow: fs[0], Bytes: 1000}
	epoch := time.Duration(1024)
	// One packet in each of epochs 0..5: at epoch 5 the ring holds 2..5.
	for e := range 6 {
		for range e + 1 {
			tel.Enqueue(time.Duration(e)*epoch+1, sw, 0, 2, pkt, 3, false)
		}
	}
	snap := tel.Collect(5*epoch+10, sw)
	got := map[uint16]uint32{}
	for _, f := range snap.Flows {
		got[f.Epoch] = f.Pkts
	}
	want := map[uint16]uint32{2: 3, 3: 4, 4: 5, 5: 6}
	if len(got) != len(want) {
		t.Fatalf("epochs collected %v, want %v", got, want)
	}
	for e, n := range want {
		if got[e] != n {
			t.Errorf("epoch %d: %d packets, want %d (epochs 0 and 1 were overwritten)", e, got[e], n)
		}
	}
	if tel.Stats().Resets != 2 {
		t.Errorf("%d resets, want 2", tel.Stats().Resets)
	}
	// Much later, nothing is live any more.
	if snap := tel.Collect(100*epoch, sw); len(snap.Flows)+len(snap.Ports)+len(snap.Meters) != 0 {
		t.Errorf("stale epochs collected: %+v", snap)
	}
}

func TestAnotherFlowInTheSlotEvictsTheEntryToTheController(t *testing.T) {
	topo, sw, fs := pair(t)
	tel, err := New(topo, Config{FlowSlots: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range []*netsim.Flow{fs[0], fs[0], fs[1], fs[0]} {
		tel.Enqueue(time.Duration(i), sw, int(f.Src-1), 2, &netsim.Packet{Flow: f, Bytes: 1000}, i, false)
	}
	snap := tel.Collect(10, sw)
	var got []string
	for _, f := range snap.Flows {
		got = append(got, f.Tuple.String()+":"+string(rune('0'+f.Pkts)))
	}
	sort.Strings(got)
	want := []string{
		record.Tuple(fs[0].Tuple).String() + ":1", // in the slot
		record.Tuple(fs[0].Tuple).String() + ":2", // evicted by fs[1]
		record.Tuple(fs[1].Tuple).String() + ":1", // evicted by fs[0]
	}
	sort.Strings(want)
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("flow records %v, want %v", got, want)
	}
	if tel.Stats().Evictions != 2 {
		t.Errorf("%d evictions, want 2", tel.Stats().Evictions)
	}
}

func TestPacketsEnqueuedWhileThePortIsPausedArePausedPackets(t *testing.T) {
	topo, sw, fs := pair(t)
	tel, err := New(topo, Config{})
	if err != nil {
		t.Fatal(err)
	}
	p := &netsim.Packet{Flow: fs[0], Bytes: 1000}
	tel.Enqueue(1, sw, 0, 2, p, 0, false)
	tel.Enqueue(2, sw, 0, 2, p, 4, false)
	tel.PFC(3, sw, 2, 100*time.Microsecond)
	tel.PFCSent(3, sw, 0, 100*time.Microsecond)
	tel.Enqueue(4, sw, 0, 2, p, 9, true)
	snap := tel.Collect(5, sw)
	f := snap.Flows[0]
	if f.Pkts != 3 || f.Paused != 1 || f.QDepth != 4 || f.Queued != 1 {
		t.Errorf("flow record %+v: want 3 packets, 1 paused, queue depth 4 over 1 queued unpaused packet", f)
	}
	ports := map[uint8]record.Port{}
	for _, p := range snap.Ports {
		ports[p.Port] = p
	}
	if p := ports[2]; p.Pkts != 3 || p.Paused != 1 || p.QDepth != 13 || p.PauseRx != 1 || p.Flags&record.FlagPausedNow == 0 || p.PeerKind != record.PeerHost {
		t.Errorf("port 2 record %+v", p)
	}
	if ports[0].PauseTx != 1 {
		t.Errorf("port 0 record %+v: want one PAUSE sent", ports[0])
	}
	if len(snap.Meters) != 1 || snap.Meters[0].In != 0 || snap.Meters[0].Out != 2 || snap.Meters[0].Bytes != 3000 {
		t.Errorf("meters %+v, want 3000 bytes from port 0 to port 2", snap.Meters)
	}
}

func TestEpochBitsForRoundsToTheNearestPowerOfTwo(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		bits uint
	}{
		{100 * time.Microsecond, 17}, {250 * time.Microsecond, 18}, {500 * time.Microsecond, 19},
		{time.Millisecond, 20}, {2 * time.Millisecond, 21},
	} {
		if got := EpochBitsFor(c.d); got != c.bits {
			t.Errorf("EpochBitsFor(%v) = %d, want %d", c.d, got, c.bits)
		}
	}
}

// branch is a topology where PFC reaches the victim from off its path:
//
//	hA ─ s0 ─ s1 ─ s3 ─ hC     victim hA→hC
//	hD ─┘     └─ s2 ─ hB       hD→hB, hB injects PFC
//	               s4 ─ hE, hF (unrelated, on s2)
func branch(t *testing.T) (*netsim.Sim, map[string]netsim.NodeID, *netsim.Flow) {
	t.Helper()
	topo := netsim.NewTopology()
	n := map[string]netsim.NodeID{}
	for _, s := range []string{"s0", "s1", "s2", "s3", "s4"} {
		n[s] = topo.AddSwitch(s)
	}
	for _, h := range []string{"hA", "hB", "hC", "hD", "hE", "hF"} {
		n[h] = topo.AddHost(h)
	}
	for _, l := range [][2]string{{"s0", "hA"}, {"s0", "hD"}, {"s0", "s1"}, {"s1", "s3"}, {"s1", "s2"}, {"s3", "hC"}, {"s2", "hB"}, {"s2", "s4"}, {"s4", "hE"}, {"s4", "hF"}} {
		topo.Connect(n[l[0]], n[l[1]])
	}
	s, err := netsim.New(topo, netsim.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	victim, err := s.AddFlow(netsim.Flow{Src: n["hA"], Dst: n["hC"], MaxGbps: 30})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []netsim.Flow{{Src: n["hD"], Dst: n["hB"]}, {Src: n["hE"], Dst: n["hF"], MaxGbps: 20}} {
		if _, err := s.AddFlow(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.InjectPFC(n["hB"], 50*time.Microsecond, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	return s, n, victim
}

func TestPollingReachesTheCausalSwitchesOnly(t *testing.T) {
	for _, c := range []struct {
		strategy Strategy
		want     []string
	}{
		{Hawkeye, []string{"s0", "s1", "s2", "s3"}},
		{VictimOnly, []string{"s0", "s1", "s3"}},
		{Full, []string{"s0", "s1", "s2", "s3", "s4"}},
	} {
		t.Run(c.strategy.String(), func(t *testing.T) {
			s, n, victim := branch(t)
			tel, err := New(s.Topology(), Config{EpochBits: 17})
			if err != nil {
				t.Fatal(err)
			}
			s.Observe(tel)
			var col *Collection
			s.At(300*time.Microsecond, func() {
				tel.Poll(s, c.strategy, victim, s.Now(), func(cl *Collection) { col = cl })
			})
			s.Run(time.Millisecond)
			if col == nil {
				t.Fatal("the poll never completed")
			}
			var got []string
			for _, sn := range col.Snapshots {
				got = append(got, s.Topology().Name(sn.Switch))
			}
			sort.Strings(got)
			if len(got) != len(c.want) {
				t.Fatalf("polled %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("polled %v, want %v", got, c.want)
				}
			}
			if c.strategy == Hawkeye && col.Roles[n["s2"]]&record.RolePFC == 0 {
				t.Errorf("s2 was not reached along PFC causality: roles %v", col.Roles)
			}
		})
	}
}

func TestTheAgentFiresForTheStalledFlowOnce(t *testing.T) {
	s, n, _ := branch(t)
	var got []Trigger
	NewAgent(s, AgentConfig{Threshold: 400, After: 50 * time.Microsecond, Max: 1}, func(tr Trigger) { got = append(got, tr) })
	s.Run(time.Millisecond)
	if len(got) != 1 {
		t.Fatalf("the agent fired %d times, want once (Max 1)", len(got))
	}
	tr := got[0]
	if tr.Flow.Src != n["hD"] || tr.Flow.Dst != n["hB"] {
		t.Errorf("fired for %s, want hD→hB, the flow into the injecting host", tr.Flow.Tuple)
	}
	if float64(tr.RTT) <= 4*float64(tr.Flow.BaseRTT()) || tr.At < 50*time.Microsecond {
		t.Errorf("fired at %v with RTT %v (base %v): want above 400 %% after 50 µs", tr.At, tr.RTT, tr.Flow.BaseRTT())
	}
}

func TestTheAgentStaysQuietBelowItsThreshold(t *testing.T) {
	s, _, _ := branch(t)
	fired := 0
	NewAgent(s, AgentConfig{Threshold: 1e6}, func(Trigger) { fired++ })
	s.Run(time.Millisecond)
	if fired != 0 {
		t.Errorf("the agent fired %d times at a 1,000,000 %% threshold", fired)
	}
}
