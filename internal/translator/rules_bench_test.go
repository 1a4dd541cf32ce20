package translator

import (
	"fmt"
	"testing"

	"github.com/dta-go/dta/internal/translator/rule"
	"github.com/dta-go/dta/wire/dta"
)

// benchRules are the rules BenchmarkRules runs over each source: the first
// alone, or all four.
var benchRules = map[string][]rule.Config{
	"postcard": {
		slowRule, // SUM > 1000: about half the paths (5 hops of 0..399)
		{Name: "max", Source: "postcard", Aggregate: "max", Op: ">", Threshold: 350, Action: rule.ActionConfig{Type: "increment", Store: "counts", By: "aggregate"}},
		{Name: "full", Source: "postcard", Aggregate: "count", Op: "==", Threshold: 5, Action: rule.ActionConfig{Type: "increment", Store: "counts"}},
		{Name: "min", Source: "postcard", Aggregate: "min", Op: "<", Threshold: 10, Action: rule.ActionConfig{Type: "append", Store: "hits", List: 3}},
	},
	"keyincrement": {
		{Name: "big", Source: "keyincrement", Op: ">", Threshold: 900, Action: rule.ActionConfig{Type: "append", Store: "hits", ListByKey: true}},
		{Name: "small", Source: "keyincrement", Op: "<", Threshold: 10, Action: rule.ActionConfig{Type: "increment", Store: "counts"}},
		{Name: "sum", Source: "keyincrement", Op: ">=", Threshold: 500, Action: rule.ActionConfig{Type: "increment", Store: "counts", By: "aggregate"}},
		{Name: "never", Source: "keyincrement", Op: "==", Threshold: 1 << 40, Action: rule.ActionConfig{Type: "append", Store: "hits", List: 0}},
	},
}

// BenchmarkRules measures what rules add to the translation of a path
// (a datagram of the 5 compat postcards of one path, which completes it) or
// of a Key-Increment report (datagrams of 32), with 0, 1 and 4 rules over
// the source store, in-process into small stores (the CPU's work). Hop
// values and deltas are drawn at random (a fixed seed); ns/path and
// ns/report are the figures to compare across rule counts.
func BenchmarkRules(b *testing.B) {
	for _, src := range []string{"postcard", "keyincrement"} {
		for _, n := range []int{0, 1, 4} {
			b.Run(fmt.Sprintf("%s/rules=%d", src, n), func(b *testing.B) {
				benchRulesOver(b, src, benchRules[src][:n])
			})
		}
	}
}

func benchRulesOver(b *testing.B, src string, rules []rule.Config) {
	cat := ruleCatalog(b)
	tr := newRuleTranslator(b, cat, nil, nil, rules...)
	w := tr.NewWorker()
	x := uint64(0x9E3779B97F4A7C15)
	rnd := func(n uint32) uint32 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return uint32(x>>32) % n
	}
	const datagrams = 4096
	dgs := make([][]byte, datagrams)
	per := 1 // paths or reports per datagram
	for i := range dgs {
		if src == "postcard" {
			dgs[i] = pathDatagram(b, uint32(i)*0x9E3779B1, rnd(400), rnd(400), rnd(400), rnd(400), rnd(400))
			continue
		}
		per = 32
		var bw dta.BatchWriter
		bw.Reset(make([]byte, 0, 1500), dta.Header{})
		for j := range per {
			if err := bw.Add(&dta.Report{Opcode: dta.OpKeyIncrement, Redundancy: 2, Key: be32(uint32(i*per+j) * 0x9E3779B1), Delta: uint64(rnd(1000))}); err != nil {
				b.Fatal(err)
			}
		}
		dgs[i] = append([]byte(nil), bw.Bytes()...)
	}
	for i, dg := range dgs { // warm up
		w.Handle(dg, reporter, int64(i))
	}
	var fires0 uint64
	for _, r := range tr.Rules() {
		fires0 += r.Stats().Fires.Load()
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		w.Handle(dgs[i%datagrams], reporter, int64(i))
		i++
	}
	b.StopTimer()
	if s := tr.Stats(); s.Dropped() != 0 {
		b.Fatalf("drops %v", s.Drops)
	}
	var fires uint64
	for _, r := range tr.Rules() {
		fires += r.Stats().Fires.Load()
	}
	units := float64(b.N * per)
	unit := "ns/report"
	if src == "postcard" {
		unit = "ns/path"
	}
	b.ReportMetric(b.Elapsed().Seconds()*1e9/units, unit)
	b.ReportMetric(float64(fires-fires0)/units, "fires/"+unit[3:])
	tr.FlushAll()
}
