package export

import (
	"context"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/dta-go/dta/wire/dta"
)

// BenchmarkIngestWithExport measures what exporting costs ingest: the same
// translator applying Append reports (one per datagram, 64 lists) with no
// exporter, and with one sending every entry, every path and every changed
// slot to a Kafka-protocol broker (kfake, in this process: it takes CPU
// from the same cores, where a real broker would not). It reports the
// reports applied per second and the records the broker acknowledged per
// second; the difference between the two is what the exporter could not
// keep up with (its Append rings are lapped, counted in lapped/op).
//
//	go test -run '^$' -bench IngestWithExport -benchtime 2000000x ./internal/export/
func BenchmarkIngestWithExport(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "export=off"
		if on {
			name = "export=on"
		}
		b.Run(name, func(b *testing.B) {
			f := newFixture(b, 64, 1<<16, kfake.SeedTopics(4, topicAppend, topicPaths, topicChanges))
			var e *Exporter
			var stop func()
			if on {
				var err error
				e, err = New(Config{Brokers: f.cluster.ListenAddrs(), Topics: Topics{Append: topicAppend, Paths: topicPaths, Changes: topicChanges},
					PollInterval: 10 * time.Millisecond, ChangesInterval: time.Second, ShutdownTimeout: time.Second}, f.cat, nil)
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { e.Run(ctx); close(done) }()
				stop = func() { cancel(); <-done }
			}
			dgrams := make([][]byte, 1024)
			for i := range dgrams {
				r := dta.Report{Opcode: dta.OpAppend, List: uint32(i % 64), Value: binary.BigEndian.AppendUint32(nil, uint32(i))}
				dgrams[i], _ = dta.AppendDatagram(nil, dta.Header{Opcode: r.Opcode}, &r)
			}
			from := netip.MustParseAddrPort("127.0.0.1:9")
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				f.w.Handle(dgrams[i%len(dgrams)], from, 0)
			}
			f.tr.FlushAll()
			el := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/el.Seconds(), "reports/s")
			if on {
				// Until every entry is acknowledged (or lost to a lap).
				s := e.Stats()
				for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
					if s.Records[StreamAppend].Load()+s.Dropped[StreamAppend][DropLapped].Load() >= uint64(b.N) {
						break
					}
				}
				all := time.Since(start)
				stop()
				b.ReportMetric(float64(s.Records[StreamAppend].Load())/all.Seconds(), "exported/s")
				b.ReportMetric(float64(s.Dropped[StreamAppend][DropLapped].Load())/float64(b.N), "lapped/op")
			}
		})
	}
}
