package fanout

import (
	"fmt"
	"testing"

	"github.com/dta-go/dta/wire/dta"
)

// BenchmarkRoute measures the front end's cost per report: the same
// Key-Write datagrams (one report each, N = 2) through one translator, and
// through the router over 3 collectors (each a translator over a local
// store), with 1 and 2 replicas.
//
//	go test -run '^$' -bench Route ./internal/fanout/
func BenchmarkRoute(b *testing.B) {
	ds := make([][]byte, 4096)
	for i := range ds {
		r := dta.Report{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: key(uint32(i * 7919)), Value: key(uint32(i))}
		ds[i], _ = dta.AppendDatagram(nil, dta.Header{}, &r)
	}
	for _, tc := range []struct {
		n, replicas int
		direct      bool
	}{{1, 1, true}, {3, 1, false}, {3, 2, false}} {
		name := fmt.Sprintf("collectors=%d/replicas=%d", tc.n, tc.replicas)
		if tc.direct {
			name = "one translator, no router"
		}
		b.Run(name, func(b *testing.B) {
			c := newCluster(b, tc.n, tc.replicas)
			handle := c.w.Handle
			if tc.direct {
				handle = c.router.members[0].Tr.NewWorker().Handle
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				handle(ds[i%len(ds)], from, 1)
				i++
			}
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "reports/s")
		})
	}
}
