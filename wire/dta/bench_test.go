package dta_test

import (
	"io"
	"testing"

	"github.com/dta-go/dta/wire/dta"
)

// benchReports is one report of every format, as a reporter sends them: compat
// reports with 4-byte keys and values, extended ones with an IPv4 5-tuple key
// and the value sizes of the paper's typical uses (INT path 20 B, NetSeer
// loss event 18 B).
func benchReports() []struct {
	name string
	r    dta.Report
} {
	key4 := []byte{0, 0, 0, 42}
	tuple := []byte{10, 0, 0, 1, 10, 0, 0, 2, 0x1F, 0x90, 0x00, 0x50, 6}
	return []struct {
		name string
		r    dta.Report
	}{
		{"keywrite", dta.Report{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: key4, Value: []byte{1, 2, 3, 4}}},
		{"keyincrement", dta.Report{Opcode: dta.OpKeyIncrement, Redundancy: 2, Key: key4, Delta: 1500}},
		{"append", dta.Report{Opcode: dta.OpAppend, List: 3, Value: []byte{1, 2, 3, 4}}},
		{"postcard", dta.Report{Opcode: dta.OpPostcard, Key: key4, Hop: 2, Value: []byte{0, 0, 1, 7}}},
		{"keywrite-ext", dta.Report{Opcode: dta.OpKeyWriteExt, Store: 5, Redundancy: 2, Key: tuple, Value: make([]byte, 20)}},
		{"keyincrement-ext", dta.Report{Opcode: dta.OpKeyIncrementExt, Store: 2, Redundancy: 2, Key: tuple, Delta: 1500}},
		{"append-ext", dta.Report{Opcode: dta.OpAppendExt, Store: 6, List: 3, Value: make([]byte, 18)}},
		{"postcard-ext", dta.Report{Opcode: dta.OpPostcardExt, Store: 3, Hop: 2, PathLen: 5, Key: tuple, Value: []byte{0, 0, 1, 7}}},
	}
}

// BenchmarkDecode decodes single-report datagrams of every format: Decode of
// the base header and Next of the report. One op is one report.
func BenchmarkDecode(b *testing.B) {
	for _, c := range benchReports() {
		b.Run(c.name, func(b *testing.B) {
			dgram, err := dta.AppendDatagram(nil, dta.Header{}, &c.r)
			if err != nil {
				b.Fatal(err)
			}
			var d dta.Decoder
			var dg dta.Datagram
			var r dta.Report
			b.SetBytes(int64(len(dgram)))
			b.ReportAllocs()
			for b.Loop() {
				if err := d.Decode(dgram, &dg); err != nil {
					b.Fatal(err)
				}
				if err := dg.Next(&r); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reports/s")
		})
	}
}

// BenchmarkDecodeBatch decodes OpBatch datagrams filled with reports of one
// format up to a 1472-byte MTU. One op is one datagram; reports/s counts the
// reports in them.
func BenchmarkDecodeBatch(b *testing.B) {
	const mtu = 1472
	for _, c := range benchReports() {
		b.Run(c.name, func(b *testing.B) {
			var w dta.BatchWriter
			w.Reset(make([]byte, 0, mtu), dta.Header{})
			size, err := dta.RecordSize(&c.r)
			if err != nil {
				b.Fatal(err)
			}
			for w.Len() < dta.MaxBatch && w.Size()+size <= mtu {
				if err := w.Add(&c.r); err != nil {
					b.Fatal(err)
				}
			}
			dgram, n := w.Bytes(), w.Len()
			var d dta.Decoder
			var dg dta.Datagram
			var r dta.Report
			b.SetBytes(int64(len(dgram)))
			b.ReportAllocs()
			for b.Loop() {
				if err := d.Decode(dgram, &dg); err != nil {
					b.Fatal(err)
				}
				for {
					err := dg.Next(&r)
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(n), "reports/datagram")
			b.ReportMetric(float64(b.N)*float64(n)/b.Elapsed().Seconds(), "reports/s")
		})
	}
}
