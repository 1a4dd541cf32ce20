package reporter

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/dta-go/dta/wire/dta"
)

// BenchmarkSend measures Send to a loopback socket that drains what it gets.
func BenchmarkSend(b *testing.B) {
	sink, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer sink.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, err := sink.Read(buf); err != nil {
				return
			}
		}
	}()
	for _, batch := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			r, err := New(Config{To: sink.LocalAddr().String(), Batch: batch, FlushInterval: time.Hour}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			key := dta.Key{Bytes: []byte{10, 0, 0, 1, 10, 0, 1, 2, 0x13, 0x88, 1, 0xbb, 6}}
			rep := KeyWrite(key, make([]byte, 20), 2, 1)
			b.ReportAllocs()
			for b.Loop() {
				if err := r.Send(&rep, false); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reports/s")
		})
	}
}
