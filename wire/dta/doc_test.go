package dta_test

import (
	"bytes"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/dta-go/dta/wire/dta"
)

// TestProtocolDocExamples decodes every `dta decode 0x…` example of the "DTA
// reports" part of docs/PROTOCOL.md: each must be one of the golden datagrams
// (whose fields TestDecodeGolden checks) and decode without any error.
func TestProtocolDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	part, _, ok := strings.Cut(string(doc), "<!-- memory layouts follow -->")
	if !ok {
		t.Fatal("docs/PROTOCOL.md: the end marker of the reports part is missing")
	}
	re := regexp.MustCompile("dta decode (--legacy )?0x([0-9a-f]+)")
	examples := re.FindAllStringSubmatch(part, -1)
	if len(examples) < 10 {
		t.Fatalf("found only %d examples", len(examples))
	}
	for _, m := range examples {
		t.Run(m[0], func(t *testing.T) {
			b, err := hex.DecodeString(m[2])
			if err != nil {
				t.Fatal(err)
			}
			golden := false
			for _, g := range goldens() {
				golden = golden || (bytes.Equal(hx(t, g.hex), b) && g.legacy == (m[1] != ""))
			}
			if !golden {
				t.Error("the example is not one of the golden datagrams, whose fields are checked")
			}
			_, err, got := decodeAll(t, dta.Decoder{Legacy: m[1] != ""}, b)
			if err != nil || len(got) == 0 {
				t.Fatalf("Decode: %v, %d reports", err, len(got))
			}
			for i, r := range got {
				if r.err != nil {
					t.Errorf("report %d: %v", i, r.err)
				}
			}
		})
	}
}

// TestBaseHeadersCannotBeToldApart is the example of docs/PROTOCOL.md: one
// datagram that decodes cleanly with either base header, to different fields.
func TestBaseHeadersCannotBeToldApart(t *testing.T) {
	val := bytes.Repeat([]byte{0x5a}, 255)
	b := append(hx(t, "11 05 00 | 0001 | 01 | 01 | 00ff | aa"), val...)
	if len(b) != 265 {
		t.Fatalf("example is %d bytes", len(b))
	}

	h, err, got := decodeAll(t, dta.Decoder{}, b)
	if err != nil || len(got) != 1 || got[0].err != nil {
		t.Fatalf("3-byte header: %v %+v", err, got)
	}
	want := dta.Report{Opcode: dta.OpKeyWriteExt, Store: 1, Redundancy: 1, Key: []byte{0xaa}, Value: val}
	if h.Seq != 5 || reportDiff(got[0].r, want) != "" {
		t.Errorf("3-byte header: seq %d, %s", h.Seq, reportDiff(got[0].r, want))
	}

	h, err, got = decodeAll(t, dta.Decoder{Legacy: true}, b)
	if err != nil || len(got) != 1 || got[0].err != nil {
		t.Fatalf("legacy header: %v %+v", err, got)
	}
	want = dta.Report{Opcode: dta.OpKeyWriteExt, Store: 0, Redundancy: 1, Key: []byte{0xff}, Value: append([]byte{0xaa}, val...)}
	if h.Flags != 0 || reportDiff(got[0].r, want) != "" {
		t.Errorf("legacy header: flags %#x, %s", h.Flags, reportDiff(got[0].r, want))
	}
}
