package netsim

import (
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
