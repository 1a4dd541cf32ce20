package decode_test

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/decode"
	"github.com/dta-go/dta/wire/dta"
)

func TestDTADescribesEveryField(t *testing.T) {
	reps := testReports(t)
	m := decode.Meta{
		Index: 3, Time: time.Date(2023, 11, 14, 22, 13, 20, 0, time.FixedZone("CET", 3600)),
		Src: netip.MustParseAddrPort("10.0.0.1:1"), Dst: netip.MustParseAddrPort("10.0.0.2:40040"),
	}
	var dec decode.Decoder
	b := datagram(t, 1, reps...)
	d := dec.DTA(m, b)
	want := "#3 2023-11-14T21:13:20Z 10.0.0.1:1 > 10.0.0.2:40040 " + itoa(len(b)) + " bytes: batch [0x20] seq=1 flags=0x00\n" +
		"  report 1: keywrite key=1 value=0x0000002a (42) n=2 store=0 [compat 0x01] key_bytes=0x00000001\n" +
		"  report 2: keyincrement key=udp,[2001:db8::1]:53,[2001:db8::2]:5353 delta=8589934592 n=4 store=9 [extended 0x13] key_bytes=0x" + hex.EncodeToString(reps[1].Key) + "\n" +
		"  report 3: append list=7 value=0x" + hex.EncodeToString([]byte("eighteen-byte-evt!")) + " store=4 [extended 0x12]\n" +
		"  report 4: postcard key=0x0102 hop=2 path_len=5 value=0x00010002 (65538) store=3 [extended 0x14]\n"
	if got := d.Text(); got != want {
		t.Errorf("Text:\n%s\nwant\n%s", got, want)
	}
	if d.Failed() {
		t.Error("Failed")
	}
	checkReports(t, d.Reports, reps)
	j, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back decode.Datagram
	if err := json.Unmarshal(j, &back); err != nil {
		t.Fatal(err)
	}
	if back.Text() != want {
		t.Errorf("the JSON form reads back as\n%s", back.Text())
	}
	var fields map[string]any
	if err := json.Unmarshal(j, &fields); err != nil {
		t.Fatal(err)
	}
	r := fields["reports"].([]any)[1].(map[string]any)
	for _, f := range []string{"opcode", "format", "primitive", "store", "redundancy", "key", "key_text", "value", "delta", "list", "hop", "path_len"} {
		if _, ok := r[f]; !ok {
			t.Errorf("JSON report lacks %q: %v", f, r)
		}
	}
}

func TestDTADescribesEachDatagram(t *testing.T) {
	sketch := dta.Report{Opcode: dta.OpSketchExt, Store: 6, Epoch: 42, Row: 3, Column: 256}
	for i := range 20 {
		sketch.Value = binary.BigEndian.AppendUint64(sketch.Value, uint64(int64(i-2)))
	}
	tests := []struct {
		name   string
		legacy bool
		hex    string
		text   string
		failed bool
	}{
		{"a Key-Write with the immediate flag", false, "01 01 80 02 00000001 0000002a",
			"#1 12 bytes: keywrite [0x01] seq=1 flags=0x80 immediate\n  report 1: keywrite key=1 value=0x0000002a (42) n=2 store=0 [compat 0x01] key_bytes=0x00000001\n", false},
		{"a compat Key-Increment", false, "0x03070004000003e80000000000000005",
			"#1 16 bytes: keyincrement [0x03] seq=7 flags=0x00\n  report 1: keyincrement key=1000 delta=5 n=4 store=0 [compat 0x03] key_bytes=0x000003e8\n", false},
		{"an Append", false, "0x02050000000003deadbeef",
			"#1 11 bytes: append [0x02] seq=5 flags=0x00\n  report 1: append list=3 value=0xdeadbeef (3735928559) store=0 [compat 0x02]\n", false},
		{"a Sketch-Merge run shows 16 counters and how many more", false, hex.EncodeToString(mustDatagram(t, &sketch)),
			"#1 176 bytes: sketchmerge-ext [0x15] seq=3 flags=0x00\n  report 1: sketchmerge epoch=42 row=3 column=256 counters=[-2 -1 0 1 2 3 4 5 6 7 8 9 10 11 12 13 … 4 more] store=6 [extended 0x15]\n", false},
		{"the prototype's legacy header", true, "0180 02 00000001 0000002a",
			"#1 11 bytes: keywrite [0x01] flags=0x80 immediate (legacy header)\n  report 1: keywrite key=1 value=0x0000002a (42) n=2 store=0 [compat 0x01] key_bytes=0x00000001\n", false},
		{"an ACK", false, "0203", "#1 2 bytes: ACK seq=2\n", false},
		{"a NACK", false, "0580", "#1 2 bytes: NACK seq=5\n", false},
		{"2 bytes with the legacy header are a truncated report", true, "0101", "#1 2 bytes: keywrite [0x01] flags=0x00 (legacy header)\n  report 1: opcode 0x01: error: dta: truncated\n", true},
		{"a truncated report", false, "010100", "#1 3 bytes: keywrite [0x01] seq=1 flags=0x00\n  report 1: opcode 0x01: error: dta: truncated\n", true},
		{"an unknown opcode", false, "7f0100", "#1 3 bytes: unknown [0x7f] seq=1 flags=0x00: error: dta: unknown opcode\n", true},
		{"a 1-byte datagram has no header", false, "01", "#1 1 bytes: error: dta: truncated\n", true},
		{"a bad record in a batch", false, "200100020100090200000001000000020100",
			"#1 18 bytes: batch [0x20] seq=1 flags=0x00\n  report 1: keywrite key=1 value=0x00000002 (2) n=2 store=0 [compat 0x01] key_bytes=0x00000001\n  report 2: error: dta: truncated\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := decode.ParseHex(tt.hex)
			if err != nil {
				t.Fatal(err)
			}
			dec := decode.Decoder{Legacy: tt.legacy}
			d := dec.DTA(decode.Meta{Index: 1}, b)
			if got := d.Text(); got != tt.text || d.Failed() != tt.failed {
				t.Errorf("Text, Failed:\n%s%v\nwant\n%s%v", got, d.Failed(), tt.text, tt.failed)
			}
			if d.Reports == nil {
				t.Error("Reports is nil: JSON would print null")
			}
			j, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			var back decode.Datagram
			if err := json.Unmarshal(j, &back); err != nil {
				t.Fatal(err)
			}
			if back.Text() != tt.text {
				t.Errorf("the JSON form %s reads back as\n%s", j, back.Text())
			}
			if strings.Contains(tt.text, "sketchmerge epoch") != strings.Contains(string(j), `"sketch":{`) {
				t.Errorf("JSON %s: a sketch object only and always for a Sketch-Merge run", j)
			}
		})
	}
}

func TestDTAResultsDoNotAliasTheInput(t *testing.T) {
	b := datagram(t, 1, testReports(t)...)
	var dec decode.Decoder
	d := dec.DTA(decode.Meta{}, b)
	before := d.Text()
	for i := range b {
		b[i] = 0xff
	}
	if d.Text() != before {
		t.Errorf("the result changed with its input:\n%s", d.Text())
	}
}

func mustDatagram(t *testing.T, r *dta.Report) []byte {
	t.Helper()
	b, err := dta.AppendDatagram(nil, dta.Header{Opcode: r.Opcode, Seq: 3}, r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// FuzzDTA: no datagram makes decoding or describing it panic, in either
// header format, and its JSON form says the same as its text.
func FuzzDTA(f *testing.F) {
	reps := testReports(f)
	f.Add(datagram(f, 1, reps...))
	for i := range reps {
		f.Add(datagram(f, 2, reps[i]))
	}
	for _, s := range []string{"0203", "0180020000000100000002a", "200100020100090200000001000000020100", "7f0100"} {
		b, _ := hex.DecodeString(s)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, legacy := range []bool{false, true} {
			dec := decode.Decoder{Legacy: legacy}
			d := dec.DTA(decode.Meta{Index: 1}, b)
			text := d.Text()
			if !strings.HasPrefix(text, "#1 ") || d.Length != len(b) {
				t.Fatalf("Text %q", text)
			}
			j, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			var back decode.Datagram
			if err := json.Unmarshal(j, &back); err != nil {
				t.Fatal(err)
			}
			if back.Text() != text {
				t.Fatalf("from JSON:\n%s\nwant\n%s", back.Text(), text)
			}
			_ = dec.Ack(decode.Meta{}, b).Text()
		}
	})
}
