package dta_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/dta-go/dta/wire/dta"
)

func TestDecodeDoesNotAllocate(t *testing.T) {
	cases := goldens()
	for _, rj := range rejects() {
		cases = append(cases, golden{name: "rejected: " + rj.name, legacy: rj.legacy, hex: rj.hex})
	}
	for _, g := range cases {
		t.Run(g.name, func(t *testing.T) {
			b := hx(t, g.hex)
			d := dta.Decoder{Legacy: g.legacy}
			var dg dta.Datagram
			var r dta.Report
			allocs := testing.AllocsPerRun(100, func() {
				if d.Decode(b, &dg) != nil {
					return
				}
				for dg.Next(&r) != io.EOF {
				}
			})
			if allocs != 0 {
				t.Errorf("Decode+Next allocated %v times per datagram", allocs)
			}
		})
	}
}

func TestAppendDatagramDoesNotAllocate(t *testing.T) {
	for _, tt := range roundTrips() {
		t.Run(tt.name, func(t *testing.T) {
			buf := make([]byte, 0, 2048)
			allocs := testing.AllocsPerRun(100, func() {
				var err error
				buf, err = dta.AppendDatagram(buf[:0], tt.header, &tt.r)
				if err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("AppendDatagram allocated %v times", allocs)
			}
		})
	}
}

func TestBatchWriterDoesNotAllocate(t *testing.T) {
	rts := roundTrips()
	buf := make([]byte, 0, 8192)
	var w dta.BatchWriter
	allocs := testing.AllocsPerRun(100, func() {
		w.Reset(buf, dta.Header{Seq: 1})
		for i := range rts {
			if err := w.Add(&rts[i].r); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := dta.RecordSize(&rts[0].r); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("BatchWriter Reset+Add allocated %v times per batch", allocs)
	}
	if &w.Bytes()[0] != &buf[:1][0] {
		t.Error("BatchWriter did not build the batch in the buffer given to Reset")
	}
}

func TestAckDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, dta.AckLen)
	var a dta.Ack
	allocs := testing.AllocsPerRun(100, func() {
		buf = dta.Ack{Seq: 7, NACK: true}.AppendTo(buf[:0])
		if err := a.Decode(buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Ack AppendTo+Decode allocated %v times", allocs)
	}
}

// TestDecodedSlicesCannotOverwriteTheDatagram: Key and Value alias the
// datagram, but appending to them must not write into the bytes after them.
func TestDecodedSlicesCannotOverwriteTheDatagram(t *testing.T) {
	for _, g := range goldens() {
		t.Run(g.name, func(t *testing.T) {
			b := hx(t, g.hex)
			orig := bytes.Clone(b)
			var dg dta.Datagram
			if err := (dta.Decoder{Legacy: g.legacy}).Decode(b, &dg); err != nil {
				t.Fatal(err)
			}
			var r dta.Report
			for dg.Next(&r) != io.EOF {
				_ = append(r.Key, 0xee, 0xee)
				_ = append(r.Value, 0xee, 0xee)
			}
			if !bytes.Equal(b, orig) {
				t.Errorf("appending to a decoded Key or Value changed the datagram:\n got %x\nwant %x", b, orig)
			}
		})
	}
}
