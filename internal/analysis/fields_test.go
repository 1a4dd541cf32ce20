package analysis_test

import (
	"errors"
	"math"
	"testing"

	"github.com/dta-go/dta/internal/analysis"
	"github.com/dta-go/dta/sketch"
	"github.com/dta-go/dta/wire/dta"
)

// field returns the field an error names, "" if none.
func field(err error) string {
	var fe *analysis.FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}

func TestErrorsNameTheFieldForTheCaller(t *testing.T) {
	g := sketch.Geometry{Rows: 4, Columns: 1024, Kind: sketch.CountMin}
	sg := func(g sketch.Geometry, epochs int, eps float64) error {
		_, err := analysis.SketchGuarantee(g, epochs, eps)
		return err
	}
	sp := func(eps, delta float64, epochs int) error {
		_, err := analysis.SketchPlan(sketch.CountMin, eps, delta, epochs)
		return err
	}
	capacity := func(req analysis.CapacityRequest) error { _, err := analysis.Capacity(req); return err }
	plan := func(req analysis.PlanRequest) error { _, err := analysis.Plan(req); return err }
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"epochs -1", sg(g, -1, 0), "epochs"},
		{"epochs 0", sg(g, 0, 0), "epochs"},
		{"epochs 9", sg(g, 9, 0), "epochs"},
		{"a plan of epochs -1", sp(0.001, 0.01, -1), "epochs"},
		{"a NaN epsilon", sg(g, 3, math.NaN()), "epsilon"},
		{"a NaN epsilon to plan", sp(math.NaN(), 0.01, 3), "epsilon"},
		{"a NaN delta", sp(0.001, math.NaN(), 3), "delta"},
		{"no columns", sg(sketch.Geometry{Rows: 4, Kind: sketch.CountMin}, 3, 0), "columns"},
		{"no memory and no ages", capacity(analysis.CapacityRequest{Design: analysis.Design{Primitive: dta.KeyWrite}}), "memory"},
		{"value size", plan(analysis.PlanRequest{Design: analysis.Design{Primitive: dta.KeyWrite, ValueSize: 9999}, Keys: 1}), "value size"},
		{"N of 0", plan(analysis.PlanRequest{Design: analysis.Design{Primitive: dta.KeyWrite, N: []int{0}}, Keys: 1}), "n"},
	} {
		if got := field(tt.err); got != tt.want || !errors.Is(tt.err, analysis.ErrInvalid) {
			t.Errorf("%s: %v names field %q; want an ErrInvalid naming %q", tt.name, tt.err, got, tt.want)
		}
	}
	if err := sg(g, 3, 0); err != nil {
		t.Errorf("a good geometry: %v", err)
	}
}
