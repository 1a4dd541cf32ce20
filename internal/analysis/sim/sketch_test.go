package sim

import (
	"context"
	"testing"

	"github.com/dta-go/dta/sketch"
)

func TestSketchMergeMeetsItsBoundsInSimulation(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    sketch.Geometry
	}{
		{"count-min 4×512", sketch.Geometry{Rows: 4, Columns: 512, Kind: sketch.CountMin}},
		{"count-sketch 5×512", sketch.Geometry{Rows: 5, Columns: 512, Kind: sketch.CountSketch}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := RunSketch(context.Background(), SketchConfig{Geometry: tc.g, Reporters: 3, Keys: 20000, Packets: 200000, Zipf: 1.1, TopK: 20, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Merged {
				t.Error("the merged counters differ from the union stream's sketch")
			}
			if res.Exceeded > res.Bounds.Delta {
				t.Errorf("%.4f of the keys err by more than ε·norm, above the bound δ = %.4f", res.Exceeded, res.Bounds.Delta)
			}
			if res.TopKRecall < 0.9 {
				t.Errorf("top-20 recall %.2f", res.TopKRecall)
			}
			t.Logf("ε %.4f δ %.2g: exceeded %.4f, max error %.4f·norm, top-20 recall %.2f", res.Bounds.Epsilon, res.Bounds.Delta, res.Exceeded, res.MaxError, res.TopKRecall)
		})
	}
}
