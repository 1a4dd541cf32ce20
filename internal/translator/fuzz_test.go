package translator

import (
	"testing"

	"github.com/dta-go/dta/wire/dta"
)

// FuzzHandle feeds arbitrary datagrams through decode, routing, translation
// and the local sink over real regions. Nothing may panic, and the sink must
// never refuse an op: every op the translator emits has to be inside its
// store (a refused op would be a translation bug, not bad input).
func FuzzHandle(f *testing.F) {
	var bw dta.BatchWriter
	bw.Reset(make([]byte, 0, 256), dta.Header{Flags: dta.FlagRetransmit})
	for _, r := range []dta.Report{
		{Opcode: dta.OpKeyWriteExt, Store: 1, Redundancy: 4, Key: []byte("five-tuple-13"), Value: []byte{1, 2, 3, 4}},
		{Opcode: dta.OpPostcardExt, Store: 3, Hop: 2, PathLen: 3, Key: []byte{9}, Value: []byte{7}},
		{Opcode: dta.OpAppendExt, Store: 4, List: 15, Value: []byte{1, 2, 3, 4}},
		{Opcode: dta.OpKeyIncrementExt, Store: 2, Redundancy: 1, Key: []byte{1, 2}, Delta: 1 << 60},
	} {
		if err := bw.Add(&r); err != nil {
			f.Fatal(err)
		}
	}
	for _, seed := range [][]byte{
		{0x01, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1},
		{0x02, 0, 0x80, 0, 0, 0, 3, 0, 0, 0, 1},
		{0x03, 0, 0, 4, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 5},
		{0x04, 0, 0, 0, 0, 0, 42, 5, 0, 0, 0, 9},
		bw.Bytes(),
	} {
		f.Add(seed)
	}
	tr, cat := newTestTranslator(f, nil)
	w := tr.NewWorker()
	f.Fuzz(func(t *testing.T, b []byte) {
		w.Handle(b, reporter, 1)
		tr.Tick(1 << 40)
		if n := cat.Stats().Rejected.Load(); n != 0 {
			t.Fatalf("the sink refused %d ops emitted for %x", n, b)
		}
	})
}
