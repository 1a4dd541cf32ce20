package hawkeye_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/dta-go/dta/internal/hawkeye"
	"github.com/dta-go/dta/internal/hawkeye/netsim"
)

// TestSweep diagnoses every scenario over a range of seeds at the default
// run setting and prints the wrong ones and why traces were left out. It
// runs only when HAWKEYE_SWEEP names the seeds ("1-120,9001-9020");
// HAWKEYE_SWEEP_KINDS may name the scenarios (default all).
//
//	HAWKEYE_SWEEP=1-120 go test ./internal/hawkeye/ -run TestSweep -v
func TestSweep(t *testing.T) {
	spec := os.Getenv("HAWKEYE_SWEEP")
	if spec == "" {
		t.Skip("HAWKEYE_SWEEP not set")
	}
	var seeds []uint64
	for _, r := range strings.Split(spec, ",") {
		lo, hi, _ := strings.Cut(r, "-")
		a, err := strconv.ParseUint(lo, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		b := a
		if hi != "" {
			if b, err = strconv.ParseUint(hi, 10, 64); err != nil {
				t.Fatal(err)
			}
		}
		for s := a; s <= b; s++ {
			seeds = append(seeds, s)
		}
	}
	kinds := netsim.Kinds
	if ks := os.Getenv("HAWKEYE_SWEEP_KINDS"); ks != "" {
		kinds = nil
		for _, k := range strings.Split(ks, ",") {
			kind, err := netsim.ParseKind(k)
			if err != nil {
				t.Fatal(err)
			}
			kinds = append(kinds, kind)
		}
	}
	s, _ := startDTA(t)
	ctx := context.Background()
	for _, k := range kinds {
		judged, right := 0, 0
		left := map[string]int{}
		wouldBe := map[string]int{} // left out, but diagnosed right
		var wrong []string
		for _, seed := range seeds {
			st := hawkeye.Setting{EpochBits: hawkeye.DefaultRunEpochBits, Threshold: hawkeye.DefaultThreshold(k)}
			res, err := hawkeye.Run(ctx, s, hawkeye.RunConfig{Kind: k, Seed: seed, Setting: st})
			if res == nil {
				t.Fatalf("%s seed %d: %v", k, seed, err)
			}
			tr := res.Trace
			if !tr.Judgeable(st) {
				why := tr.WhyNotJudged(st)
				left[why]++
				if len(res.Verdicts) > 0 && res.Verdicts[0].Correct {
					wouldBe[why]++
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s seed %d: %v", k, seed, err)
			}
			judged++
			if v := res.Verdicts[0]; v.Correct {
				right++
			} else {
				wrong = append(wrong, fmt.Sprintf("  %s seed %d: %s: %s", k, seed, v.Diagnosis, v.Why))
			}
		}
		var ls []string
		for r, n := range left {
			ls = append(ls, fmt.Sprintf("%s: %d (%d of them diagnosed right)", r, n, wouldBe[r]))
		}
		sort.Strings(ls)
		fmt.Printf("SWEEP %s: %d/%d right; not judged: %s\n", k, right, judged, strings.Join(ls, "; "))
		for _, w := range wrong {
			fmt.Println(w)
		}
	}
}
