package hawkeye_test

import (
	"context"
	"testing"

	"github.com/dta-go/dta/internal/hawkeye"
	"github.com/dta-go/dta/internal/hawkeye/netsim"
)

// Seeds 9001..9020 are used by no other test, the documented runs or eval's
// defaults. Every trace the runner judges must be diagnosed right; it leaves
// out, blind to the diagnosis, those where the anomaly had not taken hold
// when the agent fired (Trace.Judgeable: the agent never fired, or a
// deadlock's loop had not closed yet).
//
// Deadlock-in may have one wrong of 20: since its loops close reliably
// (19 of these seeds judged, 11 before), seed 9018 is judged, and
// there a background flow (h13→h10) queued at the loop port a2.0.p1 ahead
// of the loop flows outranks the bursts at a2.1.p0 (about 3 % of
// deadlock-in traces over seeds 1–120 and 2001–2100 are wrong this way:
// the initial port found at another port of the loop).
func TestEveryJudgeableTraceOfUnusedSeedsIsDiagnosedRight(t *testing.T) {
	s, _ := startDTA(t)
	ctx := context.Background()
	for _, k := range netsim.Kinds {
		t.Run(string(k), func(t *testing.T) {
			allowed := 0
			if k == netsim.DeadlockIn {
				allowed = 1
			}
			judged, wrong := 0, 0
			for seed := uint64(9001); seed <= 9020; seed++ {
				st := hawkeye.Setting{EpochBits: hawkeye.DefaultRunEpochBits, Threshold: hawkeye.DefaultThreshold(k)}
				res, err := hawkeye.Run(ctx, s, hawkeye.RunConfig{Kind: k, Seed: seed, Setting: st})
				if res != nil && !res.Trace.Judgeable(st) {
					continue
				}
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				judged++
				if v := res.Verdicts[0]; !v.Correct {
					wrong++
					t.Logf("seed %d: %s: %s", seed, v.Diagnosis, v.Why)
				}
			}
			if wrong > allowed {
				t.Errorf("%d of %d judged traces diagnosed wrong, want at most %d", wrong, judged, allowed)
			}
			if judged < 8 {
				t.Errorf("only %d of 20 traces judgeable", judged)
			}
			t.Logf("%d of 20 traces judged", judged)
		})
	}
}

// A contention's victim that PFC had paused by the trigger, when the
// contention itself had sent no PFC, was slowed by something the scenario
// did not inject (seed 106: background traffic congesting a core port paused
// the victim two hops before the contended port, where its queue stayed
// near empty): the runner leaves it out. Seed 103's victim was not paused.
func TestAContentionVictimPausedByOtherPFCIsNotJudged(t *testing.T) {
	st := hawkeye.Setting{EpochBits: hawkeye.DefaultRunEpochBits, Threshold: hawkeye.DefaultThreshold(netsim.Contention)}
	for _, c := range []struct {
		seed uint64
		why  string
	}{
		{106, "PFC the contention did not send had paused the victim"},
		{103, ""},
	} {
		tr, err := hawkeye.Simulate(hawkeye.SimConfig{Kind: netsim.Contention, Seed: c.seed, Settings: []hawkeye.Setting{st}})
		if err != nil {
			t.Fatal(err)
		}
		if why := tr.WhyNotJudged(st); why != c.why {
			t.Errorf("seed %d: left out for %q, want %q", c.seed, why, c.why)
		}
	}
}
