package tea_test

import (
	"testing"

	"github.com/dta-go/dta/internal/tea"
)

// BenchmarkLookup is the engine's cost per lookup with a local reader: the
// sketch, the stash and cache checks, and one row read and match.
func BenchmarkLookup(b *testing.B) {
	spec := tea.Spec{Buckets: 1 << 16, Cells: 8, KeySize: 13, ValueSize: 6, Hash: tea.CRC64}
	r := newRig(b, spec, 4, 1, 1<<18, func(c *tea.Config) { c.Done = func(*tea.Result) {} })
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_ = r.eng.Lookup(r.keys[i&(1<<18-1)], 0)
		i++
	}
}

// BenchmarkInsert is the control plane's cost per insert up to load 0.7.
func BenchmarkInsert(b *testing.B) {
	spec := tea.Spec{Buckets: 1 << 14, Cells: 8, KeySize: 13, ValueSize: 6, Hash: tea.CRC64}
	ks := keys(int(0.7*float64(spec.Entries())), 13, 3)
	v := make([]byte, 6)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		tab, _ := newTable(b, spec, tea.DefaultTableConfig())
		b.StartTimer()
		for _, k := range ks {
			_ = tab.Insert(k, v)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ks)), "ns/insert")
}
