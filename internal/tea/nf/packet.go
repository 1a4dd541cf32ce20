package nf

import (
	"encoding/binary"
	"errors"
)

// Parsing errors, counted per reason by an NF.
var (
	// ErrTruncated reports a packet shorter than its headers say.
	ErrTruncated = errors.New("nf: truncated packet")
	// ErrNotIPv4 reports a packet that is not IPv4 (version or header length).
	ErrNotIPv4 = errors.New("nf: not an IPv4 packet")
	// ErrUnsupported reports an IPv4 packet the NFs do not translate: not
	// TCP or UDP, or a fragment.
	ErrUnsupported = errors.New("nf: not a whole TCP or UDP packet")
)

// IP protocol numbers the NFs translate.
const (
	ProtoTCP = 6
	ProtoUDP = 17
)

// Packet locates the fields of one IPv4 TCP or UDP packet in a byte slice.
// It keeps no reference to the bytes: the offsets are valid for the slice
// Parse was given and the Set methods take it again.
type Packet struct {
	L4    int   // offset of the TCP or UDP header
	Proto uint8 // ProtoTCP or ProtoUDP
	// The addresses and ports as parsed.
	Src, Dst         [4]byte
	SrcPort, DstPort uint16
}

// Parse decodes the IPv4 header and the ports of the TCP or UDP header at
// the start of b. It checks the version, the header length, the total
// length (b may be longer: a frame's padding) and that the packet is not a
// fragment; it does not verify checksums. It never panics and does not
// allocate.
func Parse(b []byte) (Packet, error) {
	var p Packet
	if len(b) < 20 {
		return p, ErrTruncated
	}
	ihl := int(b[0]&0x0F) * 4
	if b[0]>>4 != 4 || ihl < 20 {
		return p, ErrNotIPv4
	}
	total := int(binary.BigEndian.Uint16(b[2:]))
	if total < ihl || total > len(b) {
		return p, ErrTruncated
	}
	if binary.BigEndian.Uint16(b[6:])&0x3FFF != 0 { // MF or a fragment offset
		return p, ErrUnsupported
	}
	p.Proto = b[9]
	need := 0
	switch p.Proto {
	case ProtoTCP:
		need = 20
	case ProtoUDP:
		need = 8
	default:
		return p, ErrUnsupported
	}
	if total-ihl < need {
		return p, ErrTruncated
	}
	p.L4 = ihl
	p.Src, p.Dst = [4]byte(b[12:16]), [4]byte(b[16:20])
	p.SrcPort, p.DstPort = binary.BigEndian.Uint16(b[ihl:]), binary.BigEndian.Uint16(b[ihl+2:])
	return p, nil
}

// csumOffset is the offset of the L4 checksum in its header.
func (p *Packet) csumOffset() int {
	if p.Proto == ProtoTCP {
		return p.L4 + 16
	}
	return p.L4 + 6
}

// SetSrc rewrites the source address and port of b, parsed as p, and
// updates the IPv4 header checksum and the TCP or UDP checksum
// incrementally (RFC 1624); a UDP checksum of zero (none) stays zero. b
// must be the slice p was parsed from (p.L4 bounds every write: Parse
// checked it).
func (p *Packet) SetSrc(b []byte, ip [4]byte, port uint16) {
	p.set(b, 12, p.L4, &p.Src, &p.SrcPort, ip, port)
}

// SetDst is SetSrc for the destination address and port.
func (p *Packet) SetDst(b []byte, ip [4]byte, port uint16) {
	p.set(b, 16, p.L4+2, &p.Dst, &p.DstPort, ip, port)
}

func (p *Packet) set(b []byte, ipOff, portOff int, oldIP *[4]byte, oldPort *uint16, ip [4]byte, port uint16) {
	if p.L4 < 20 || len(b) < p.csumOffset()+2 {
		return // not parsed from b
	}
	o1, o2 := binary.BigEndian.Uint16(oldIP[:]), binary.BigEndian.Uint16(oldIP[2:])
	n1, n2 := binary.BigEndian.Uint16(ip[:]), binary.BigEndian.Uint16(ip[2:])
	// The IPv4 header checksum covers the address.
	c := binary.BigEndian.Uint16(b[10:])
	c = csumReplace(csumReplace(c, o1, n1), o2, n2)
	binary.BigEndian.PutUint16(b[10:], c)
	// The L4 checksum covers the pseudo-header's address and the port.
	co := p.csumOffset()
	if l4 := binary.BigEndian.Uint16(b[co:]); !(p.Proto == ProtoUDP && l4 == 0) {
		l4 = csumReplace(csumReplace(csumReplace(l4, o1, n1), o2, n2), *oldPort, port)
		if p.Proto == ProtoUDP && l4 == 0 {
			l4 = 0xFFFF // zero means "no checksum" in UDP
		}
		binary.BigEndian.PutUint16(b[co:], l4)
	}
	copy(b[ipOff:ipOff+4], ip[:])
	binary.BigEndian.PutUint16(b[portOff:], port)
	*oldIP, *oldPort = ip, port
}

// csumReplace updates the one's-complement checksum c of data in which the
// 16-bit word old became new: HC' = ~(~HC + ~m + m') (RFC 1624, eqn. 3).
func csumReplace(c, old, new uint16) uint16 {
	s := uint32(^c) + uint32(^old) + uint32(new)
	s = (s & 0xFFFF) + (s >> 16)
	s = (s & 0xFFFF) + (s >> 16)
	return ^uint16(s)
}

// Checksum returns the Internet checksum (RFC 1071) of b with initial sum
// sum, for tests and for building packets.
func Checksum(b []byte, sum uint32) uint16 {
	for len(b) >= 2 {
		sum += uint32(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	for sum>>16 != 0 {
		sum = (sum & 0xFFFF) + (sum >> 16)
	}
	return ^uint16(sum)
}

// ChecksumsValid reports whether the IPv4 header checksum and the TCP or
// UDP checksum (with the pseudo-header; a UDP checksum of zero is valid) of
// b, parsed as p, are right.
func ChecksumsValid(b []byte, p Packet) bool {
	if p.L4 < 20 || len(b) < p.L4 {
		return false
	}
	if Checksum(b[:p.L4], 0) != 0 {
		return false
	}
	total := int(binary.BigEndian.Uint16(b[2:]))
	if total > len(b) || total < p.L4 {
		return false
	}
	l4 := b[p.L4:total]
	if p.Proto == ProtoUDP && len(l4) >= 8 && binary.BigEndian.Uint16(l4[6:]) == 0 {
		return true
	}
	sum := uint32(binary.BigEndian.Uint16(b[12:])) + uint32(binary.BigEndian.Uint16(b[14:])) +
		uint32(binary.BigEndian.Uint16(b[16:])) + uint32(binary.BigEndian.Uint16(b[18:])) +
		uint32(p.Proto) + uint32(len(l4))
	return Checksum(l4, sum) == 0
}

// BuildUDP returns an IPv4 UDP packet from src to dst carrying payload,
// with both checksums set, for tests and benchmarks.
func BuildUDP(src, dst [4]byte, sport, dport uint16, payload []byte) []byte {
	n := 28 + len(payload)
	b := make([]byte, n)
	b[0], b[8], b[9] = 0x45, 64, ProtoUDP
	binary.BigEndian.PutUint16(b[2:], uint16(n))
	copy(b[12:], src[:])
	copy(b[16:], dst[:])
	binary.BigEndian.PutUint16(b[10:], Checksum(b[:20], 0))
	binary.BigEndian.PutUint16(b[20:], sport)
	binary.BigEndian.PutUint16(b[22:], dport)
	binary.BigEndian.PutUint16(b[24:], uint16(8+len(payload)))
	copy(b[28:], payload)
	sum := uint32(binary.BigEndian.Uint16(src[:])) + uint32(binary.BigEndian.Uint16(src[2:])) +
		uint32(binary.BigEndian.Uint16(dst[:])) + uint32(binary.BigEndian.Uint16(dst[2:])) + ProtoUDP + uint32(8+len(payload))
	c := Checksum(b[20:], sum)
	if c == 0 {
		c = 0xFFFF
	}
	binary.BigEndian.PutUint16(b[26:], c)
	return b
}
