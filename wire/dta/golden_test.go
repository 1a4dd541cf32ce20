package dta_test

import (
	"bytes"
	"testing"

	"github.com/dta-go/dta/wire/dta"
)

// golden is one hand-written datagram and what it must decode to. The bytes
// are written from docs/PROTOCOL.md and spec/original-prototype.md §1, never
// produced by this package's encoder.
type golden struct {
	name    string
	legacy  bool
	hex     string
	header  dta.Header
	reports []dta.Report
	// notCanonical marks bytes the encoder does not reproduce (reserved bits).
	notCanonical bool
}

// fiveTupleV4 is tcp,10.0.0.1:5000,10.0.0.2:80 in wire order.
const fiveTupleV4 = "0a000001 0a000002 1388 0050 06"

// fiveTupleV6 is udp,[2001:db8::1]:53,[2001:db8::2]:5353 in wire order.
const fiveTupleV6 = "20010db8000000000000000000000001 20010db8000000000000000000000002 0035 14e9 11"

func goldens() []golden {
	return []golden{
		// Sketch-Merge (docs/PROTOCOL.md, "Sketch-Merge report"): store id,
		// epoch, row, counter count, first column, then big-endian
		// two's-complement int64 counters.
		{
			name: "a Sketch-Merge report carries store, epoch, row, count, column and signed 64-bit counters",
			hex: "15 09 00 | 000a | 0000002a | 03 | 0003 | 00000100 |" +
				" 0000000000000005 0000000000000000 fffffffffffffffe",
			header: dta.Header{Opcode: dta.OpSketchExt, Seq: 9},
			reports: []dta.Report{{Opcode: dta.OpSketchExt, Store: 10, Epoch: 42, Row: 3, Column: 256,
				Value: []byte{0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe}}},
		},
		{
			name:   "a Sketch-Merge report to the default store of the last row at the largest epoch",
			hex:    "15 00 80 | 0000 | ffffffff | 0f | 0001 | ffffffff | 8000000000000000",
			header: dta.Header{Opcode: dta.OpSketchExt, Flags: dta.FlagImmediate},
			reports: []dta.Report{{Opcode: dta.OpSketchExt, Epoch: 0xffffffff, Row: 15, Column: 0xffffffff,
				Value: []byte{0x80, 0, 0, 0, 0, 0, 0, 0}}},
		},
		// Compat formats with the 3-byte base header {opcode, seq, flags}, as
		// the prototype's TRex generators and inject_dta.py send them.
		{
			name:    "a compat Key-Write is opcode, seq, flags, N, 4-byte key, 4-byte data (12 bytes)",
			hex:     "01 00 00 | 01 | 00000001 | 000000ff",
			header:  dta.Header{Opcode: dta.OpKeyWrite},
			reports: []dta.Report{{Opcode: dta.OpKeyWrite, Redundancy: 1, Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0xff}}},
		},
		{
			name:    "a compat Key-Write from the generator with N=4 and seq 42 keeps the key big-endian",
			hex:     "01 2a 00 | 04 | 3b9ac9ff | 00000007",
			header:  dta.Header{Opcode: dta.OpKeyWrite, Seq: 42},
			reports: []dta.Report{{Opcode: dta.OpKeyWrite, Redundancy: 4, Key: []byte{0x3b, 0x9a, 0xc9, 0xff}, Value: []byte{0, 0, 0, 7}}},
		},
		{
			name:    "a compat Key-Increment is opcode, seq, flags, N, 4-byte key, 8-byte counter (16 bytes)",
			hex:     "03 07 00 | 04 | 000003e8 | 0000000000000005",
			header:  dta.Header{Opcode: dta.OpKeyIncrement, Seq: 7},
			reports: []dta.Report{{Opcode: dta.OpKeyIncrement, Redundancy: 4, Key: []byte{0, 0, 3, 0xe8}, Delta: 5}},
		},
		{
			name:    "a compat Key-Increment carries the full 64-bit counter",
			hex:     "03 ff 00 | 01 | ffffffff | 8000000000000001",
			header:  dta.Header{Opcode: dta.OpKeyIncrement, Seq: 255},
			reports: []dta.Report{{Opcode: dta.OpKeyIncrement, Redundancy: 1, Key: []byte{0xff, 0xff, 0xff, 0xff}, Delta: 1<<63 | 1}},
		},
		{
			name:    "a compat Append is opcode, seq, flags, 4-byte list id, 4-byte entry (11 bytes)",
			hex:     "02 05 00 | 00000003 | deadbeef",
			header:  dta.Header{Opcode: dta.OpAppend, Seq: 5},
			reports: []dta.Report{{Opcode: dta.OpAppend, List: 3, Value: []byte{0xde, 0xad, 0xbe, 0xef}}},
		},
		{
			name:    "a compat Postcard is opcode, seq, flags, 4-byte key, hop, 4-byte data (12 bytes)",
			hex:     "04 09 00 | 0a000065 | 03 | 0000012c",
			header:  dta.Header{Opcode: dta.OpPostcard, Seq: 9},
			reports: []dta.Report{{Opcode: dta.OpPostcard, Key: []byte{0x0a, 0, 0, 0x65}, Hop: 3, Value: []byte{0, 0, 1, 0x2c}}},
		},
		{
			name:    "the flags byte carries immediate in bit 7 and retransmit in bit 6",
			hex:     "01 10 c0 | 02 | 00000001 | 00000002",
			header:  dta.Header{Opcode: dta.OpKeyWrite, Seq: 16, Flags: dta.FlagImmediate | dta.FlagRetransmit},
			reports: []dta.Report{{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 2}}},
		},
		{
			name:    "reserved flag bits of the 3-byte header are kept as sent",
			hex:     "02 00 7f | 00000000 | 00000001",
			header:  dta.Header{Opcode: dta.OpAppend, Flags: 0x7f},
			reports: []dta.Report{{Opcode: dta.OpAppend, List: 0, Value: []byte{0, 0, 0, 1}}},
		},

		// Compat formats with the legacy 2-byte base header {opcode, flags},
		// as Reporter/p4src/dta_reporter.p4 sends them.
		{
			name:    "a legacy Key-Write from the reporter is opcode, flags, N=2, key=srcIP, data=IPv4 ID (11 bytes)",
			legacy:  true,
			hex:     "01 00 | 02 | c0a80001 | 00003039",
			header:  dta.Header{Opcode: dta.OpKeyWrite},
			reports: []dta.Report{{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: []byte{192, 168, 0, 1}, Value: []byte{0, 0, 0x30, 0x39}}},
		},
		{
			name:         "a legacy Key-Write keeps the immediate bit and drops the reserved bits",
			legacy:       true,
			hex:          "01 ff | 02 | c0a80001 | 00003039",
			header:       dta.Header{Opcode: dta.OpKeyWrite, Flags: dta.FlagImmediate},
			reports:      []dta.Report{{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: []byte{192, 168, 0, 1}, Value: []byte{0, 0, 0x30, 0x39}}},
			notCanonical: true,
		},
		{
			name:    "a legacy Key-Increment is 15 bytes",
			legacy:  true,
			hex:     "03 00 | 03 | 00000001 | 0000000000000010",
			header:  dta.Header{Opcode: dta.OpKeyIncrement},
			reports: []dta.Report{{Opcode: dta.OpKeyIncrement, Redundancy: 3, Key: []byte{0, 0, 0, 1}, Delta: 16}},
		},
		{
			name:    "a legacy Append is 10 bytes",
			legacy:  true,
			hex:     "02 00 | 00000001 | 0000002a",
			header:  dta.Header{Opcode: dta.OpAppend},
			reports: []dta.Report{{Opcode: dta.OpAppend, List: 1, Value: []byte{0, 0, 0, 42}}},
		},
		{
			name:    "a legacy Postcard is 11 bytes",
			legacy:  true,
			hex:     "04 00 | 00000001 | 05 | 00000063",
			header:  dta.Header{Opcode: dta.OpPostcard},
			reports: []dta.Report{{Opcode: dta.OpPostcard, Key: []byte{0, 0, 0, 1}, Hop: 5, Value: []byte{0, 0, 0, 0x63}}},
		},

		// Extended formats.
		{
			name:   "an extended Key-Write carries store, N, key length, value length, an IPv4 5-tuple key and the value",
			hex:    "11 01 40 | 0001 | 02 | 0d | 0008 | " + fiveTupleV4 + " | 0102030405060708",
			header: dta.Header{Opcode: dta.OpKeyWriteExt, Seq: 1, Flags: dta.FlagRetransmit},
			reports: []dta.Report{{
				Opcode: dta.OpKeyWriteExt, Store: 1, Redundancy: 2,
				Key:   []byte{10, 0, 0, 1, 10, 0, 0, 2, 0x13, 0x88, 0, 0x50, 6},
				Value: []byte{1, 2, 3, 4, 5, 6, 7, 8},
			}},
		},
		{
			name:   "an extended Key-Write takes a 37-byte IPv6 5-tuple key",
			hex:    "11 00 00 | 0000 | 01 | 25 | 0001 | " + fiveTupleV6 + " | 99",
			header: dta.Header{Opcode: dta.OpKeyWriteExt},
			reports: []dta.Report{{
				Opcode: dta.OpKeyWriteExt, Redundancy: 1,
				Key: []byte{
					0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
					0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2,
					0, 53, 0x14, 0xe9, 17,
				},
				Value: []byte{0x99},
			}},
		},
		{
			name:   "an extended Key-Increment carries store, N, key length, the 64-bit delta, then the key",
			hex:    "13 02 00 | 0002 | 01 | 04 | 000000000000000a | deadbeef",
			header: dta.Header{Opcode: dta.OpKeyIncrementExt, Seq: 2},
			reports: []dta.Report{{
				Opcode: dta.OpKeyIncrementExt, Store: 2, Redundancy: 1,
				Key: []byte{0xde, 0xad, 0xbe, 0xef}, Delta: 10,
			}},
		},
		{
			name:    "an extended Append carries store, list id, value length and the entry",
			hex:     "12 03 00 | 0004 | 00000009 | 0003 | aabbcc",
			header:  dta.Header{Opcode: dta.OpAppendExt, Seq: 3},
			reports: []dta.Report{{Opcode: dta.OpAppendExt, Store: 4, List: 9, Value: []byte{0xaa, 0xbb, 0xcc}}},
		},
		{
			name:   "an extended Postcard carries store, hop, path length, key length, value length, key, value",
			hex:    "14 04 00 | 0003 | 02 | 05 | 04 | 02 | 00000001 | 1234",
			header: dta.Header{Opcode: dta.OpPostcardExt, Seq: 4},
			reports: []dta.Report{{
				Opcode: dta.OpPostcardExt, Store: 3, Hop: 2, PathLen: 5,
				Key: []byte{0, 0, 0, 1}, Value: []byte{0x12, 0x34},
			}},
		},
		{
			name:   "an extended Postcard with path length 0 means the path length is unknown",
			hex:    "14 00 00 | 0000 | 08 | 00 | 01 | 08 | 7f | 0102030405060708",
			header: dta.Header{Opcode: dta.OpPostcardExt},
			reports: []dta.Report{{
				Opcode: dta.OpPostcardExt, Hop: 8,
				Key: []byte{0x7f}, Value: []byte{1, 2, 3, 4, 5, 6, 7, 8},
			}},
		},

		// Batches.
		{
			name: "a batch carries a count and records of opcode, 16-bit length, sub-header",
			hex: "20 05 40 | 03 |" +
				" 01 0009 | 04 00000001 000000ff |" +
				" 12 000b | 0002 00000009 0003 aabbcc |" +
				" 14 000b | 0003 02 05 04 01 00000001 12",
			header: dta.Header{Opcode: dta.OpBatch, Seq: 5, Flags: dta.FlagRetransmit},
			reports: []dta.Report{
				{Opcode: dta.OpKeyWrite, Redundancy: 4, Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0xff}},
				{Opcode: dta.OpAppendExt, Store: 2, List: 9, Value: []byte{0xaa, 0xbb, 0xcc}},
				{Opcode: dta.OpPostcardExt, Store: 3, Hop: 2, PathLen: 5, Key: []byte{0, 0, 0, 1}, Value: []byte{0x12}},
			},
		},
		{
			name:   "a batch of a compat Key-Write and an extended Append (docs/PROTOCOL.md)",
			hex:    "20 05 40 | 02 | 01 0009 | 04 00000001 000000ff | 12 000b | 0004 00000009 0003 aabbcc",
			header: dta.Header{Opcode: dta.OpBatch, Seq: 5, Flags: dta.FlagRetransmit},
			reports: []dta.Report{
				{Opcode: dta.OpKeyWrite, Redundancy: 4, Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0xff}},
				{Opcode: dta.OpAppendExt, Store: 4, List: 9, Value: []byte{0xaa, 0xbb, 0xcc}},
			},
		},
		{
			name:   "a batch of one compat Key-Increment",
			hex:    "20 00 00 | 01 | 03 000d | 02 00000001 0000000000000001",
			header: dta.Header{Opcode: dta.OpBatch},
			reports: []dta.Report{
				{Opcode: dta.OpKeyIncrement, Redundancy: 2, Key: []byte{0, 0, 0, 1}, Delta: 1},
			},
		},
		{
			name:   "a batch can use the legacy header",
			legacy: true,
			hex:    "20 80 | 01 | 02 0008 | 00000001 00000002",
			header: dta.Header{Opcode: dta.OpBatch, Flags: dta.FlagImmediate},
			reports: []dta.Report{
				{Opcode: dta.OpAppend, List: 1, Value: []byte{0, 0, 0, 2}},
			},
		},
	}
}

func TestDecodeGolden(t *testing.T) {
	for _, g := range goldens() {
		t.Run(g.name, func(t *testing.T) {
			b := hx(t, g.hex)
			h, err, got := decodeAll(t, dta.Decoder{Legacy: g.legacy}, b)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if h != g.header {
				t.Errorf("header = %+v, want %+v", h, g.header)
			}
			if len(got) != len(g.reports) {
				t.Fatalf("got %d reports, want %d", len(got), len(g.reports))
			}
			for i, res := range got {
				if res.err != nil {
					t.Errorf("report %d: %v", i, res.err)
					continue
				}
				if d := reportDiff(res.r, g.reports[i]); d != "" {
					t.Errorf("report %d: %s", i, d)
				}
			}
		})
	}
}

// TestEncodeGolden checks that the encoder produces exactly the hand-written
// bytes (3-byte header: AppendDatagram or BatchWriter; legacy header:
// Header.AppendLegacyTo followed by Report.AppendTo or records).
func TestEncodeGolden(t *testing.T) {
	for _, g := range goldens() {
		t.Run(g.name, func(t *testing.T) {
			if g.notCanonical {
				t.Skip("reserved bits are not re-encoded")
			}
			want := hx(t, g.hex)
			var got []byte
			switch {
			case g.header.Opcode == dta.OpBatch && !g.legacy:
				var w dta.BatchWriter
				w.Reset(make([]byte, 0, 64), g.header)
				for i := range g.reports {
					if err := w.Add(&g.reports[i]); err != nil {
						t.Fatalf("Add: %v", err)
					}
				}
				got = w.Bytes()
			case g.header.Opcode == dta.OpBatch:
				t.Skip("no legacy batch writer")
			case g.legacy:
				var err error
				got, err = g.reports[0].AppendTo(g.header.AppendLegacyTo(nil))
				if err != nil {
					t.Fatal(err)
				}
			default:
				var err error
				got, err = dta.AppendDatagram(nil, g.header, &g.reports[0])
				if err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(got, want) {
				t.Errorf("encoded\n got %x\nwant %x", got, want)
			}
		})
	}
}

func TestCompatReportSizes(t *testing.T) {
	// spec/original-prototype.md §1.5: UDP payload sizes.
	tests := []struct {
		name           string
		r              dta.Report
		base, legacyLn int
	}{
		{"Key-Write is 12 bytes, 11 with the legacy header", dta.Report{Opcode: dta.OpKeyWrite, Redundancy: 1, Key: make([]byte, 4), Value: make([]byte, 4)}, 12, 11},
		{"Key-Increment is 16 bytes, 15 with the legacy header", dta.Report{Opcode: dta.OpKeyIncrement, Redundancy: 1, Key: make([]byte, 4)}, 16, 15},
		{"Append is 11 bytes, 10 with the legacy header", dta.Report{Opcode: dta.OpAppend, Value: make([]byte, 4)}, 11, 10},
		{"Postcard is 12 bytes, 11 with the legacy header", dta.Report{Opcode: dta.OpPostcard, Hop: 1, Key: make([]byte, 4), Value: make([]byte, 4)}, 12, 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := dta.AppendDatagram(nil, dta.Header{}, &tt.r)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) != tt.base {
				t.Errorf("3-byte header datagram is %d bytes, want %d", len(b), tt.base)
			}
			body, err := tt.r.AppendTo(nil)
			if err != nil {
				t.Fatal(err)
			}
			if n := dta.LegacyHeaderLen + len(body); n != tt.legacyLn {
				t.Errorf("legacy datagram is %d bytes, want %d", n, tt.legacyLn)
			}
			rs, err := dta.RecordSize(&tt.r)
			if err != nil || rs != 3+len(body) {
				t.Errorf("RecordSize = %d, %v; want %d", rs, err, 3+len(body))
			}
		})
	}
}

func TestAckGolden(t *testing.T) {
	tests := []struct {
		name string
		hex  string
		want dta.Ack
	}{
		{"an ACK is the accepted seq and a clear NACK bit", "2a 00", dta.Ack{Seq: 42}},
		{"a NACK is the last accepted seq and bit 7 of byte 1", "29 80", dta.Ack{Seq: 41, NACK: true}},
		{"reserved bits of an ACK are ignored", "00 7f", dta.Ack{Seq: 0}},
		{"reserved bits of a NACK are ignored", "ff ff", dta.Ack{Seq: 255, NACK: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a dta.Ack
			if err := a.Decode(hx(t, tt.hex)); err != nil {
				t.Fatal(err)
			}
			if a != tt.want {
				t.Errorf("decoded %+v, want %+v", a, tt.want)
			}
			enc := tt.want.AppendTo(nil)
			if len(enc) != dta.AckLen || enc[0] != tt.want.Seq || (enc[1] == 0x80) != tt.want.NACK || enc[1]&0x7f != 0 {
				t.Errorf("AppendTo = %x", enc)
			}
		})
	}
}

func TestDatagramBatchReportsBatch(t *testing.T) {
	for _, g := range goldens() {
		var dg dta.Datagram
		if err := (dta.Decoder{Legacy: g.legacy}).Decode(hx(t, g.hex), &dg); err != nil {
			t.Fatalf("%s: %v", g.name, err)
		}
		if want := g.header.Opcode == dta.OpBatch; dg.Batch() != want {
			t.Errorf("%s: Batch() = %v, want %v", g.name, dg.Batch(), want)
		}
	}
}
