package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"testing"
)

func TestPlanSimulateConfirmsTheBoundsWithTheRealCode(t *testing.T) {
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"plan", "--primitive", "keywrite", "--memory", "1MiB", "--value-size", "4",
		"--age", "20K", "--n", "1,2", "--simulate", "--simulate-slots", "2^16", "-o", "json"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep struct {
		Simulated []planSim `json:"simulated"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Simulated) != 2 {
		t.Fatalf("%d simulations, want one per N", len(rep.Simulated))
	}
	for _, s := range rep.Simulated {
		if s.Slots != 1<<16 || s.Queries < 500 {
			t.Errorf("N=%d: %d slots, %d queries: the store was not scaled to --simulate-slots", s.N, s.Slots, s.Queries)
		}
		// N=1 has no slack in its bound (success = e^−α), so simulation and
		// bound agree within a few standard errors.
		if s.N == 1 && math.Abs(s.Success-s.Bound) > 5*s.StdErr+0.005 {
			t.Errorf("N=1: simulated %.4f, bound %.4f ± %.4f", s.Success, s.Bound, s.StdErr)
		}
		if s.Wrong != 0 {
			t.Errorf("N=%d: %v wrong answers with 32-bit checksums", s.N, s.Wrong)
		}
	}
}
