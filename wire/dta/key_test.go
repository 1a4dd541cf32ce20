package dta_test

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/dta-go/dta/wire/dta"
)

func TestParseKey(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		compat bool
		hex    string // the key bytes
		str    string // String() of the parsed key
	}{
		{"decimal 0 is a compat key", "0", true, "00000000", "0"},
		{"decimal 1 is a compat key in big-endian wire order", "1", true, "00000001", "1"},
		{"the largest 32-bit decimal is a compat key", "4294967295", true, "ffffffff", "4294967295"},
		{"an IPv4 address as a number is a compat key", "167772261", true, "0a000065", "167772261"},
		{"leading zeros of a decimal key are dropped by String", "007", true, "00000007", "7"},
		{"0x gives raw bytes", "0x01", false, "01", "0x01"},
		{"0X and upper-case hex digits are accepted", "0XABcd", false, "abcd", "0xabcd"},
		{"a 4-byte hex key is not a compat key", "0x00000001", false, "00000001", "0x00000001"},
		{"a MaxKeyLen hex key is accepted", "0x" + strings.Repeat("5a", dta.MaxKeyLen), false, strings.Repeat("5a", dta.MaxKeyLen), "0x" + strings.Repeat("5a", dta.MaxKeyLen)},
		{"an IPv4 5-tuple is src, dst, sport, dport, proto", "tcp,10.0.0.1:5000,10.0.0.2:80", false, fiveTupleV4, "tcp,10.0.0.1:5000,10.0.0.2:80"},
		{"a protocol number is accepted and named by String", "6,10.0.0.1:5000,10.0.0.2:80", false, fiveTupleV4, "tcp,10.0.0.1:5000,10.0.0.2:80"},
		{"protocol names are case-insensitive", "TCP,10.0.0.1:5000,10.0.0.2:80", false, fiveTupleV4, "tcp,10.0.0.1:5000,10.0.0.2:80"},
		{"an unnamed protocol stays a number", "200,1.2.3.4:0,5.6.7.8:65535", false, "01020304 05060708 0000 ffff c8", "200,1.2.3.4:0,5.6.7.8:65535"},
		{"an IPv6 5-tuple is 37 bytes", "udp,[2001:db8::1]:53,[2001:db8::2]:5353", false, fiveTupleV6, "udp,[2001:db8::1]:53,[2001:db8::2]:5353"},
		{"IPv4-mapped IPv6 addresses become IPv4", "sctp,[::ffff:10.0.0.1]:5000,10.0.0.2:80", false, "0a000001 0a000002 1388 0050 84", "sctp,10.0.0.1:5000,10.0.0.2:80"},
		{"icmpv6 is a protocol name", "icmpv6,[::1]:0,[::2]:0", false, zeros(15) + "01" + zeros(15) + "02 0000 0000 3a", "icmpv6,[::1]:0,[::2]:0"},
		{"a 13-byte hex key prints as a 5-tuple", "0x0a0000010a000002138800500" + "6", false, fiveTupleV4, "tcp,10.0.0.1:5000,10.0.0.2:80"},
		{"a 37-byte hex key with an IPv4-mapped address prints as hex", "0x" + zeros(10) + "ffff0a000001" + zeros(10) + "ffff0a000002" + "0001000206", false, zeros(10) + "ffff0a000001" + zeros(10) + "ffff0a000002" + "0001000206", "0x" + zeros(10) + "ffff0a000001" + zeros(10) + "ffff0a000002" + "0001000206"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := dta.ParseKey(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if k.Compat != tt.compat {
				t.Errorf("Compat = %v, want %v", k.Compat, tt.compat)
			}
			if want := hx(t, tt.hex); !bytes.Equal(k.Bytes, want) {
				t.Errorf("Bytes = %x, want %x", k.Bytes, want)
			}
			if s := k.String(); s != tt.str {
				t.Errorf("String() = %q, want %q", s, tt.str)
			}
			back, err := dta.ParseKey(k.String())
			if err != nil || back.Compat != k.Compat || !bytes.Equal(back.Bytes, k.Bytes) {
				t.Errorf("String() %q parses back to %+v, %v", k.String(), back, err)
			}
		})
	}
}

func TestParseKeyErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		msg  string // a substring of the error message
	}{
		{"an empty key is rejected", "", "want a decimal 32-bit number, 0x-prefixed hex bytes, or PROTO,SRC:PORT,DST:PORT"},
		{"a negative key is rejected", "-1", "want a decimal 32-bit number"},
		{"a decimal key above 32 bits is rejected", "4294967296", "want a decimal 32-bit number"},
		{"a decimal key with a sign is rejected", "+1", "want a decimal 32-bit number"},
		{"a decimal key with spaces is rejected", " 1", "want a decimal 32-bit number"},
		{"a non-number is rejected", "abc", `key "abc"`},
		{"0x without digits is rejected", "0x", "0 bytes (want 1..64)"},
		{"an odd number of hex digits is rejected", "0x123", "bad hex"},
		{"non-hex digits are rejected", "0xzz", "bad hex"},
		{"a hex key longer than MaxKeyLen is rejected", "0x" + strings.Repeat("00", dta.MaxKeyLen+1), "65 bytes (want 1..64)"},
		{"a 5-tuple with two parts is rejected", "tcp,10.0.0.1:5000", "want PROTO,SRC:PORT,DST:PORT"},
		{"a 5-tuple with four parts is rejected", "tcp,10.0.0.1:5000,10.0.0.2:80,x", "want PROTO,SRC:PORT,DST:PORT"},
		{"an unknown protocol name is rejected", "foo,10.0.0.1:5000,10.0.0.2:80", `unknown protocol "foo"`},
		{"a protocol number above 255 is rejected", "256,10.0.0.1:5000,10.0.0.2:80", `unknown protocol "256"`},
		{"a source without a port is rejected", "tcp,10.0.0.1,10.0.0.2:80", "source:"},
		{"a source port above 65535 is rejected", "tcp,10.0.0.1:65536,10.0.0.2:80", "source:"},
		{"a bad destination is rejected", "tcp,10.0.0.1:1,10.0.0.300:80", "destination:"},
		{"an IPv6 address without brackets is rejected", "udp,2001:db8::1:53,[2001:db8::2]:53", "source:"},
		{"mixed address families are rejected", "tcp,10.0.0.1:1,[2001:db8::2]:80", "must both be IPv4 or both IPv6"},
		{"zoned IPv6 addresses are rejected", "udp,[fe80::1%eth0]:53,[fe80::2]:53", "without zones"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := dta.ParseKey(tt.in)
			if err == nil {
				t.Fatalf("ParseKey(%q) = %+v, want an error", tt.in, k)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
			if strings.Contains(tt.in, ",") && !strings.HasPrefix(tt.in, "0x") {
				if _, err2 := dta.ParseFiveTuple(tt.in); err2 == nil {
					t.Errorf("ParseFiveTuple(%q) accepted what ParseKey rejects", tt.in)
				}
			}
		})
	}
}

func TestFiveTuple(t *testing.T) {
	v4 := dta.FiveTuple{
		Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"),
		SrcPort: 5000, DstPort: 80, Proto: 6,
	}
	v6 := dta.FiveTuple{
		Src: netip.MustParseAddr("2001:db8::1"), Dst: netip.MustParseAddr("2001:db8::2"),
		SrcPort: 53, DstPort: 5353, Proto: 17,
	}
	tests := []struct {
		name string
		t    dta.FiveTuple
		hex  string
		str  string
	}{
		{"an IPv4 5-tuple", v4, fiveTupleV4, "tcp,10.0.0.1:5000,10.0.0.2:80"},
		{"an IPv6 5-tuple", v6, fiveTupleV6, "udp,[2001:db8::1]:53,[2001:db8::2]:5353"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" has the documented wire order", func(t *testing.T) {
			want := hx(t, tt.hex)
			b := tt.t.AppendTo([]byte{0xff})
			if !bytes.Equal(b[1:], want) || b[0] != 0xff {
				t.Errorf("AppendTo = %x, want ff%x", b, want)
			}
			got, err := dta.DecodeFiveTuple(want)
			if err != nil || got != tt.t {
				t.Errorf("DecodeFiveTuple = %+v, %v; want %+v", got, err, tt.t)
			}
		})
		t.Run(tt.name+" prints and parses back", func(t *testing.T) {
			if s := tt.t.String(); s != tt.str {
				t.Errorf("String() = %q, want %q", s, tt.str)
			}
			got, err := dta.ParseFiveTuple(tt.str)
			if err != nil || got != tt.t {
				t.Errorf("ParseFiveTuple(%q) = %+v, %v; want %+v", tt.str, got, err, tt.t)
			}
		})
	}
	for _, n := range []int{0, 1, 12, 14, 36, 38} {
		_, err := dta.DecodeFiveTuple(make([]byte, n))
		if err == nil || !strings.Contains(err.Error(), "want 13 or 37") {
			t.Errorf("DecodeFiveTuple of %d bytes: %v", n, err)
		}
	}
}

func TestKeyU32(t *testing.T) {
	k, err := dta.ParseKey("167772261")
	if err != nil {
		t.Fatal(err)
	}
	if k.U32() != 0x0a000065 {
		t.Errorf("U32() = %#x, want 0x0a000065", k.U32())
	}
	if u := (dta.Key{Bytes: []byte{0, 0, 0, 1}}).U32(); u != 0 {
		t.Errorf("U32() of a non-compat key = %d, want 0", u)
	}
	if u := (dta.Key{Compat: true, Bytes: []byte{1}}).U32(); u != 0 {
		t.Errorf("U32() of a malformed compat key = %d, want 0", u)
	}
}

// TestCompatKeyIsTheReportKey: a decimal key's bytes are what a compat report
// carries on the wire, so Report.Key32 of a report built from it gives it back.
func TestCompatKeyIsTheReportKey(t *testing.T) {
	k, err := dta.ParseKey("1000")
	if err != nil {
		t.Fatal(err)
	}
	r := dta.Report{Opcode: dta.OpKeyWrite, Redundancy: 1, Key: k.Bytes, Value: []byte{0, 0, 0, 1}}
	b, err := dta.AppendDatagram(nil, dta.Header{}, &r)
	if err != nil {
		t.Fatal(err)
	}
	if want := hx(t, "01 00 00 | 01 | 000003e8 | 00000001"); !bytes.Equal(b, want) {
		t.Errorf("datagram %x, want %x", b, want)
	}
}

func TestFiveTupleAppendToDoesNotPanic(t *testing.T) {
	v4, v6 := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("2001:db8::2")
	tests := []struct {
		name string
		t    dta.FiveTuple
		want string
	}{
		{"an IPv4 source with an IPv6 destination is written as IPv6", dta.FiveTuple{Src: v4, Dst: v6, Proto: 6}, zeros(10) + "ffff0a000001" + "20010db8000000000000000000000002" + "0000 0000 06"},
		{"an IPv6 source with an IPv4 destination is written as IPv6", dta.FiveTuple{Src: v6, Dst: v4, Proto: 6}, "20010db8000000000000000000000002" + zeros(10) + "ffff0a000001" + "0000 0000 06"},
		{"invalid addresses are written as zeros", dta.FiveTuple{Proto: 17}, zeros(36) + "11"},
		{"an invalid destination is written as zeros", dta.FiveTuple{Src: v4, Proto: 17}, zeros(10) + "ffff0a000001" + zeros(16) + "0000 0000 11"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := tt.t.AppendTo(nil), hx(t, tt.want); !bytes.Equal(got, want) {
				t.Errorf("AppendTo = %x, want %x", got, want)
			}
		})
	}
}
