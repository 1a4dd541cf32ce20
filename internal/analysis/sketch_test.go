package analysis

import (
	"math"
	"testing"

	"github.com/dta-go/dta/sketch"
)

func TestSketchPlansFollowTheTextbookSizes(t *testing.T) {
	cm, err := SketchPlan(sketch.CountMin, 0.001, 0.01, 3)
	if err != nil {
		t.Fatal(err)
	}
	// w = ⌈e/ε⌉ = 2719, d = ⌈ln 100⌉ = 5.
	if cm.Columns != 2719 || cm.Rows != 5 || cm.Delta > 0.01 || cm.Norm != "L1" {
		t.Errorf("count-min plan %+v", cm)
	}
	cs, err := SketchPlan(sketch.CountSketch, 0.01, 0.01, 3)
	if err != nil {
		t.Fatal(err)
	}
	// w = ⌈k/ε²⌉ for some k; the rows are the fewest whose median fails
	// with probability ≤ 1 %, each row failing with probability 1/k.
	k := math.Round(float64(cs.Columns) * 0.01 * 0.01)
	if cs.Delta > 0.01 || cs.Norm != "L2" || k < 3 || binomialTail(cs.Rows, (cs.Rows+1)/2, 1/k) > 0.01 {
		t.Errorf("count-sketch plan %+v (k %v)", cs, k)
	}
	if cs.Rows > 1 && binomialTail(cs.Rows-1, cs.Rows/2, 1/k) <= 0.01 {
		t.Errorf("%d rows planned where %d would do", cs.Rows, cs.Rows-1)
	}
	// Cheaper than the textbook k = 3, which needs dozens of rows.
	d3 := 1
	for binomialTail(d3, (d3+1)/2, 1.0/3) > 0.01 {
		d3++
	}
	if n := uint64(cs.Rows) * cs.Columns; n >= 30000*uint64(d3) {
		t.Errorf("plan of %d counters, the textbook's %d", n, 30000*d3)
	}
	if cm.RegionBytes != 64+3*5*2719*8 {
		t.Errorf("region bytes %d", cm.RegionBytes)
	}
}

func TestSketchGuaranteeOfAGeometry(t *testing.T) {
	b, err := SketchGuarantee(sketch.Geometry{Rows: 4, Columns: 1000, Kind: sketch.CountMin}, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(b.Epsilon-math.E/1000) > 1e-12 || math.Abs(b.Delta-math.Exp(-4)) > 1e-12 {
		t.Errorf("ε %v δ %v, want e/w and e^-d", b.Epsilon, b.Delta)
	}
	if binomialTail(3, 2, 0.5) != 0.5 {
		t.Errorf("P(Bin(3, 1/2) ≥ 2) = %v, want 0.5", binomialTail(3, 2, 0.5))
	}
}
