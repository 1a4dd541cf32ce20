package translator

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/wire/dta"
)

// flakySink refuses the calls whose number (from 1) is in fail, and passes
// the others to next.
type flakySink struct {
	next  memop.Sink
	fail  map[int]bool
	calls int
}

func (s *flakySink) Apply(ops []memop.Op) error {
	s.calls++
	if s.fail[s.calls] {
		return errors.New("link down")
	}
	return s.next.Apply(ops)
}

func TestARefusingSinkDropsTheReportsItRefused(t *testing.T) {
	_, cat := newTestTranslator(t, nil)
	sink := &flakySink{next: cat, fail: map[int]bool{1: true}}
	tr, err := New(DefaultConfig(), cat.Descriptors(), sink, nil)
	if err != nil {
		t.Fatal(err)
	}
	var bw dta.BatchWriter
	bw.Reset(make([]byte, 0, 256), dta.Header{})
	for i := range uint32(3) {
		if err := bw.Add(&dta.Report{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: be32(i), Value: be32(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Add(&dta.Report{Opcode: dta.OpKeyIncrement, Redundancy: 2, Key: be32(9), Delta: 1}); err != nil {
		t.Fatal(err)
	}
	w := tr.NewWorker()
	w.Handle(bw.Bytes(), reporter, 1) // one sink call for the four reports: refused
	st := tr.Stats()
	if st.Drops[ReasonSink] != 4 || st.Dropped() != 4 || st.Reports[dta.KeyWrite] != 0 || st.Reports[dta.KeyIncrement] != 0 {
		t.Fatalf("after a refused datagram: drops %v, reports %v; want 4 sink drops and none applied", st.Drops, st.Reports)
	}
	w.Handle(bw.Bytes(), reporter, 2) // accepted
	st = tr.Stats()
	if st.Drops[ReasonSink] != 4 || st.Reports[dta.KeyWrite] != 3 || st.Reports[dta.KeyIncrement] != 1 || st.Ops != 20 {
		t.Fatalf("after an accepted datagram: drops %v, reports %v, ops %d; want 3 + 1 applied, 2 × (3×2 + 4) ops handed over", st.Drops, st.Reports, st.Ops)
	}
	if sink.calls != 2 {
		t.Errorf("%d sink calls for two datagrams, want 2", sink.calls)
	}
}

func TestAppendRunsKeepOrderAndCountRefusals(t *testing.T) {
	_, cat := newTestTranslator(t, nil)
	sink := &flakySink{next: cat, fail: map[int]bool{1: true}}
	tr, err := New(DefaultConfig(), cat.Descriptors(), sink, nil)
	if err != nil {
		t.Fatal(err)
	}
	var bw dta.BatchWriter
	bw.Reset(make([]byte, 0, 512), dta.Header{})
	// Lists 1,1,1,1 (a batch of 4: refused), then 1,2,1,2,1,1,1 and 3 for list 5 of 16.
	lists := []uint32{1, 1, 1, 1, 1, 2, 1, 2, 1, 1, 1, 5, 5, 5}
	for i, l := range lists {
		if err := bw.Add(&dta.Report{Opcode: dta.OpAppend, List: l, Value: be32(uint32(100 + i))}); err != nil {
			t.Fatal(err)
		}
	}
	w := tr.NewWorker()
	w.Handle(bw.Bytes(), reporter, 1)
	tr.FlushAll()
	st := tr.Stats()
	if st.Drops[ReasonSink] != 1 || st.Reports[dta.Append] != uint64(len(lists)-1) {
		t.Fatalf("drops %v reports %v: want the refused batch to drop one report, as Add does", st.Drops, st.Reports)
	}
	app := cat.ByName("append").Append
	want := map[uint32][]uint32{1: {104, 106, 108, 109, 110}, 2: {105, 107}, 5: {111, 112, 113}}
	for l, vals := range want {
		p, err := app.Poll(l, 0, 100, nil)
		if err != nil || p.Count != len(vals) {
			t.Fatalf("list %d: poll %+v %v, want %d entries", l, p, err, len(vals))
		}
		for i, v := range vals {
			if got := binary.BigEndian.Uint32(p.Data[i*4:]); got != v {
				t.Errorf("list %d entry %d = %d, want %d", l, i, got, v)
			}
		}
	}
}

// deferringSink is a memop.Deferrer over next: ApplyDeferred holds copies of
// the ops until Push applies them; Apply applies at once.
type deferringSink struct {
	next                    memop.Sink
	held                    []memop.Op
	applies, defers, pushes int
}

func (s *deferringSink) Apply(ops []memop.Op) error {
	s.applies++
	return s.next.Apply(ops)
}

func (s *deferringSink) ApplyDeferred(ops []memop.Op) error {
	s.defers++
	for _, op := range ops {
		op.Data = bytes.Clone(op.Data) // the caller reuses its buffers
		s.held = append(s.held, op)
	}
	return nil
}

func (s *deferringSink) Push() {
	s.pushes++
	if err := s.next.Apply(s.held); err != nil {
		panic(err)
	}
	s.held = s.held[:0]
}

func TestADeferringSinkIsPushedOncePerDatagram(t *testing.T) {
	_, cat := newTestTranslator(t, nil)
	sink := &deferringSink{next: cat}
	tr, err := New(DefaultConfig(), cat.Descriptors(), sink, nil)
	if err != nil {
		t.Fatal(err)
	}
	var bw dta.BatchWriter
	bw.Reset(make([]byte, 0, 1024), dta.Header{})
	add := func(r dta.Report) {
		t.Helper()
		if err := bw.Add(&r); err != nil {
			t.Fatal(err)
		}
	}
	// Key-Writes, a path of 5 postcards and 8 Append entries (two batches of
	// 4) for one list: several sink calls in one datagram.
	for i := range uint32(3) {
		add(dta.Report{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: be32(i), Value: be32(1000 + i)})
	}
	for hop := range uint8(5) {
		add(dta.Report{Opcode: dta.OpPostcard, Key: be32(42), Hop: hop + 1, Value: be32(uint32(hop+1) * 10)})
	}
	for i := range uint32(8) {
		add(dta.Report{Opcode: dta.OpAppend, List: 1, Value: be32(100 + i)})
	}
	w := tr.NewWorker()
	w.Handle(bw.Bytes(), reporter, 1)
	if sink.applies != 0 || sink.pushes != 1 || sink.defers < 3 {
		t.Fatalf("one datagram: %d Apply, %d ApplyDeferred, %d Push; want every op deferred and one Push", sink.applies, sink.defers, sink.pushes)
	}
	if len(sink.held) != 0 {
		t.Fatalf("%d ops still held after the datagram", len(sink.held))
	}
	kw := cat.ByName("keywrite").KeyWrite
	for i := range uint32(3) {
		kb := keywrite.CompatKey(i)
		res, err := kw.Query(kb[:], 2, 1, nil)
		if err != nil || res.Status != keywrite.Found || binary.BigEndian.Uint32(res.Value) != 1000+i {
			t.Fatalf("key %d: %+v %v", i, res, err)
		}
	}
	if res, err := cat.ByName("postcard").Postcard.Query(be32(42), nil); err != nil || !res.Complete || len(res.Hops) != 5 {
		t.Fatalf("postcard answer %+v %v", res, err)
	}
	if p, err := cat.ByName("append").Append.Poll(1, 0, 100, nil); err != nil || p.Count != 8 {
		t.Fatalf("append poll %+v %v, want 8 entries", p, err)
	}
}
