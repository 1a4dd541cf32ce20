package netsim

import (
	"slices"
	"testing"
)

// The deadlock scenarios must produce what they name: over seeds no other
// test uses, the loop closes after the injection and is still closed when
// the run ends (Formed) in nearly every trace, initiated in the loop by
// bursts at a loop port or out of it by a host's PAUSE frames. Before the
// loop flows started just before the anomaly and the bounces were split
// over two ingresses, 30 and 32 of these 40 seeds deadlocked.
func TestDeadlocksFormForNearlyEverySeed(t *testing.T) {
	const first, seeds, want = 5001, 40, 38
	for _, c := range []struct {
		kind Kind
		// check says what is wrong with the injection, "" if nothing.
		check func(*Scenario, Stats) string
	}{
		{DeadlockIn, func(sc *Scenario, st Stats) string {
			tr := sc.Truth
			if tr.RootHost != None || len(tr.RootFlows) != 3 || st.Injected != 0 {
				return "want three bursts and no host injecting PAUSE frames"
			}
			if !slices.Contains(tr.Loop, tr.Initial) {
				return "initial port out of the loop"
			}
			return ""
		}},
		{DeadlockOut, func(sc *Scenario, st Stats) string {
			tr := sc.Truth
			if tr.RootHost == None || len(tr.RootFlows) != 0 || st.Injected == 0 {
				return "want a host injecting PAUSE frames and no root flow"
			}
			if slices.Contains(tr.Loop, tr.Initial) {
				return "initial port in the loop"
			}
			return ""
		}},
	} {
		t.Run(string(c.kind), func(t *testing.T) {
			formed := 0
			for seed := uint64(first); seed < first+seeds; seed++ {
				sc, err := NewScenario(ScenarioConfig{Kind: c.kind, Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				st := sc.Sim.Run(sc.Duration)
				if msg := c.check(sc, st); msg != "" {
					t.Errorf("seed %d: %s", seed, msg)
				}
				if st.Drops != 0 {
					t.Errorf("seed %d: %d drops in a lossless fabric", seed, st.Drops)
				}
				if sc.Formed() {
					formed++
					continue
				}
				at, closed := sc.LoopClosed()
				t.Logf("seed %d: no deadlock (loop closed: %v, at %v; anomaly from %v)", seed, closed, at, sc.Truth.Start)
			}
			if formed < want {
				t.Errorf("%d of %d traces deadlocked, want at least %d", formed, seeds, want)
			}
		})
	}
}
