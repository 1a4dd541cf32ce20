package bench

import (
	"io"
	"testing"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/wire/dta"
)

func TestWorkloadDatagramsDecodeToTheirReports(t *testing.T) {
	for _, p := range Primitives {
		for _, per := range []int{1, 7, MaxPerDatagram(p)} {
			w, err := NewWorkload(p, per, 1000, 5000)
			if err != nil {
				t.Fatal(err)
			}
			var dg dta.Datagram
			var r dta.Report
			keys := map[string]bool{}
			for i := range w.Datagrams() {
				b := w.Datagram(i)
				if len(b) > MTU {
					t.Fatalf("%v per %d: datagram of %d bytes", p, per, len(b))
				}
				if err := (dta.Decoder{}).Decode(b, &dg); err != nil {
					t.Fatalf("%v per %d: datagram %d: %v", p, per, i, err)
				}
				n := 0
				for {
					err := dg.Next(&r)
					if err == io.EOF {
						break
					}
					if err != nil || r.Primitive() != p {
						t.Fatalf("%v per %d: datagram %d report %d: %v (%v)", p, per, i, n, err, r.Primitive())
					}
					keys[string(r.Key)] = true
					n++
				}
				if n != per {
					t.Fatalf("%v: datagram %d holds %d reports, want %d", p, i, n, per)
				}
			}
			if w.Datagrams() != 5000/per {
				t.Errorf("%v per %d: %d datagrams, want %d", p, per, w.Datagrams(), 5000/per)
			}
			if p == dta.KeyWrite && len(keys) < 900 {
				t.Errorf("%v: %d distinct keys among 5000 reports over 1000", p, len(keys))
			}
		}
	}
}

func TestWorkloadRefusesWhatDoesNotFit(t *testing.T) {
	if _, err := NewWorkload(dta.KeyWrite, MaxPerDatagram(dta.KeyWrite)+1, 10, 10); err == nil {
		t.Error("more reports than fit a datagram were accepted")
	}
	if _, err := NewWorkload(dta.KeyWrite, 1, 0, 10); err == nil {
		t.Error("zero keys were accepted")
	}
	if MaxPerDatagram(dta.KeyWrite) != 122 || MaxPerDatagram(dta.Append) != 133 {
		t.Errorf("per datagram: key-write %d, append %d; want 122 and 133 in 1472 bytes",
			MaxPerDatagram(dta.KeyWrite), MaxPerDatagram(dta.Append))
	}
}

func TestDescriptorsAreTheCompatDefaults(t *testing.T) {
	for _, p := range Primitives {
		d, err := Descriptor(p, 64<<20, hashing.CRC32)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Default || d.Primitive != p || d.RegionSize() > 64<<20 || d.RegionSize() < 32<<20 {
			t.Errorf("%v: %+v (region %d bytes)", p, d, d.RegionSize())
		}
	}
}

func TestModeNames(t *testing.T) {
	for _, m := range append(DefaultModes(), Mode{PerDatagram: 16, Recvmmsg: true}) {
		got, err := ParseMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %+v, %v", m.String(), got, err)
		}
	}
	for _, s := range []string{"", "single", "multi/", "batch/read", "multi1/read", "multi256/read", "single/recv"} {
		if _, err := ParseMode(s); err == nil {
			t.Errorf("ParseMode(%q) succeeded", s)
		}
	}
}
