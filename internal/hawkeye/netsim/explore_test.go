package netsim

import (
	"os"
	"testing"
	"time"
)

type rttMax struct {
	after time.Duration
	max   map[int]float64
	first map[float64]time.Duration
}

func (r *rttMax) Acked(at time.Duration, f *Flow, rtt time.Duration) {
	if at < r.after {
		return
	}
	x := float64(rtt) / float64(f.BaseRTT())
	if x > r.max[f.ID] {
		r.max[f.ID] = x
	}
}

type pfcLog struct {
	first map[PortRef]time.Duration
}

func (p *pfcLog) Enqueue(time.Duration, NodeID, int, int, *Packet, int, bool) {}
func (p *pfcLog) PFCSent(time.Duration, NodeID, int, time.Duration) {}
func (p *pfcLog) PFC(now time.Duration, sw NodeID, port int, pause time.Duration) {
	if pause > 0 {
		if _, ok := p.first[PortRef{sw, port}]; !ok {
			p.first[PortRef{sw, port}] = now
		}
	}
}

func TestExplore(t *testing.T) {
	if os.Getenv("HK_EXPLORE") == "" {
		t.Skip()
	}
	for _, k := range Kinds {
		for seed := uint64(1); seed <= 3; seed++ {
			sc, err := NewScenario(ScenarioConfig{Kind: k, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			s := sc.Sim
			rm := &rttMax{after: sc.Truth.Start, max: map[int]float64{}}
			s.ObserveHosts(rm)
			pl := &pfcLog{first: map[PortRef]time.Duration{}}
			s.Observe(pl)
			st := s.Run(sc.Duration)
			t.Logf("%s seed %d: ta %v ev %d (%.1fM/s) pfc %d drops %d marks %d cnp %d initial %s",
				k, seed, sc.Truth.Start, st.Events, st.EventsPerSec/1e6, st.PFCFrames, st.Drops, st.ECNMarks, st.CNPs, s.topo.PortName(sc.Truth.Initial))
			for _, f := range s.Flows() {
				if f.Tag != "background" || rm.max[f.ID] > 2 {
					o, ok := f.OldestUnacked()
					stall := time.Duration(0)
					if ok {
						stall = sc.Duration - o
					}
					t.Logf("  flow %d %s %s->%s maxRTT %.1fx stall %v delivered %d rate %.1f", f.ID, f.Tag, s.topo.Name(f.Src), s.topo.Name(f.Dst), rm.max[f.ID], stall, f.Delivered(), f.RateGbps())
				}
			}
			if sc.Truth.Loop != nil {
				for _, l := range sc.Truth.Loop {
					at, ok := pl.first[l]
					t.Logf("  loop %s paused-now %v queued %d first pause %v %v", s.topo.PortName(l), s.Paused(l), s.Queued(l), ok, at)
				}
			}
			n := 0
			for p, at := range pl.first {
				if at >= sc.Truth.Start-100*time.Microsecond && n < 12 {
					n++
					t.Logf("  pause rx at %s (%s peer) first %v", s.topo.PortName(p), s.topo.Name(s.topo.Peer(p).Node), at)
				}
			}
		}
	}
}
