package dta_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/dta-go/dta/wire/dta"
)

// hx turns a hand-written hex string into bytes. Spaces and '|' only separate
// fields for the reader.
func hx(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "|", "", "\n", "", "\t", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex in test: %v", err)
	}
	return b
}

// result is what decoding one record produced.
type result struct {
	r    dta.Report
	err  error
	done bool // Done() right after this Next
}

// decodeAll decodes b and returns the header, the error of Decode, and every
// record Next produced before io.EOF. Reports are deep-copied so that they
// survive the datagram.
func decodeAll(t testing.TB, d dta.Decoder, b []byte) (dta.Header, error, []result) {
	t.Helper()
	var dg dta.Datagram
	err := d.Decode(b, &dg)
	var out []result
	for i := 0; ; i++ {
		if i > dta.MaxBatch+1 {
			t.Fatalf("Next did not stop after %d records", i)
		}
		var r dta.Report
		e := dg.Next(&r)
		if e == io.EOF {
			if !dg.Done() {
				t.Fatalf("Next returned io.EOF but Done() is false")
			}
			break
		}
		r.Key = bytes.Clone(r.Key)
		r.Value = bytes.Clone(r.Value)
		out = append(out, result{r, e, dg.Done()})
	}
	return dg.Header, err, out
}

// reportDiff describes how got differs from want, or returns "".
func reportDiff(got, want dta.Report) string {
	var d []string
	add := func(field string, g, w any) { d = append(d, fmt.Sprintf("%s = %v, want %v", field, g, w)) }
	if got.Opcode != want.Opcode {
		add("Opcode", got.Opcode, want.Opcode)
	}
	if got.Store != want.Store {
		add("Store", got.Store, want.Store)
	}
	if got.Redundancy != want.Redundancy {
		add("Redundancy", got.Redundancy, want.Redundancy)
	}
	if !bytes.Equal(got.Key, want.Key) {
		add("Key", fmt.Sprintf("%x", got.Key), fmt.Sprintf("%x", want.Key))
	}
	if !bytes.Equal(got.Value, want.Value) {
		add("Value", fmt.Sprintf("%x", got.Value), fmt.Sprintf("%x", want.Value))
	}
	if got.Delta != want.Delta {
		add("Delta", got.Delta, want.Delta)
	}
	if got.List != want.List {
		add("List", got.List, want.List)
	}
	if got.Hop != want.Hop {
		add("Hop", got.Hop, want.Hop)
	}
	if got.PathLen != want.PathLen {
		add("PathLen", got.PathLen, want.PathLen)
	}
	if got.Epoch != want.Epoch || got.Row != want.Row || got.Column != want.Column {
		add("Epoch, Row, Column", fmt.Sprint(got.Epoch, got.Row, got.Column), fmt.Sprint(want.Epoch, want.Row, want.Column))
	}
	return strings.Join(d, "; ")
}

// carried returns r with only the fields its opcode's format carries; the
// others are zeroed. It is what a decoder can give back after an encoder saw r.
func carried(r dta.Report) dta.Report {
	c := dta.Report{Opcode: r.Opcode}
	switch r.Opcode {
	case dta.OpKeyWrite, dta.OpKeyWriteExt:
		c.Redundancy, c.Key, c.Value = r.Redundancy, r.Key, r.Value
	case dta.OpKeyIncrement, dta.OpKeyIncrementExt:
		c.Redundancy, c.Key, c.Delta = r.Redundancy, r.Key, r.Delta
	case dta.OpAppend, dta.OpAppendExt:
		c.List, c.Value = r.List, r.Value
	case dta.OpPostcard, dta.OpPostcardExt:
		c.Key, c.Hop, c.Value, c.PathLen = r.Key, r.Hop, r.Value, r.PathLen
	case dta.OpSketchExt:
		c.Epoch, c.Row, c.Column, c.Value = r.Epoch, r.Row, r.Column, r.Value
	}
	if r.Opcode.Extended() {
		c.Store = r.Store
	}
	return c
}

// isAny reports whether err matches one of targets.
func isAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}
