package decode_test

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/dta-go/dta/internal/decode"
)

func TestParseHex(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // hex, or the error's text
		err  bool
	}{
		{"plain digits", "01010002", "01010002", false},
		{"a 0x prefix in capitals", "0X0A0b", "0a0b", false},
		{"spaces, tabs and colons are ignored", " 01 01:00\t02\r", "01010002", false},
		{"nothing but separators", " : ", "no hex digits", true},
		{"a letter that is not hex", "0g", "bad hex", true},
		{"an odd number of digits", "010", "bad hex", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := decode.ParseHex(tt.in)
			switch {
			case tt.err && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("ParseHex(%q): %x, %v; want error %q", tt.in, b, err, tt.want)
			case !tt.err && (err != nil || hex.EncodeToString(b) != tt.want):
				t.Errorf("ParseHex(%q): %x, %v; want %s", tt.in, b, err, tt.want)
			}
		})
	}
}

// FuzzParseHex: ParseHex never panics, and reads back what hex printed.
func FuzzParseHex(f *testing.F) {
	for _, s := range []string{"0x0101", "01 02:03", "", "zz", "0X"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := decode.ParseHex(s)
		if err != nil {
			return
		}
		again, err := decode.ParseHex("0x" + hex.EncodeToString(b))
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("%q: %x, then %x, %v", s, b, again, err)
		}
	})
}
