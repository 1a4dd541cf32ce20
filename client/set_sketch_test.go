package client_test

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/dta-go/dta/client"
	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/sketchmerge"
	"github.com/dta-go/dta/sketch"
)

// flushSketch adds sk as epoch e into e's Sketch-Merge store, as a
// translator does (open the epoch, one FETCH_ADD per non-zero counter).
func flushSketch(t *testing.T, e *env, epoch uint32, sk *sketch.Sketch) {
	t.Helper()
	st := e.cat.ByName("sketchmerge")
	spec := st.SketchMerge.Spec()
	b := memop.NewBatch(64, 0)
	sketchmerge.NewOpener(&spec).Open(b, st.Index, epoch)
	if err := e.cat.Apply(b.Ops); err != nil {
		t.Fatal(err)
	}
	sk.Runs(64, func(r sketch.Run) error {
		var v []byte
		for _, c := range r.Counters {
			v = binary.BigEndian.AppendUint64(v, uint64(c))
		}
		b.Reset()
		spec.Add(b, st.Index, &sketchmerge.Run{Epoch: epoch, Row: r.Row, Column: r.Column, Counters: v})
		return e.cat.Apply(b.Ops)
	})
}

func TestASetAddsTheCollectorsSketchesUp(t *testing.T) {
	envs := []*env{newEnv(t), newEnv(t)}
	g := envs[0].cat.ByName("sketchmerge").SketchMerge.Spec().Geometry
	union, _ := sketch.New(g)
	for i, e := range envs {
		sk, _ := sketch.New(g)
		for k := range 500 {
			sk.Update(binary.BigEndian.AppendUint32(nil, uint32(k%50)), int64(i+1))
		}
		union.Add(sk)
		flushSketch(t, e, 3, sk)
	}
	ctx := context.Background()
	set, err := client.NewSet(ctx, []string{"a=" + envs[0].ts.URL, "b=" + envs[1].ts.URL}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := set.SketchCounters(ctx, "sketchmerge", 3)
	if err != nil {
		t.Fatal(err)
	}
	for r := range g.Rows {
		for c, v := range union.Row(r) {
			if m.Counters[r][c] != v {
				t.Fatalf("row %d column %d: %d, want %d (the sum of both collectors)", r, c, m.Counters[r][c], v)
			}
		}
	}
	est, err := set.SketchEstimate(ctx, "sketchmerge", "7", 3)
	if err != nil || est.Estimate != union.Estimate([]byte{0, 0, 0, 7}) || est.Estimate < 30 {
		t.Errorf("estimate of key 7: %+v %v, want %d (10 reports × 1 + 10 × 2)", est, err, union.Estimate([]byte{0, 0, 0, 7}))
	}
}
