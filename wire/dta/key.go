package dta

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// FiveTuple is a flow key. Its wire form (AppendTo) is the source address,
// destination address, source port, destination port (big-endian) and
// protocol: 13 bytes for IPv4, 37 bytes for IPv6.
type FiveTuple struct {
	Src, Dst         netip.Addr
	SrcPort, DstPort uint16
	Proto            uint8
}

// AppendTo appends the tuple's wire form to b. Both addresses should be of
// the same family: unless both are IPv4, both are written as 16 bytes (an IPv4
// address as IPv4-mapped, an invalid one as zeros).
func (t FiveTuple) AppendTo(b []byte) []byte {
	if t.Src.Is4() && t.Dst.Is4() {
		s, d := t.Src.As4(), t.Dst.As4()
		b = append(b, s[:]...)
		b = append(b, d[:]...)
	} else {
		s, d := t.Src.As16(), t.Dst.As16()
		b = append(b, s[:]...)
		b = append(b, d[:]...)
	}
	b = binary.BigEndian.AppendUint16(b, t.SrcPort)
	b = binary.BigEndian.AppendUint16(b, t.DstPort)
	return append(b, t.Proto)
}

// DecodeFiveTuple parses the 13- or 37-byte wire form.
func DecodeFiveTuple(b []byte) (FiveTuple, error) {
	var t FiveTuple
	switch len(b) {
	case 13:
		t.Src = netip.AddrFrom4([4]byte(b[0:4]))
		t.Dst = netip.AddrFrom4([4]byte(b[4:8]))
		b = b[8:]
	case 37:
		t.Src = netip.AddrFrom16([16]byte(b[0:16]))
		t.Dst = netip.AddrFrom16([16]byte(b[16:32]))
		b = b[32:]
	default:
		return t, fmt.Errorf("5-tuple of %d bytes (want 13 or 37)", len(b))
	}
	t.SrcPort, t.DstPort, t.Proto = binary.BigEndian.Uint16(b), binary.BigEndian.Uint16(b[2:]), b[4]
	return t, nil
}

var protoNames = map[string]uint8{"icmp": 1, "tcp": 6, "udp": 17, "icmpv6": 58, "sctp": 132}

// String formats the tuple in the text form ParseKey accepts:
// PROTO,SRC:PORT,DST:PORT (IPv6 addresses in brackets).
func (t FiveTuple) String() string {
	p := strconv.Itoa(int(t.Proto))
	for n, v := range protoNames {
		if v == t.Proto {
			p = n
		}
	}
	return p + "," + netip.AddrPortFrom(t.Src, t.SrcPort).String() + "," + netip.AddrPortFrom(t.Dst, t.DstPort).String()
}

// ParseFiveTuple parses PROTO,SRC:PORT,DST:PORT, for example
// "tcp,10.0.0.1:5000,10.0.0.2:80" or "udp,[2001:db8::1]:53,[2001:db8::2]:5353".
// PROTO is a name (tcp, udp, icmp, icmpv6, sctp) or a number 0..255.
func ParseFiveTuple(s string) (FiveTuple, error) {
	var t FiveTuple
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return t, fmt.Errorf("5-tuple %q: want PROTO,SRC:PORT,DST:PORT", s)
	}
	if p, ok := protoNames[strings.ToLower(parts[0])]; ok {
		t.Proto = p
	} else if n, err := strconv.ParseUint(parts[0], 10, 8); err == nil {
		t.Proto = uint8(n)
	} else {
		return t, fmt.Errorf("5-tuple %q: unknown protocol %q", s, parts[0])
	}
	src, err := netip.ParseAddrPort(parts[1])
	if err != nil {
		return t, fmt.Errorf("5-tuple %q: source: %w", s, err)
	}
	dst, err := netip.ParseAddrPort(parts[2])
	if err != nil {
		return t, fmt.Errorf("5-tuple %q: destination: %w", s, err)
	}
	t.Src, t.SrcPort = src.Addr().Unmap(), src.Port()
	t.Dst, t.DstPort = dst.Addr().Unmap(), dst.Port()
	if t.Src.Is4() != t.Dst.Is4() || t.Src.Zone() != "" || t.Dst.Zone() != "" {
		return t, fmt.Errorf("5-tuple %q: source and destination must both be IPv4 or both IPv6, without zones", s)
	}
	return t, nil
}

// Key is a key given as text (command line, query API).
type Key struct {
	// Compat is true for a decimal key: a 32-bit prototype key, sent in the
	// compat formats. Its bytes are then the 4 big-endian wire bytes.
	Compat bool
	// Bytes is the key: the big-endian 32-bit key when Compat, else the raw
	// hex bytes or the 5-tuple wire form.
	Bytes []byte
}

// U32 returns the 32-bit key of a compat key.
func (k Key) U32() uint32 {
	if !k.Compat || len(k.Bytes) != 4 {
		return 0
	}
	return binary.BigEndian.Uint32(k.Bytes)
}

// ParseKey parses a key in one of three text forms:
//
//   - decimal, 0..4294967295: a 32-bit key of the prototype's formats;
//   - 0x followed by 2..2*MaxKeyLen hex digits: those bytes;
//   - a 5-tuple PROTO,SRC:PORT,DST:PORT: its 13- or 37-byte wire form.
func ParseKey(s string) (Key, error) {
	switch {
	case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
		b, err := hex.DecodeString(s[2:])
		if err != nil {
			return Key{}, fmt.Errorf("key %q: bad hex: %w", s, err)
		}
		if len(b) == 0 || len(b) > MaxKeyLen {
			return Key{}, fmt.Errorf("key %q: %d bytes (want 1..%d)", s, len(b), MaxKeyLen)
		}
		return Key{Bytes: b}, nil
	case strings.Contains(s, ","):
		t, err := ParseFiveTuple(s)
		if err != nil {
			return Key{}, err
		}
		return Key{Bytes: t.AppendTo(nil)}, nil
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return Key{}, fmt.Errorf("key %q: want a decimal 32-bit number, 0x-prefixed hex bytes, or PROTO,SRC:PORT,DST:PORT", s)
	}
	return Key{Compat: true, Bytes: binary.BigEndian.AppendUint32(nil, uint32(n))}, nil
}

// String formats the key in the form ParseKey accepts; ParseKey gives back the
// same bytes. A 13- or 37-byte key prints as a 5-tuple unless an address is an
// IPv4-mapped IPv6 address (ParseFiveTuple unmaps those, which would change the
// bytes): such a key prints as hex.
func (k Key) String() string {
	if k.Compat {
		return strconv.FormatUint(uint64(k.U32()), 10)
	}
	if t, err := DecodeFiveTuple(k.Bytes); err == nil && !t.Src.Is4In6() && !t.Dst.Is4In6() {
		return t.String()
	}
	return "0x" + hex.EncodeToString(k.Bytes)
}
