package bench

import (
	"strings"
	"testing"
)

func TestTheResponderLineComparesTheSameRunsCPUAndNamesTheGoals(t *testing.T) {
	dta := Result{Primitive: "keywrite", Mode: "multi/recvmmsg", Collector: DTA,
		Remote: &RemoteResult{ResponderCPUPerMillion: 0.1, ResponderPacketsPerCPUSecond: 2e6, ResponderPacketsPerRead: 12.5,
			ResponderPacketsPerWait: 40, ResponderWaitCost: 18.5, ResponderWaitCPUPerMillion: 0.025, ResponderSendCPUPerMillion: 0.04}}
	base := Result{Primitive: "keywrite", Mode: "multi/recvmmsg", Collector: Baseline, CPUPerMillion: 0.5}
	slow := Result{Primitive: "keywrite", Mode: "multi/recvmmsg", Collector: Baseline, CPUPerMillion: 0.2}
	other := Result{Primitive: "append", Mode: "multi/recvmmsg", Collector: Baseline, CPUPerMillion: 0.01}
	local := Result{Primitive: "keywrite", Mode: "multi/recvmmsg", Collector: DTA}
	for _, c := range []struct {
		name    string
		results []Result
		want    []string // substrings, in order; none: no line
	}{
		{"a responder at a fifth of the baseline meets the goal", []Result{dta, base, other},
			[]string{"keywrite multi/recvmmsg responder: 0.100 CPU s/M rep", "2.00 M pkts/CPU s (goal >= 1)", "12.5 pkts per receive call",
				"40.0 pkts per wake-up (18.5 µs of CPU each here: 0.025 CPU s/M rep, 25%)", "sending on its TX rings 0.040 CPU s/M rep (40%)", "baseline collector 0.500 CPU s/M rep", "responder/baseline 0.20x (goal <= 0.33x: met)"}},
		{"a responder at half the baseline does not", []Result{dta, slow},
			[]string{"responder/baseline 0.50x (goal <= 0.33x: not met)"}},
		{"without a baseline run the line has no ratio", []Result{dta, other},
			[]string{"2.00 M pkts/CPU s (goal >= 1)"}},
		{"a run over the local sink has no responder line", []Result{local, base}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := responderSummary(c.results, "keywrite", "multi/recvmmsg")
			if c.want == nil {
				if got != "" {
					t.Fatalf("line %q, want none", got)
				}
				return
			}
			rest := got
			for _, w := range c.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("line %q lacks %q (in order)", got, w)
				}
				rest = rest[i+len(w):]
			}
			if ran := len(c.results) > 1 && c.results[1].Collector == Baseline && c.results[1].Primitive == "keywrite"; ran != strings.Contains(got, "baseline collector") {
				t.Errorf("line %q: a baseline figure if and only if the baseline ran (%v)", got, ran)
			}
		})
	}
}
