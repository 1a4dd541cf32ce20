package xdp

import (
	"encoding/binary"
	"net/netip"
)

// Reason says why a frame redirected to an AF_XDP socket was not handed to a
// handler. The XDP program only looks at the Ethernet type, the IP protocol and
// the UDP destination port; [ParseFrame] checks the rest.
type Reason uint8

// Reasons, in the order [ParseFrame] checks them.
const (
	// ReasonNone: the frame is a well-formed UDP datagram.
	ReasonNone Reason = iota
	// ReasonShortEthernet: shorter than an Ethernet header (and VLAN tag).
	ReasonShortEthernet
	// ReasonNotIP: the Ethernet type is neither IPv4 nor IPv6.
	ReasonNotIP
	// ReasonShortIP: shorter than the IP header it announces.
	ReasonShortIP
	// ReasonBadIPHeader: wrong IP version, IPv4 header length under 20
	// bytes, or a wrong IPv4 header checksum.
	ReasonBadIPHeader
	// ReasonIPLength: the IP length field exceeds the frame or is shorter
	// than the IP header.
	ReasonIPLength
	// ReasonFragment: an IPv4 fragment (more-fragments set or an offset).
	ReasonFragment
	// ReasonNotUDP: the IP payload is not UDP (IPv6 extension headers
	// included).
	ReasonNotUDP
	// ReasonShortUDP: the IP payload is shorter than a UDP header.
	ReasonShortUDP
	// ReasonUDPLength: the UDP length field is under 8 or exceeds the IP
	// payload.
	ReasonUDPLength
	// ReasonPort: the UDP destination port has no handler.
	ReasonPort

	numReasons
)

var reasonNames = [numReasons]string{
	"none", "short_ethernet", "not_ip", "short_ip", "bad_ip_header", "ip_length",
	"fragment", "not_udp", "short_udp", "udp_length", "port",
}

// String returns the reason's metric label, e.g. "udp_length".
func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "unknown"
}

// Reasons lists every reason but ReasonNone, for exporting counters.
func Reasons() []Reason {
	rs := make([]Reason, 0, numReasons-1)
	for r := ReasonShortEthernet; r < numReasons; r++ {
		rs = append(rs, r)
	}
	return rs
}

const (
	ethHeaderLen  = 14
	vlanTagLen    = 4
	ipv4HeaderLen = 20
	ipv6HeaderLen = 40
	udpHeaderLen  = 8

	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86dd
	etherTypeVLAN = 0x8100
	protoUDP      = 17
)

// Datagram is one UDP datagram found by [ParseFrame]. Payload aliases the
// frame and is valid until the frame is reused.
type Datagram struct {
	Payload []byte
	From    netip.AddrPort
	Dst     netip.Addr // the destination address (IPv4, or IPv6 unmapped)
	DstPort uint16
	Link    Link // the Ethernet header it arrived with
	// IPv4 says the datagram came in an IPv4 header, whose identification
	// and Don't Fragment bit are ID and DF (a RoCEv2 ICRC covers both);
	// over IPv6 both are zero.
	IPv4 bool
	ID   uint16
	DF   bool
}

// Link is an Ethernet header: the MAC addresses and the one VLAN tag a
// frame may carry. A reply to a frame's sender goes back over the link the
// frame came in on ([Link.Reverse]).
type Link struct {
	Src, Dst [6]byte
	// TCI is the VLAN tag's control information (priority and VLAN id)
	// when Tagged.
	TCI    uint16
	Tagged bool
}

// Reverse returns the link a reply to l's sender takes: the addresses
// swapped, the same VLAN tag.
func (l Link) Reverse() Link {
	l.Src, l.Dst = l.Dst, l.Src
	return l
}

// ParseFrame checks that frame is an Ethernet frame (one VLAN tag allowed)
// carrying an unfragmented IPv4 or IPv6 UDP datagram and returns it in d. On
// any other frame it returns the first failed check and leaves d unspecified.
// It never panics, never allocates and never verifies the UDP checksum.
func ParseFrame(frame []byte, d *Datagram) Reason {
	if len(frame) < ethHeaderLen {
		return ReasonShortEthernet
	}
	l3 := ethHeaderLen
	d.Link.Dst, d.Link.Src = [6]byte(frame[0:6]), [6]byte(frame[6:12])
	d.Link.TCI, d.Link.Tagged = 0, false
	et := binary.BigEndian.Uint16(frame[12:])
	if et == etherTypeVLAN {
		if len(frame) < ethHeaderLen+vlanTagLen {
			return ReasonShortEthernet
		}
		d.Link.TCI, d.Link.Tagged = binary.BigEndian.Uint16(frame[14:]), true
		et = binary.BigEndian.Uint16(frame[16:])
		l3 += vlanTagLen
	}
	ip := frame[l3:]
	var udp []byte
	switch et {
	case etherTypeIPv4:
		if len(ip) < ipv4HeaderLen {
			return ReasonShortIP
		}
		ihl := int(ip[0]&0x0f) * 4
		if ip[0]>>4 != 4 || ihl < ipv4HeaderLen {
			return ReasonBadIPHeader
		}
		if len(ip) < ihl {
			return ReasonShortIP
		}
		if ipv4Checksum(ip[:ihl]) != 0xffff {
			return ReasonBadIPHeader
		}
		total := int(binary.BigEndian.Uint16(ip[2:]))
		if total < ihl || total > len(ip) {
			return ReasonIPLength
		}
		if binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 { // MF or an offset
			return ReasonFragment
		}
		if ip[9] != protoUDP {
			return ReasonNotUDP
		}
		d.From = netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[12:16])), 0)
		d.Dst = netip.AddrFrom4([4]byte(ip[16:20]))
		d.IPv4, d.ID, d.DF = true, binary.BigEndian.Uint16(ip[4:]), ip[6]&0x40 != 0
		udp = ip[ihl:total]
	case etherTypeIPv6:
		if len(ip) < ipv6HeaderLen {
			return ReasonShortIP
		}
		if ip[0]>>4 != 6 {
			return ReasonBadIPHeader
		}
		payload := int(binary.BigEndian.Uint16(ip[4:]))
		if payload > len(ip)-ipv6HeaderLen {
			return ReasonIPLength
		}
		if ip[6] != protoUDP {
			return ReasonNotUDP
		}
		d.IPv4, d.ID, d.DF = false, 0, false
		d.From = netip.AddrPortFrom(netip.AddrFrom16([16]byte(ip[8:24])).Unmap(), 0)
		d.Dst = netip.AddrFrom16([16]byte(ip[24:40])).Unmap()
		udp = ip[ipv6HeaderLen : ipv6HeaderLen+payload]
	default:
		return ReasonNotIP
	}
	if len(udp) < udpHeaderLen {
		return ReasonShortUDP
	}
	ulen := int(binary.BigEndian.Uint16(udp[4:]))
	if ulen < udpHeaderLen || ulen > len(udp) {
		return ReasonUDPLength
	}
	d.From = netip.AddrPortFrom(d.From.Addr(), binary.BigEndian.Uint16(udp[0:]))
	d.DstPort = binary.BigEndian.Uint16(udp[2:])
	d.Payload = udp[udpHeaderLen:ulen]
	return ReasonNone
}

// ipv4Checksum returns the one's-complement sum of h folded to 16 bits:
// 0xffff for a header whose checksum is right.
func ipv4Checksum(h []byte) uint16 {
	// 32-bit words summed into 64 bits, folded at the end: the same one's
	// complement sum as 16-bit words (2^16 ≡ 1 modulo 2^16-1), in half the
	// loads and adds; an IPv4 header is a whole number of 32-bit words.
	var sum uint64
	if len(h) == ipv4HeaderLen { // no options: unrolled
		_ = h[19]
		sum = uint64(binary.BigEndian.Uint32(h)) + uint64(binary.BigEndian.Uint32(h[4:])) +
			uint64(binary.BigEndian.Uint32(h[8:])) + uint64(binary.BigEndian.Uint32(h[12:])) +
			uint64(binary.BigEndian.Uint32(h[16:]))
		h = nil
	}
	for len(h) >= 4 {
		sum += uint64(binary.BigEndian.Uint32(h))
		h = h[4:]
	}
	if len(h) >= 2 {
		sum += uint64(binary.BigEndian.Uint16(h))
	}
	sum = sum&0xffffffff + sum>>32
	sum = sum&0xffff + sum>>16
	sum = sum&0xffff + sum>>16
	sum = sum&0xffff + sum>>16
	return uint16(sum)
}

// AppendFrame appends an Ethernet frame carrying one IPv4 or IPv6 UDP
// datagram from src to dst with payload, and a zero UDP checksum (IPv4) or the
// correct one (IPv6, where zero is not allowed). It is the inverse of
// [ParseFrame], used by tests and by senders that write frames directly.
func AppendFrame(b []byte, srcMAC, dstMAC [6]byte, src, dst netip.AddrPort, payload []byte) []byte {
	return AppendLinkFrame(b, &Link{Src: srcMAC, Dst: dstMAC}, src, dst, payload)
}

// FrameLen is the length of the frame [AppendLinkFrame] appends: headers
// and payload.
func FrameLen(link *Link, src netip.Addr, payload int) int {
	n := ethHeaderLen + udpHeaderLen + payload
	if link.Tagged {
		n += vlanTagLen
	}
	if src.Is4() {
		return n + ipv4HeaderLen
	}
	return n + ipv6HeaderLen
}

// AppendLinkFrame is [AppendFrame] over link: its addresses and, when
// tagged, its VLAN tag. IPv4 headers carry ID 0, DF and TTL 64; IPv6
// headers traffic class and flow label 0 and hop limit 64.
func AppendLinkFrame(b []byte, link *Link, src, dst netip.AddrPort, payload []byte) []byte {
	b = append(b, link.Dst[:]...)
	b = append(b, link.Src[:]...)
	if link.Tagged {
		b = binary.BigEndian.AppendUint16(b, etherTypeVLAN)
		b = binary.BigEndian.AppendUint16(b, link.TCI)
	}
	udpLen := udpHeaderLen + len(payload)
	if src.Addr().Is4() {
		b = binary.BigEndian.AppendUint16(b, etherTypeIPv4)
		h := len(b)
		b = append(b, 0x45, 0)
		b = binary.BigEndian.AppendUint16(b, uint16(ipv4HeaderLen+udpLen))
		b = append(b, 0, 0, 0x40, 0, 64, protoUDP, 0, 0) // id, DF, TTL, proto, checksum
		s, d := src.Addr().As4(), dst.Addr().As4()
		b = append(b, s[:]...)
		b = append(b, d[:]...)
		binary.BigEndian.PutUint16(b[h+10:], ^ipv4Checksum(b[h:h+ipv4HeaderLen]))
		b = appendUDP(b, src.Port(), dst.Port(), payload, 0)
		return b
	}
	b = binary.BigEndian.AppendUint16(b, etherTypeIPv6)
	b = append(b, 0x60, 0, 0, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(udpLen))
	b = append(b, protoUDP, 64)
	s, d := src.Addr().As16(), dst.Addr().As16()
	b = append(b, s[:]...)
	b = append(b, d[:]...)
	// Pseudo-header sum for the UDP checksum.
	var sum uint32
	for i := 0; i < 16; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(s[i:])) + uint32(binary.BigEndian.Uint16(d[i:]))
	}
	sum += uint32(udpLen) + protoUDP
	return appendUDP(b, src.Port(), dst.Port(), payload, sum)
}

// appendUDP appends a UDP header and payload; pseudo, when not 0, is the
// pseudo-header sum to complete into a checksum.
func appendUDP(b []byte, sport, dport uint16, payload []byte, pseudo uint32) []byte {
	h := len(b)
	b = binary.BigEndian.AppendUint16(b, sport)
	b = binary.BigEndian.AppendUint16(b, dport)
	b = binary.BigEndian.AppendUint16(b, uint16(udpHeaderLen+len(payload)))
	b = append(b, 0, 0)
	b = append(b, payload...)
	if pseudo != 0 {
		sum := pseudo
		seg := b[h:]
		for i := 0; i+1 < len(seg); i += 2 {
			sum += uint32(binary.BigEndian.Uint16(seg[i:]))
		}
		if len(seg)%2 == 1 {
			sum += uint32(seg[len(seg)-1]) << 8
		}
		for sum > 0xffff {
			sum = sum&0xffff + sum>>16
		}
		c := ^uint16(sum)
		if c == 0 {
			c = 0xffff
		}
		binary.BigEndian.PutUint16(b[h+6:], c)
	}
	return b
}
