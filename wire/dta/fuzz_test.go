package dta_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/dta-go/dta/wire/dta"
)

var decodeErrors = []error{
	dta.ErrTruncated, dta.ErrUnknownOpcode, dta.ErrLength, dta.ErrTrailing,
	dta.ErrRedundancy, dta.ErrHop, dta.ErrKeyLen, dta.ErrValueLen, dta.ErrBatch,
}

// FuzzDecode: decoding never panics and returns only the sentinel errors;
// every decoded report re-encodes and decodes to the same fields; a datagram
// that decodes without any error is re-encoded byte for byte (except the
// legacy header's reserved bits).
func FuzzDecode(f *testing.F) {
	for _, g := range goldens() {
		f.Add(hx(f, g.hex), g.legacy)
	}
	for _, rj := range rejects() {
		f.Add(hx(f, rj.hex), rj.legacy)
	}
	var w dta.BatchWriter
	w.Reset(nil, dta.Header{Seq: 9, Flags: dta.FlagRetransmit})
	for _, rt := range roundTrips() {
		b, err := dta.AppendDatagram(nil, rt.header, &rt.r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
		f.Add(b, true)
		if err := w.Add(&rt.r); err != nil {
			f.Fatal(err)
		}
	}
	f.Add(w.Bytes(), false)

	f.Fuzz(func(t *testing.T, data []byte, legacy bool) {
		data = data[:len(data):len(data)]
		orig := bytes.Clone(data)
		var dg dta.Datagram
		err := dta.Decoder{Legacy: legacy}.Decode(data, &dg)
		if err != nil && !isAny(err, decodeErrors...) {
			t.Fatalf("Decode: unexpected error %v", err)
		}
		clean := err == nil
		var reports []dta.Report
		var rw dta.BatchWriter
		rw.Reset(nil, dg.Header)
		for i := 0; ; i++ {
			if i > dta.MaxBatch {
				t.Fatal("Next did not stop")
			}
			var r dta.Report
			e := dg.Next(&r)
			if e == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("Next after a failed Decode = %v, want io.EOF", e)
			}
			if e != nil {
				if !isAny(e, decodeErrors...) {
					t.Fatalf("record %d: unexpected error %v", i, e)
				}
				clean = false
				continue
			}
			reports = append(reports, r)
			if dg.Batch() {
				if aerr := rw.Add(&r); aerr != nil {
					t.Fatalf("record %d decoded but does not re-encode in a batch: %v", i, aerr)
				}
			}

			// Re-encode as a single datagram and decode again.
			b, aerr := dta.AppendDatagram(nil, dg.Header, &r)
			if aerr != nil {
				t.Fatalf("record %d decoded (%+v) but does not re-encode: %v", i, r, aerr)
			}
			h, derr, got := decodeAll(t, dta.Decoder{}, b)
			if derr != nil || len(got) != 1 || got[0].err != nil {
				t.Fatalf("re-encoded record %d (%x) does not decode: %v %+v", i, b, derr, got)
			}
			if want := (dta.Header{Opcode: r.Opcode, Seq: dg.Header.Seq, Flags: dg.Header.Flags}); h != want {
				t.Fatalf("re-encoded header %+v, want %+v", h, want)
			}
			if d := reportDiff(got[0].r, r); d != "" {
				t.Fatalf("record %d changed in a round trip: %s", i, d)
			}
		}
		if !bytes.Equal(data, orig) {
			t.Fatal("decoding changed the datagram")
		}
		if !clean {
			return
		}
		// Every byte was accepted: the encoders must reproduce the datagram.
		var re []byte
		switch {
		case dg.Batch() && !legacy:
			re = rw.Bytes()
		case dg.Batch():
			re = append(dg.Header.AppendLegacyTo(nil), rw.Bytes()[dta.HeaderLen:]...)
		case legacy:
			var e error
			if re, e = reports[0].AppendTo(dg.Header.AppendLegacyTo(nil)); e != nil {
				t.Fatal(e)
			}
		default:
			var e error
			if re, e = dta.AppendDatagram(nil, dg.Header, &reports[0]); e != nil {
				t.Fatal(e)
			}
		}
		want := bytes.Clone(data)
		if legacy {
			want[1] &= byte(dta.FlagImmediate) // reserved bits are not kept
		}
		if !bytes.Equal(re, want) {
			t.Fatalf("a clean datagram re-encodes differently:\n got %x\nwant %x", re, want)
		}
	})
}

// encodable is the specification of what AppendDatagram accepts, written
// from docs/PROTOCOL.md independently of the encoder.
func encodable(r *dta.Report) bool {
	nOK := r.Redundancy >= 1 && r.Redundancy <= dta.MaxRedundancy
	hopOK := r.Hop >= 1 && r.Hop <= dta.MaxHops && r.PathLen <= dta.MaxHops && (r.PathLen == 0 || r.Hop <= r.PathLen)
	keyOK := len(r.Key) >= 1 && len(r.Key) <= dta.MaxKeyLen
	valOK := len(r.Value) >= 1 && len(r.Value) <= dta.MaxValueLen
	switch r.Opcode {
	case dta.OpKeyWrite:
		return r.Store == 0 && nOK && len(r.Key) == 4 && len(r.Value) == 4
	case dta.OpKeyIncrement:
		return r.Store == 0 && nOK && len(r.Key) == 4
	case dta.OpAppend:
		return r.Store == 0 && len(r.Value) == 4
	case dta.OpPostcard:
		return r.Store == 0 && r.PathLen == 0 && hopOK && len(r.Key) == 4 && len(r.Value) == 4
	case dta.OpKeyWriteExt:
		return nOK && keyOK && valOK
	case dta.OpKeyIncrementExt:
		return nOK && keyOK
	case dta.OpAppendExt:
		return valOK
	case dta.OpPostcardExt:
		return hopOK && keyOK && len(r.Value) >= 1 && len(r.Value) <= dta.MaxHopValue
	case dta.OpSketchExt:
		// 1..MaxSketchRun whole 8-byte counters; no key.
		return len(r.Value) >= 8 && len(r.Value)%8 == 0 && len(r.Value) <= 8*dta.MaxSketchRun
	}
	return false
}

// FuzzRoundTrip: a Report built from fuzzed fields is encoded exactly when
// the specification allows it, and then decodes to the fields its format
// carries, as a single datagram, with the legacy header and in a batch.
func FuzzRoundTrip(f *testing.F) {
	for _, rt := range roundTrips() {
		r := rt.r
		f.Add(uint8(r.Opcode), rt.header.Seq, uint8(rt.header.Flags), r.Store, r.Redundancy, r.Key, r.Value, r.Delta, r.List, r.Hop, r.PathLen, r.Epoch, r.Row, r.Column)
	}
	for _, be := range badEncodes() {
		r := be.r
		f.Add(uint8(r.Opcode), uint8(0), uint8(0), r.Store, r.Redundancy, r.Key, r.Value, r.Delta, r.List, r.Hop, r.PathLen, r.Epoch, r.Row, r.Column)
	}
	f.Fuzz(func(t *testing.T, op, seq, flags uint8, store uint16, n uint8, key, value []byte, delta uint64, list uint32, hop, pathLen uint8, epoch uint32, row uint8, column uint32) {
		r := dta.Report{
			Opcode: dta.Opcode(op), Store: store, Redundancy: n, Key: key, Value: value,
			Delta: delta, List: list, Hop: hop, PathLen: pathLen, Epoch: epoch, Row: row, Column: column,
		}
		h := dta.Header{Opcode: dta.OpBatch, Seq: seq, Flags: dta.Flags(flags)}
		b, err := dta.AppendDatagram(nil, h, &r)
		_, serr := dta.RecordSize(&r)
		var w dta.BatchWriter
		w.Reset(nil, h)
		werr := w.Add(&r)
		if want := encodable(&r); (err == nil) != want || (serr == nil) != want || (werr == nil) != want {
			t.Fatalf("%+v: AppendDatagram %v, RecordSize %v, Add %v; specification says encodable=%v", r, err, serr, werr, want)
		}
		if err != nil {
			if !errors.Is(err, dta.ErrEncode) || len(b) != 0 {
				t.Fatalf("failed AppendDatagram returned %x, %v", b, err)
			}
			return
		}
		want := carried(r)

		gh, derr, got := decodeAll(t, dta.Decoder{}, b)
		if derr != nil || len(got) != 1 || got[0].err != nil {
			t.Fatalf("%x does not decode: %v %+v", b, derr, got)
		}
		if wantH := (dta.Header{Opcode: r.Opcode, Seq: seq, Flags: dta.Flags(flags)}); gh != wantH {
			t.Fatalf("header %+v, want %+v", gh, wantH)
		}
		if d := reportDiff(got[0].r, want); d != "" {
			t.Fatalf("single datagram: %s", d)
		}

		body, err := r.AppendTo(nil)
		if err != nil || !bytes.Equal(body, b[dta.HeaderLen:]) {
			t.Fatalf("AppendTo = %x, %v; want %x", body, err, b[dta.HeaderLen:])
		}
		lb := append(dta.Header{Opcode: r.Opcode, Flags: dta.Flags(flags)}.AppendLegacyTo(nil), body...)
		lh, derr, got := decodeAll(t, dta.Decoder{Legacy: true}, lb)
		if derr != nil || len(got) != 1 || got[0].err != nil {
			t.Fatalf("legacy %x does not decode: %v %+v", lb, derr, got)
		}
		if lh.Seq != 0 || lh.Flags != dta.Flags(flags)&dta.FlagImmediate {
			t.Fatalf("legacy header %+v", lh)
		}
		if d := reportDiff(got[0].r, want); d != "" {
			t.Fatalf("legacy datagram: %s", d)
		}

		if err := w.Add(&r); err != nil {
			t.Fatal(err)
		}
		_, derr, got = decodeAll(t, dta.Decoder{}, w.Bytes())
		if derr != nil || len(got) != 2 {
			t.Fatalf("batch %x does not decode: %v %+v", w.Bytes(), derr, got)
		}
		for i := range got {
			if got[i].err != nil {
				t.Fatalf("batch record %d: %v", i, got[i].err)
			}
			if d := reportDiff(got[i].r, want); d != "" {
				t.Fatalf("batch record %d: %s", i, d)
			}
		}
	})
}

// FuzzParseKey: ParseKey never panics; a parsed key is 1..MaxKeyLen bytes (4
// for a compat key) and its String() parses back to the same bytes and Compat
// flag, and prints the same again.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{
		"0", "1", "4294967295", "4294967296", "-1", "007", "",
		"0x", "0x01", "0XABcd", "0x" + strings.Repeat("ab", 64), "0x" + strings.Repeat("ab", 65),
		"0x0a0000010a000002138800500" + "6",
		"0x00000000000000000000ffff0a00000100000000000000000000ffff0a0000020001000206",
		"tcp,10.0.0.1:5000,10.0.0.2:80", "6,10.0.0.1:5000,10.0.0.2:80", "TCP,1.2.3.4:1,5.6.7.8:2",
		"udp,[2001:db8::1]:53,[2001:db8::2]:5353", "sctp,[::ffff:10.0.0.1]:5000,10.0.0.2:80",
		"udp,[fe80::1%eth0]:53,[fe80::2]:53", "tcp,10.0.0.1:1,[2001:db8::2]:80", "foo,1.2.3.4:1,5.6.7.8:2",
		"256,1.2.3.4:1,5.6.7.8:2", "icmpv6,[::1]:0,[::2]:0", ",,", "tcp,,",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := dta.ParseKey(s)
		if err != nil {
			return
		}
		if len(k.Bytes) < 1 || len(k.Bytes) > dta.MaxKeyLen || (k.Compat && len(k.Bytes) != 4) {
			t.Fatalf("ParseKey(%q) = %+v: bad length", s, k)
		}
		str := k.String()
		back, err := dta.ParseKey(str)
		if err != nil {
			t.Fatalf("ParseKey(%q).String() = %q does not parse: %v", s, str, err)
		}
		if back.Compat != k.Compat || !bytes.Equal(back.Bytes, k.Bytes) {
			t.Fatalf("ParseKey(%q) = %+v, String %q, parses back to %+v", s, k, str, back)
		}
		if s2 := back.String(); s2 != str {
			t.Fatalf("String() is not stable: %q then %q", str, s2)
		}
		if strings.Contains(s, ",") && !k.Compat && !strings.HasPrefix(strings.ToLower(s), "0x") {
			ft, err := dta.ParseFiveTuple(s)
			if err != nil || !bytes.Equal(ft.AppendTo(nil), k.Bytes) {
				t.Fatalf("ParseFiveTuple(%q) = %+v, %v; ParseKey gave %x", s, ft, err, k.Bytes)
			}
			dt, err := dta.DecodeFiveTuple(k.Bytes)
			if err != nil || dt != ft {
				t.Fatalf("DecodeFiveTuple(%x) = %+v, %v; want %+v", k.Bytes, dt, err, ft)
			}
		}
	})
}
