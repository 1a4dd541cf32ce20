package dta_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/dta-go/dta/wire/dta"
)

type roundTrip struct {
	name   string
	header dta.Header
	r      dta.Report
}

func seqBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + 1)
	}
	return b
}

func roundTrips() []roundTrip {
	k4 := []byte{0xca, 0xfe, 0xba, 0xbe}
	v4 := []byte{0x01, 0x02, 0x03, 0x04}
	return []roundTrip{
		{"a compat Key-Write with N=1 survives a round trip", dta.Header{Seq: 1}, dta.Report{Opcode: dta.OpKeyWrite, Redundancy: 1, Key: k4, Value: v4}},
		{"a compat Key-Write with N=MaxRedundancy survives a round trip", dta.Header{Seq: 255, Flags: dta.FlagRetransmit}, dta.Report{Opcode: dta.OpKeyWrite, Redundancy: dta.MaxRedundancy, Key: k4, Value: v4}},
		{"a compat Key-Increment survives a round trip", dta.Header{Seq: 2}, dta.Report{Opcode: dta.OpKeyIncrement, Redundancy: 3, Key: k4, Delta: 0xfedcba9876543210}},
		{"a compat Append survives a round trip", dta.Header{Seq: 3, Flags: dta.FlagImmediate}, dta.Report{Opcode: dta.OpAppend, List: 0xffffffff, Value: v4}},
		{"a compat Postcard at hop 1 survives a round trip", dta.Header{Seq: 4}, dta.Report{Opcode: dta.OpPostcard, Key: k4, Hop: 1, Value: v4}},
		{"a compat Postcard at hop MaxHops survives a round trip", dta.Header{Seq: 4}, dta.Report{Opcode: dta.OpPostcard, Key: k4, Hop: dta.MaxHops, Value: v4}},
		{"an extended Key-Write with a 1-byte key and value survives a round trip", dta.Header{Seq: 5}, dta.Report{Opcode: dta.OpKeyWriteExt, Store: 1, Redundancy: 1, Key: []byte{9}, Value: []byte{8}}},
		{"an extended Key-Write with a MaxKeyLen key and MaxValueLen value survives a round trip", dta.Header{Seq: 6}, dta.Report{Opcode: dta.OpKeyWriteExt, Store: 0xffff, Redundancy: dta.MaxRedundancy, Key: seqBytes(dta.MaxKeyLen), Value: seqBytes(dta.MaxValueLen)}},
		{"an extended Key-Increment with a MaxKeyLen key survives a round trip", dta.Header{Seq: 7}, dta.Report{Opcode: dta.OpKeyIncrementExt, Store: 2, Redundancy: 2, Key: seqBytes(dta.MaxKeyLen), Delta: 1}},
		{"an extended Key-Increment with a 5-tuple key survives a round trip", dta.Header{Seq: 8}, dta.Report{Opcode: dta.OpKeyIncrementExt, Store: 3, Redundancy: 1, Key: seqBytes(13), Delta: ^uint64(0)}},
		{"an extended Append with a 1-byte entry survives a round trip", dta.Header{Seq: 9}, dta.Report{Opcode: dta.OpAppendExt, Store: 4, List: 7, Value: []byte{0}}},
		{"an extended Append with a MaxValueLen entry survives a round trip", dta.Header{Seq: 10}, dta.Report{Opcode: dta.OpAppendExt, Store: 5, List: 1 << 31, Value: seqBytes(dta.MaxValueLen)}},
		{"an extended Postcard with an unknown path length survives a round trip", dta.Header{Seq: 11}, dta.Report{Opcode: dta.OpPostcardExt, Store: 6, Hop: 3, Key: seqBytes(37), Value: seqBytes(1)}},
		{"an extended Postcard at the last hop of a full path survives a round trip", dta.Header{Seq: 12}, dta.Report{Opcode: dta.OpPostcardExt, Store: 7, Hop: dta.MaxHops, PathLen: dta.MaxHops, Key: seqBytes(dta.MaxKeyLen), Value: seqBytes(dta.MaxHopValue)}},
		{"a Sketch-Merge run of one counter survives a round trip", dta.Header{Seq: 13}, dta.Report{Opcode: dta.OpSketchExt, Store: 8, Epoch: 42, Row: 3, Column: 256, Value: seqBytes(8)}},
		{"a Sketch-Merge run of MaxSketchRun counters with every field at its largest survives a round trip", dta.Header{Seq: 14}, dta.Report{Opcode: dta.OpSketchExt, Store: 0xffff, Epoch: 0xffffffff, Row: 0xff, Column: 0xffffffff, Value: seqBytes(8 * dta.MaxSketchRun)}},
	}
}

func TestRoundTripSingleDatagram(t *testing.T) {
	for _, tt := range roundTrips() {
		t.Run(tt.name, func(t *testing.T) {
			b, err := dta.AppendDatagram([]byte{0xee}, tt.header, &tt.r)
			if err != nil {
				t.Fatal(err)
			}
			if b[0] != 0xee {
				t.Fatal("AppendDatagram overwrote the prefix")
			}
			h, err, got := decodeAll(t, dta.Decoder{}, b[1:])
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			want := tt.header
			want.Opcode = tt.r.Opcode
			if h != want {
				t.Errorf("header = %+v, want %+v", h, want)
			}
			if len(got) != 1 || got[0].err != nil {
				t.Fatalf("got %+v, want one report", got)
			}
			if d := reportDiff(got[0].r, tt.r); d != "" {
				t.Error(d)
			}
		})
	}
}

func TestRoundTripLegacyHeader(t *testing.T) {
	for _, tt := range roundTrips() {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.header
			h.Opcode = tt.r.Opcode
			b, err := tt.r.AppendTo(h.AppendLegacyTo(nil))
			if err != nil {
				t.Fatal(err)
			}
			gh, err, got := decodeAll(t, dta.Decoder{Legacy: true}, b)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			// The legacy header has no seqnum and only the immediate flag.
			if want := (dta.Header{Opcode: h.Opcode, Flags: h.Flags & dta.FlagImmediate}); gh != want {
				t.Errorf("header = %+v, want %+v", gh, want)
			}
			if len(got) != 1 || got[0].err != nil {
				t.Fatalf("got %+v, want one report", got)
			}
			if d := reportDiff(got[0].r, tt.r); d != "" {
				t.Error(d)
			}
		})
	}
}

func TestRoundTripBatch(t *testing.T) {
	rts := roundTrips()
	var w dta.BatchWriter
	h := dta.Header{Opcode: dta.OpKeyWrite, Seq: 77, Flags: dta.FlagRetransmit}
	w.Reset(make([]byte, 0, 8192), h)
	size := dta.HeaderLen + 1
	for i := range rts {
		rs, err := dta.RecordSize(&rts[i].r)
		if err != nil {
			t.Fatalf("%s: RecordSize: %v", rts[i].name, err)
		}
		if err := w.Add(&rts[i].r); err != nil {
			t.Fatalf("%s: Add: %v", rts[i].name, err)
		}
		size += rs
		if w.Size() != size || len(w.Bytes()) != size {
			t.Fatalf("after %s: Size() = %d, len(Bytes()) = %d, want %d", rts[i].name, w.Size(), len(w.Bytes()), size)
		}
	}
	if w.Len() != len(rts) {
		t.Fatalf("Len() = %d, want %d", w.Len(), len(rts))
	}
	gh, err, got := decodeAll(t, dta.Decoder{}, w.Bytes())
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if want := (dta.Header{Opcode: dta.OpBatch, Seq: 77, Flags: dta.FlagRetransmit}); gh != want {
		t.Errorf("header = %+v, want %+v (Reset must set the batch opcode)", gh, want)
	}
	if len(got) != len(rts) {
		t.Fatalf("decoded %d reports, want %d", len(got), len(rts))
	}
	for i, res := range got {
		t.Run(rts[i].name, func(t *testing.T) {
			if res.err != nil {
				t.Fatal(res.err)
			}
			if d := reportDiff(res.r, rts[i].r); d != "" {
				t.Error(d)
			}
		})
	}
}

func TestBatchWriterResetStartsOver(t *testing.T) {
	var w dta.BatchWriter
	buf := make([]byte, 0, 256)
	r := dta.Report{Opcode: dta.OpAppend, List: 1, Value: []byte{1, 2, 3, 4}}
	w.Reset(buf, dta.Header{Seq: 1})
	for range 3 {
		if err := w.Add(&r); err != nil {
			t.Fatal(err)
		}
	}
	w.Reset(buf, dta.Header{Seq: 2})
	if w.Len() != 0 || w.Size() != dta.HeaderLen+1 {
		t.Fatalf("after Reset: Len %d Size %d", w.Len(), w.Size())
	}
	if err := w.Add(&r); err != nil {
		t.Fatal(err)
	}
	want := hx(t, "20 02 00 | 01 | 02 0008 | 00000001 01020304")
	if !bytes.Equal(w.Bytes(), want) {
		t.Errorf("Bytes() = %x, want %x", w.Bytes(), want)
	}
}

func TestBatchWriterHoldsAtMostMaxBatch(t *testing.T) {
	var w dta.BatchWriter
	w.Reset(nil, dta.Header{})
	r := dta.Report{Opcode: dta.OpAppend, Value: []byte{1, 2, 3, 4}}
	for i := range dta.MaxBatch {
		if err := w.Add(&r); err != nil {
			t.Fatalf("Add #%d: %v", i+1, err)
		}
	}
	if err := w.Add(&r); !errors.Is(err, dta.ErrEncode) {
		t.Fatalf("Add beyond MaxBatch = %v, want ErrEncode", err)
	}
	_, err, got := decodeAll(t, dta.Decoder{}, w.Bytes())
	if err != nil || len(got) != dta.MaxBatch {
		t.Fatalf("decoded %d reports (err %v), want %d", len(got), err, dta.MaxBatch)
	}
	for i, res := range got {
		if res.err != nil {
			t.Fatalf("record %d: %v", i, res.err)
		}
	}
}

func TestAckRoundTrip(t *testing.T) {
	for seq := range 256 {
		for _, nack := range []bool{false, true} {
			a := dta.Ack{Seq: uint8(seq), NACK: nack}
			var got dta.Ack
			if err := got.Decode(a.AppendTo(nil)); err != nil || got != a {
				t.Fatalf("%+v decoded as %+v, %v", a, got, err)
			}
		}
	}
}

func TestOpcodePrimitive(t *testing.T) {
	tests := []struct {
		op       dta.Opcode
		prim     dta.Primitive
		extended bool
	}{
		{dta.OpKeyWrite, dta.KeyWrite, false},
		{dta.OpAppend, dta.Append, false},
		{dta.OpKeyIncrement, dta.KeyIncrement, false},
		{dta.OpPostcard, dta.Postcard, false},
		{dta.OpKeyWriteExt, dta.KeyWrite, true},
		{dta.OpAppendExt, dta.Append, true},
		{dta.OpKeyIncrementExt, dta.KeyIncrement, true},
		{dta.OpPostcardExt, dta.Postcard, true},
		{dta.OpSketchExt, dta.SketchMerge, true},
		{dta.OpBatch, 0, false},
		{0, 0, false},
		{0x05, 0, false},
		{0x10, 0, false},
		{0x16, 0, false},
		{0xff, 0, false},
	}
	for _, tt := range tests {
		if got := tt.op.Primitive(); got != tt.prim {
			t.Errorf("Opcode(%#x).Primitive() = %v, want %v", uint8(tt.op), got, tt.prim)
		}
		if got := tt.op.Extended(); got != tt.extended {
			t.Errorf("Opcode(%#x).Extended() = %v, want %v", uint8(tt.op), got, tt.extended)
		}
	}
	for _, p := range dta.Primitives {
		if p != dta.SketchMerge && (uint8(p) != uint8(dta.Opcode(p)) || dta.Opcode(p).Primitive() != p) {
			t.Errorf("primitive %v does not equal its compat opcode", p)
		}
		if int(p) >= dta.NumPrimitives {
			t.Errorf("primitive %v >= NumPrimitives", p)
		}
		q, err := dta.ParsePrimitive(p.String())
		if err != nil || q != p {
			t.Errorf("ParsePrimitive(%q) = %v, %v", p.String(), q, err)
		}
	}
	for _, s := range []string{"key-write", "key-increment", "postcarding"} {
		if _, err := dta.ParsePrimitive(s); err != nil {
			t.Errorf("ParsePrimitive(%q): %v", s, err)
		}
	}
	if _, err := dta.ParsePrimitive("KeyWrite"); err == nil {
		t.Error("ParsePrimitive accepted an unknown name")
	}
	if s := dta.Primitive(9).String(); s != "primitive(9)" {
		t.Errorf("Primitive(9).String() = %q", s)
	}
}

func TestReportAccessors(t *testing.T) {
	r := dta.Report{Opcode: dta.OpPostcard, Key: []byte{0x0a, 0, 0, 0x65}}
	if r.Key32() != 0x0a000065 {
		t.Errorf("Key32() = %#x, want 0x0a000065 (big-endian wire bytes)", r.Key32())
	}
	if r.Primitive() != dta.Postcard {
		t.Errorf("Primitive() = %v", r.Primitive())
	}
	r.Key = []byte{1, 2, 3}
	if r.Key32() != 0 {
		t.Errorf("Key32() of a 3-byte key = %#x, want 0", r.Key32())
	}
	h := dta.Header{Flags: dta.FlagImmediate}
	if !h.Immediate() || h.Retransmit() {
		t.Errorf("flags %#x: Immediate %v Retransmit %v", h.Flags, h.Immediate(), h.Retransmit())
	}
	h.Flags = dta.FlagRetransmit
	if h.Immediate() || !h.Retransmit() {
		t.Errorf("flags %#x: Immediate %v Retransmit %v", h.Flags, h.Immediate(), h.Retransmit())
	}
}
