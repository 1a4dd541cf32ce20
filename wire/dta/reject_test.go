package dta_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/dta-go/dta/wire/dta"
)

func zeros(n int) string { return strings.Repeat("00", n) }

// Valid batch records used to surround malformed ones.
const (
	recAppend   = "02 0008 | 00000001 00000002"
	recKeyWrite = "01 0009 | 01 00000001 00000002"
)

type reject struct {
	name      string
	legacy    bool
	hex       string
	decodeErr error   // error from Decode, nil if the base header is accepted
	recs      []error // the result of each Next before io.EOF (nil = decoded)
	// broken: Done() is true right after the last record (the rest of the
	// datagram could not be framed). Single-report datagrams are always done.
	broken bool
}

func rejects() []reject {
	return []reject{
		// Base header.
		{name: "an empty datagram is truncated", hex: "", decodeErr: dta.ErrTruncated},
		{name: "a 1-byte datagram is truncated", hex: "01", decodeErr: dta.ErrTruncated},
		{name: "a 2-byte datagram is truncated for the 3-byte header", hex: "01 00", decodeErr: dta.ErrTruncated},
		{name: "a 1-byte datagram is truncated for the legacy header", legacy: true, hex: "01", decodeErr: dta.ErrTruncated},
		{name: "opcode 0 is unknown", hex: "00 00 00 | 01 00000001 00000002", decodeErr: dta.ErrUnknownOpcode},
		{name: "opcode 5 is unknown", hex: "05 00 00 | 01 00000001 00000002", decodeErr: dta.ErrUnknownOpcode},
		{name: "opcode 0x10 is unknown", hex: "10 00 00 | 01 00000001 00000002", decodeErr: dta.ErrUnknownOpcode},
		{name: "opcode 0x16 is unknown", hex: "16 00 00 | 01 00000001 00000002", decodeErr: dta.ErrUnknownOpcode},
		{name: "a sketch run of zero counters", hex: "15 00 00 | 0001 00000007 02 0000 00000010", recs: []error{dta.ErrValueLen}},
		{name: "a sketch run longer than 512 counters", hex: "15 00 00 | 0001 00000007 02 0201 00000010", recs: []error{dta.ErrValueLen}},
		{name: "a sketch run shorter than its count", hex: "15 00 00 | 0001 00000007 02 0002 00000010 0000000000000001", recs: []error{dta.ErrLength}},
		{name: "a sketch report cut in its header", hex: "15 00 00 | 0001 00000007 02 00", recs: []error{dta.ErrTruncated}},
		{name: "opcode 0x21 is unknown", hex: "21 00 00 | 01 00000001 00000002", decodeErr: dta.ErrUnknownOpcode},
		{name: "opcode 0xff is unknown", hex: "ff 00 00 | 01 00000001 00000002", decodeErr: dta.ErrUnknownOpcode},
		{name: "an unknown opcode is rejected with the legacy header too", legacy: true, hex: "09 00 | 01 00000001 00000002", decodeErr: dta.ErrUnknownOpcode},
		{name: "a batch without its count is truncated", hex: "20 00 00", decodeErr: dta.ErrTruncated},
		{name: "an empty batch is malformed", hex: "20 00 00 | 00", decodeErr: dta.ErrBatch},
		{name: "an empty batch followed by a record is still malformed", hex: "20 00 00 | 00 | " + recAppend, decodeErr: dta.ErrBatch},

		// The two base headers cannot be told apart, and the wrong choice fails.
		{name: "a 3-byte-header Key-Write read as legacy has a trailing byte", legacy: true, hex: "01 00 00 | 01 | 00000001 | 000000ff", recs: []error{dta.ErrTrailing}},
		{name: "a legacy Key-Write read with the 3-byte header is truncated", hex: "01 00 | 02 | c0a80001 | 00003039", recs: []error{dta.ErrTruncated}},

		// Compat sub-headers.
		{name: "a compat Key-Write with N=0 is rejected", hex: "01 00 00 | 00 | 00000001 | 00000002", recs: []error{dta.ErrRedundancy}},
		{name: "a compat Key-Write with N=MaxRedundancy+1 is rejected", hex: "01 00 00 | 09 | 00000001 | 00000002", recs: []error{dta.ErrRedundancy}},
		{name: "a compat Key-Write with N=255 is rejected", hex: "01 00 00 | ff | 00000001 | 00000002", recs: []error{dta.ErrRedundancy}},
		{name: "a legacy Key-Write with N=0 is rejected", legacy: true, hex: "01 00 | 00 | 00000001 | 00000002", recs: []error{dta.ErrRedundancy}},
		{name: "a compat Key-Increment with N=0 is rejected", hex: "03 00 00 | 00 | 00000001 | 0000000000000001", recs: []error{dta.ErrRedundancy}},
		{name: "a compat Key-Increment with N=MaxRedundancy+1 is rejected", hex: "03 00 00 | 09 | 00000001 | 0000000000000001", recs: []error{dta.ErrRedundancy}},
		{name: "a compat Postcard at hop 0 is rejected", hex: "04 00 00 | 00000001 | 00 | 00000002", recs: []error{dta.ErrHop}},
		{name: "a compat Postcard at hop MaxHops+1 is rejected", hex: "04 00 00 | 00000001 | 09 | 00000002", recs: []error{dta.ErrHop}},
		{name: "a compat Key-Write with a trailing byte is rejected", hex: "01 00 00 | 01 | 00000001 | 00000002 | 00", recs: []error{dta.ErrTrailing}},
		{name: "a compat Key-Increment with a trailing byte is rejected", hex: "03 00 00 | 01 | 00000001 | 0000000000000001 | 00", recs: []error{dta.ErrTrailing}},
		{name: "a compat Append with a trailing byte is rejected", hex: "02 00 00 | 00000001 | 00000002 | 00", recs: []error{dta.ErrTrailing}},
		{name: "a compat Postcard with a trailing byte is rejected", hex: "04 00 00 | 00000001 | 01 | 00000002 | 00", recs: []error{dta.ErrTrailing}},
		{name: "a legacy Append with a trailing byte is rejected", legacy: true, hex: "02 00 | 00000001 | 00000002 | 00", recs: []error{dta.ErrTrailing}},

		// Extended Key-Write.
		{name: "an extended Key-Write with key length 0 is rejected", hex: "11 00 00 | 0000 | 01 | 00 | 0002 | abcd", recs: []error{dta.ErrKeyLen}},
		{name: "an extended Key-Write with key length MaxKeyLen+1 is rejected", hex: "11 00 00 | 0000 | 01 | 41 | 0002 | " + zeros(65) + " | abcd", recs: []error{dta.ErrKeyLen}},
		{name: "an extended Key-Write with value length 0 is rejected", hex: "11 00 00 | 0000 | 01 | 04 | 0000 | 00000001", recs: []error{dta.ErrValueLen}},
		{name: "an extended Key-Write with value length MaxValueLen+1 is rejected", hex: "11 00 00 | 0000 | 01 | 04 | 0401 | 00000001 | " + zeros(1025), recs: []error{dta.ErrValueLen}},
		{name: "an extended Key-Write with value length 0xffff is rejected", hex: "11 00 00 | 0000 | 01 | 04 | ffff | 00000001 | abcd", recs: []error{dta.ErrValueLen}},
		{name: "an extended Key-Write whose key length overstates is rejected", hex: "11 00 00 | 0000 | 01 | 05 | 0002 | 00000001 | abcd", recs: []error{dta.ErrLength}},
		{name: "an extended Key-Write whose value length overstates is rejected", hex: "11 00 00 | 0000 | 01 | 04 | 0003 | 00000001 | abcd", recs: []error{dta.ErrLength}},
		{name: "an extended Key-Write whose value length understates leaves trailing bytes", hex: "11 00 00 | 0000 | 01 | 04 | 0001 | 00000001 | abcd", recs: []error{dta.ErrTrailing}},
		{name: "an extended Key-Write with N=0 is rejected", hex: "11 00 00 | 0000 | 00 | 04 | 0002 | 00000001 | abcd", recs: []error{dta.ErrRedundancy}},
		{name: "an extended Key-Write with N=MaxRedundancy+1 is rejected", hex: "11 00 00 | 0000 | 09 | 04 | 0002 | 00000001 | abcd", recs: []error{dta.ErrRedundancy}},

		// Extended Key-Increment.
		{name: "an extended Key-Increment with key length 0 is rejected", hex: "13 00 00 | 0000 | 01 | 00 | 0000000000000001", recs: []error{dta.ErrKeyLen}},
		{name: "an extended Key-Increment with key length MaxKeyLen+1 is rejected", hex: "13 00 00 | 0000 | 01 | 41 | 0000000000000001 | " + zeros(65), recs: []error{dta.ErrKeyLen}},
		{name: "an extended Key-Increment whose key length overstates is rejected", hex: "13 00 00 | 0000 | 01 | 05 | 0000000000000001 | 00000001", recs: []error{dta.ErrLength}},
		{name: "an extended Key-Increment whose key length understates leaves trailing bytes", hex: "13 00 00 | 0000 | 01 | 03 | 0000000000000001 | 00000001", recs: []error{dta.ErrTrailing}},
		{name: "an extended Key-Increment with N=0 is rejected", hex: "13 00 00 | 0000 | 00 | 04 | 0000000000000001 | 00000001", recs: []error{dta.ErrRedundancy}},
		{name: "an extended Key-Increment with N=MaxRedundancy+1 is rejected", hex: "13 00 00 | 0000 | 09 | 04 | 0000000000000001 | 00000001", recs: []error{dta.ErrRedundancy}},

		// Extended Append.
		{name: "an extended Append with value length 0 is rejected", hex: "12 00 00 | 0000 | 00000001 | 0000", recs: []error{dta.ErrValueLen}},
		{name: "an extended Append with value length MaxValueLen+1 is rejected", hex: "12 00 00 | 0000 | 00000001 | 0401 | " + zeros(1025), recs: []error{dta.ErrValueLen}},
		{name: "an extended Append whose value length overstates is rejected", hex: "12 00 00 | 0000 | 00000001 | 0003 | abcd", recs: []error{dta.ErrLength}},
		{name: "an extended Append whose value length understates leaves trailing bytes", hex: "12 00 00 | 0000 | 00000001 | 0001 | abcd", recs: []error{dta.ErrTrailing}},

		// Extended Postcard.
		{name: "an extended Postcard at hop 0 is rejected", hex: "14 00 00 | 0000 | 00 | 05 | 04 | 02 | 00000001 | abcd", recs: []error{dta.ErrHop}},
		{name: "an extended Postcard at hop MaxHops+1 is rejected", hex: "14 00 00 | 0000 | 09 | 00 | 04 | 02 | 00000001 | abcd", recs: []error{dta.ErrHop}},
		{name: "an extended Postcard at a hop beyond its path length is rejected", hex: "14 00 00 | 0000 | 04 | 03 | 04 | 02 | 00000001 | abcd", recs: []error{dta.ErrHop}},
		{name: "an extended Postcard with path length MaxHops+1 is rejected", hex: "14 00 00 | 0000 | 01 | 09 | 04 | 02 | 00000001 | abcd", recs: []error{dta.ErrHop}},
		{name: "an extended Postcard with key length 0 is rejected", hex: "14 00 00 | 0000 | 01 | 05 | 00 | 02 | abcd", recs: []error{dta.ErrKeyLen}},
		{name: "an extended Postcard with key length MaxKeyLen+1 is rejected", hex: "14 00 00 | 0000 | 01 | 05 | 41 | 02 | " + zeros(65) + " | abcd", recs: []error{dta.ErrKeyLen}},
		{name: "an extended Postcard with hop value length 0 is rejected", hex: "14 00 00 | 0000 | 01 | 05 | 04 | 00 | 00000001", recs: []error{dta.ErrValueLen}},
		{name: "an extended Postcard with hop value length MaxHopValue+1 is rejected", hex: "14 00 00 | 0000 | 01 | 05 | 04 | 09 | 00000001 | " + zeros(9), recs: []error{dta.ErrValueLen}},
		{name: "an extended Postcard whose key length overstates is rejected", hex: "14 00 00 | 0000 | 01 | 05 | 05 | 02 | 00000001 | abcd", recs: []error{dta.ErrLength}},
		{name: "an extended Postcard whose value length understates leaves trailing bytes", hex: "14 00 00 | 0000 | 01 | 05 | 04 | 01 | 00000001 | abcd", recs: []error{dta.ErrTrailing}},

		// Batches: records that are malformed but framed do not stop iteration.
		{name: "a nested batch record is rejected and the next record still decodes", hex: "20 00 00 | 02 | 20 0001 | 00 | " + recAppend, recs: []error{dta.ErrBatch, nil}},
		{name: "a nested batch holding a valid batch is rejected too", hex: "20 00 00 | 02 | 20 000c | 01 | " + recAppend + " | " + recAppend, recs: []error{dta.ErrBatch, nil}},
		{name: "a middle record with N=0 is rejected and the records around it decode", hex: "20 00 00 | 03 | " + recAppend + " | 01 0009 | 00 00000001 00000002 | " + recKeyWrite, recs: []error{nil, dta.ErrRedundancy, nil}},
		{name: "a middle record with an unknown opcode is rejected and the records around it decode", hex: "20 00 00 | 03 | " + recAppend + " | 05 0002 | abcd | " + recKeyWrite, recs: []error{nil, dta.ErrUnknownOpcode, nil}},
		{name: "a middle record framed too short is truncated and the next record decodes", hex: "20 00 00 | 03 | " + recAppend + " | 01 0008 | 01 00000001 000000 | " + recKeyWrite, recs: []error{nil, dta.ErrTruncated, nil}},
		{name: "a middle record framed too long has trailing bytes and the next record decodes", hex: "20 00 00 | 03 | " + recAppend + " | 02 0009 | 00000001 00000002 00 | " + recKeyWrite, recs: []error{nil, dta.ErrTrailing, nil}},
		{name: "a middle record of length 0 is truncated and the next record decodes", hex: "20 00 00 | 03 | " + recAppend + " | 01 0000 | " + recKeyWrite, recs: []error{nil, dta.ErrTruncated, nil}},
		{name: "a middle extended record with a lying key length is rejected and the next record decodes", hex: "20 00 00 | 03 | " + recAppend + " | 11 000b | 0000 01 05 0001 00000001 ab | " + recKeyWrite, recs: []error{nil, dta.ErrLength, nil}},
		{name: "a legacy batch with a malformed middle record still decodes the last", legacy: true, hex: "20 00 | 03 | " + recAppend + " | 04 0009 | 00000001 00 00000002 | " + recKeyWrite, recs: []error{nil, dta.ErrHop, nil}},

		// Batches: broken framing stops iteration.
		{name: "a record length beyond the datagram stops iteration", hex: "20 00 00 | 03 | " + recAppend + " | 01 00ff | 01 00000001 00000002 | " + recKeyWrite, recs: []error{nil, dta.ErrLength}, broken: true},
		{name: "a record length one beyond the datagram stops iteration", hex: "20 00 00 | 02 | " + recAppend + " | 01 000a | 01 00000001 00000002", recs: []error{nil, dta.ErrLength}, broken: true},
		{name: "a record header cut short stops iteration", hex: "20 00 00 | 02 | " + recAppend + " | 01 00", recs: []error{nil, dta.ErrTruncated}, broken: true},
		{name: "a count larger than the records stops iteration as truncated", hex: "20 00 00 | 03 | " + recAppend + " | " + recKeyWrite, recs: []error{nil, nil, dta.ErrTruncated}, broken: true},
		{name: "a count smaller than the records leaves trailing bytes", hex: "20 00 00 | 01 | " + recAppend + " | " + recKeyWrite, recs: []error{nil, dta.ErrTrailing}, broken: true},
		{name: "a byte after the last record is trailing", hex: "20 00 00 | 01 | " + recAppend + " | ff", recs: []error{nil, dta.ErrTrailing}, broken: true},
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, tt := range rejects() {
		t.Run(tt.name, func(t *testing.T) {
			b := hx(t, tt.hex)
			_, err, got := decodeAll(t, dta.Decoder{Legacy: tt.legacy}, b)
			if !errors.Is(err, tt.decodeErr) || (err == nil) != (tt.decodeErr == nil) {
				t.Fatalf("Decode error = %v, want %v", err, tt.decodeErr)
			}
			if len(got) != len(tt.recs) {
				t.Fatalf("Next gave %d results %+v, want %d", len(got), got, len(tt.recs))
			}
			batch := len(b) > 0 && b[0] == byte(dta.OpBatch)
			for i, res := range got {
				if !errors.Is(res.err, tt.recs[i]) || (res.err == nil) != (tt.recs[i] == nil) {
					t.Errorf("record %d: error %v, want %v", i, res.err, tt.recs[i])
				}
				wantDone := !batch || (i == len(got)-1 && tt.broken)
				if res.done != wantDone {
					t.Errorf("record %d: Done() = %v, want %v", i, res.done, wantDone)
				}
			}
		})
	}
}

// TestDecodeRejectsEveryTruncation cuts every golden datagram at every length:
// no prefix decodes completely, every error says truncated or length, and the
// reports decoded before the cut are the golden's.
func TestDecodeRejectsEveryTruncation(t *testing.T) {
	for _, g := range goldens() {
		t.Run(g.name, func(t *testing.T) {
			full := hx(t, g.hex)
			for n := range len(full) {
				// Capacity n: a decoder that slices past the cut panics.
				b := full[:n:n]
				_, err, got := decodeAll(t, dta.Decoder{Legacy: g.legacy}, b)
				failed := err != nil
				if err != nil && !isAny(err, dta.ErrTruncated) {
					t.Errorf("cut at %d: Decode error %v, want ErrTruncated", n, err)
				}
				for i, res := range got {
					if res.err == nil {
						if i >= len(g.reports) {
							t.Errorf("cut at %d: extra report %d", n, i)
						} else if d := reportDiff(res.r, g.reports[i]); d != "" {
							t.Errorf("cut at %d: report %d: %s", n, i, d)
						}
						continue
					}
					failed = true
					if !isAny(res.err, dta.ErrTruncated, dta.ErrLength) {
						t.Errorf("cut at %d: record %d error %v, want ErrTruncated or ErrLength", n, i, res.err)
					}
				}
				if !failed {
					t.Errorf("cut at %d of %d: decoded without error", n, len(full))
				}
			}
		})
	}
}

func TestAckRejects(t *testing.T) {
	tests := []struct {
		name string
		hex  string
		want error
	}{
		{"an empty ACK is truncated", "", dta.ErrTruncated},
		{"a 1-byte ACK is truncated", "01", dta.ErrTruncated},
		{"a 3-byte ACK has a trailing byte", "01 80 00", dta.ErrTrailing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a dta.Ack
			if err := a.Decode(hx(t, tt.hex)); !errors.Is(err, tt.want) {
				t.Errorf("Decode = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestNextAfterDoneKeepsReturningEOF(t *testing.T) {
	for _, tt := range []struct{ name, hex string }{
		{"after a single report", "02 00 00 | 00000001 | 00000002"},
		{"after a rejected header", "09 00 00"},
		{"after broken batch framing", "20 00 00 | 02 | 01 00ff"},
		{"after a complete batch", "20 00 00 | 01 | " + recAppend},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var dg dta.Datagram
			_ = dta.Decoder{}.Decode(hx(t, tt.hex), &dg)
			var r dta.Report
			for dg.Next(&r) != io.EOF {
			}
			for range 3 {
				if err := dg.Next(&r); err != io.EOF || !dg.Done() {
					t.Fatalf("Next = %v, Done %v; want io.EOF, true", err, dg.Done())
				}
			}
		})
	}
	var zero dta.Datagram
	var r dta.Report
	if err := zero.Next(&r); err != io.EOF {
		t.Errorf("zero Datagram: Next = %v, want io.EOF", err)
	}
}

// TestDecodeResetsDatagram checks that a reused Datagram forgets the previous
// datagram, including after a failed Decode.
func TestDecodeResetsDatagram(t *testing.T) {
	var dg dta.Datagram
	var r dta.Report
	d := dta.Decoder{}
	if err := d.Decode(hx(t, "20 00 00 | 02 | "+recAppend+" | "+recAppend), &dg); err != nil {
		t.Fatal(err)
	}
	if err := dg.Next(&r); err != nil {
		t.Fatal(err)
	}
	if err := d.Decode(hx(t, "ff 00 00"), &dg); !errors.Is(err, dta.ErrUnknownOpcode) {
		t.Fatalf("Decode = %v", err)
	}
	if err := dg.Next(&r); err != io.EOF {
		t.Fatalf("Next after a failed Decode = %v, want io.EOF", err)
	}
	if err := d.Decode(hx(t, "04 07 00 | 00000001 | 02 | 00000003"), &dg); err != nil {
		t.Fatal(err)
	}
	if err := dg.Next(&r); err != nil || r.Hop != 2 || dg.Batch() {
		t.Fatalf("Next = %v, %+v, batch %v", err, r, dg.Batch())
	}
	// Fields of the previous report must not leak into the next one.
	if r.List != 0 || r.Redundancy != 0 || r.Delta != 0 || r.Store != 0 {
		t.Errorf("stale fields in %+v", r)
	}
}

type badEncode struct {
	name string
	r    dta.Report
	want error // a sentinel wrapped besides ErrEncode, or nil
}

func badEncodes() []badEncode {
	k4, v4 := []byte{0, 0, 0, 1}, []byte{0, 0, 0, 2}
	return []badEncode{
		{"a compat Key-Write with a 3-byte key cannot be encoded", dta.Report{Opcode: dta.OpKeyWrite, Redundancy: 1, Key: k4[:3], Value: v4}, nil},
		{"a compat Key-Write with a 5-byte value cannot be encoded", dta.Report{Opcode: dta.OpKeyWrite, Redundancy: 1, Key: k4, Value: []byte{1, 2, 3, 4, 5}}, nil},
		{"a compat Key-Write with N=0 cannot be encoded", dta.Report{Opcode: dta.OpKeyWrite, Key: k4, Value: v4}, dta.ErrRedundancy},
		{"a compat Key-Write with N=MaxRedundancy+1 cannot be encoded", dta.Report{Opcode: dta.OpKeyWrite, Redundancy: dta.MaxRedundancy + 1, Key: k4, Value: v4}, dta.ErrRedundancy},
		{"a compat Key-Write with a store id cannot be encoded", dta.Report{Opcode: dta.OpKeyWrite, Store: 1, Redundancy: 1, Key: k4, Value: v4}, nil},
		{"a compat Key-Increment with a 5-byte key cannot be encoded", dta.Report{Opcode: dta.OpKeyIncrement, Redundancy: 1, Key: []byte{1, 2, 3, 4, 5}}, nil},
		{"a compat Key-Increment with N=0 cannot be encoded", dta.Report{Opcode: dta.OpKeyIncrement, Key: k4}, dta.ErrRedundancy},
		{"a compat Key-Increment with a store id cannot be encoded", dta.Report{Opcode: dta.OpKeyIncrement, Store: 2, Redundancy: 1, Key: k4}, nil},
		{"a compat Append with a 3-byte entry cannot be encoded", dta.Report{Opcode: dta.OpAppend, Value: v4[:3]}, nil},
		{"a compat Append with a store id cannot be encoded", dta.Report{Opcode: dta.OpAppend, Store: 3, Value: v4}, nil},
		{"a compat Postcard with a 3-byte value cannot be encoded", dta.Report{Opcode: dta.OpPostcard, Hop: 1, Key: k4, Value: v4[:3]}, nil},
		{"a compat Postcard at hop 0 cannot be encoded", dta.Report{Opcode: dta.OpPostcard, Key: k4, Value: v4}, dta.ErrHop},
		{"a compat Postcard at hop MaxHops+1 cannot be encoded", dta.Report{Opcode: dta.OpPostcard, Hop: dta.MaxHops + 1, Key: k4, Value: v4}, dta.ErrHop},
		{"a compat Postcard with a path length cannot be encoded", dta.Report{Opcode: dta.OpPostcard, Hop: 1, PathLen: 5, Key: k4, Value: v4}, nil},
		{"an extended Key-Write without a key cannot be encoded", dta.Report{Opcode: dta.OpKeyWriteExt, Redundancy: 1, Value: v4}, nil},
		{"an extended Key-Write with a MaxKeyLen+1 key cannot be encoded", dta.Report{Opcode: dta.OpKeyWriteExt, Redundancy: 1, Key: make([]byte, dta.MaxKeyLen+1), Value: v4}, nil},
		{"an extended Key-Write without a value cannot be encoded", dta.Report{Opcode: dta.OpKeyWriteExt, Redundancy: 1, Key: k4}, nil},
		{"an extended Key-Write with a MaxValueLen+1 value cannot be encoded", dta.Report{Opcode: dta.OpKeyWriteExt, Redundancy: 1, Key: k4, Value: make([]byte, dta.MaxValueLen+1)}, nil},
		{"an extended Key-Write with N=0 cannot be encoded", dta.Report{Opcode: dta.OpKeyWriteExt, Key: k4, Value: v4}, dta.ErrRedundancy},
		{"an extended Key-Increment without a key cannot be encoded", dta.Report{Opcode: dta.OpKeyIncrementExt, Redundancy: 1}, nil},
		{"an extended Key-Increment with a MaxKeyLen+1 key cannot be encoded", dta.Report{Opcode: dta.OpKeyIncrementExt, Redundancy: 1, Key: make([]byte, dta.MaxKeyLen+1)}, nil},
		{"an extended Key-Increment with N=MaxRedundancy+1 cannot be encoded", dta.Report{Opcode: dta.OpKeyIncrementExt, Redundancy: dta.MaxRedundancy + 1, Key: k4}, dta.ErrRedundancy},
		{"an extended Append without a value cannot be encoded", dta.Report{Opcode: dta.OpAppendExt}, nil},
		{"an extended Append with a MaxValueLen+1 value cannot be encoded", dta.Report{Opcode: dta.OpAppendExt, Value: make([]byte, dta.MaxValueLen+1)}, nil},
		{"an extended Postcard with a MaxHopValue+1 value cannot be encoded", dta.Report{Opcode: dta.OpPostcardExt, Hop: 1, Key: k4, Value: make([]byte, dta.MaxHopValue+1)}, nil},
		{"an extended Postcard without a key cannot be encoded", dta.Report{Opcode: dta.OpPostcardExt, Hop: 1, Value: v4}, nil},
		{"an extended Postcard at hop 0 cannot be encoded", dta.Report{Opcode: dta.OpPostcardExt, Key: k4, Value: v4}, dta.ErrHop},
		{"an extended Postcard at a hop beyond its path length cannot be encoded", dta.Report{Opcode: dta.OpPostcardExt, Hop: 4, PathLen: 3, Key: k4, Value: v4}, dta.ErrHop},
		{"an extended Postcard with path length MaxHops+1 cannot be encoded", dta.Report{Opcode: dta.OpPostcardExt, Hop: 1, PathLen: dta.MaxHops + 1, Key: k4, Value: v4}, dta.ErrHop},
		{"a Sketch-Merge run without counters cannot be encoded", dta.Report{Opcode: dta.OpSketchExt, Row: 1}, nil},
		{"a Sketch-Merge run with part of a counter cannot be encoded", dta.Report{Opcode: dta.OpSketchExt, Value: make([]byte, 12)}, nil},
		{"a Sketch-Merge run of MaxSketchRun+1 counters cannot be encoded", dta.Report{Opcode: dta.OpSketchExt, Value: make([]byte, 8*(dta.MaxSketchRun+1))}, nil},
		{"opcode 0 cannot be encoded", dta.Report{Key: k4, Value: v4}, nil},
		{"a batch cannot be encoded as a report", dta.Report{Opcode: dta.OpBatch}, nil},
		{"an unknown opcode cannot be encoded", dta.Report{Opcode: 0x05, Redundancy: 1, Key: k4, Value: v4}, nil},
	}
}

func TestEncodeRejects(t *testing.T) {
	for _, tt := range badEncodes() {
		t.Run(tt.name, func(t *testing.T) {
			check := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, dta.ErrEncode) {
					t.Errorf("%s: error %v does not wrap ErrEncode", what, err)
				}
				if tt.want != nil && !errors.Is(err, tt.want) {
					t.Errorf("%s: error %v does not wrap %v", what, err, tt.want)
				}
			}
			prefix := []byte{0xaa, 0xbb}
			b, err := dta.AppendDatagram(prefix, dta.Header{}, &tt.r)
			check("AppendDatagram", err)
			if !bytes.Equal(b, prefix) {
				t.Errorf("AppendDatagram changed the buffer to %x", b)
			}
			b, err = tt.r.AppendTo(prefix)
			check("AppendTo", err)
			if !bytes.Equal(b, prefix) {
				t.Errorf("AppendTo changed the buffer to %x", b)
			}
			_, err = dta.RecordSize(&tt.r)
			check("RecordSize", err)

			var w dta.BatchWriter
			w.Reset(nil, dta.Header{})
			ok := dta.Report{Opcode: dta.OpAppend, Value: []byte{1, 2, 3, 4}}
			if err := w.Add(&ok); err != nil {
				t.Fatal(err)
			}
			before := bytes.Clone(w.Bytes())
			check("BatchWriter.Add", w.Add(&tt.r))
			if w.Len() != 1 || !bytes.Equal(w.Bytes(), before) {
				t.Errorf("a failed Add changed the batch: Len %d, bytes %x", w.Len(), w.Bytes())
			}
		})
	}
}
