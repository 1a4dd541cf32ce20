package roce

import (
	"encoding/binary"
	"net/netip"
)

// Encapsulation sizes and constants.
const (
	IPv4HeaderLen = 20 // IPv4 header without options (RoCEv2 sends none)
	IPv6HeaderLen = 40 // IPv6 fixed header (RoCEv2 sends no extension headers)
	UDPHeaderLen  = 8  // UDP header
	EthernetLen   = 14 // Ethernet II header without 802.1Q tag

	EtherTypeIPv4 = 0x0800 // Ethernet II type of IPv4
	EtherTypeIPv6 = 0x86DD // Ethernet II type of IPv6

	DefaultHopLimit = 64 // IPv4 TTL / IPv6 hop limit when an Envelope leaves it 0
)

// FlowLabel returns the 20-bit flow label Linux derives from a QP pair
// (rdma_calc_flow_label): the product of the two QP numbers folded to 20
// bits. It is symmetric, so both ends of a connection compute the same
// value without agreeing on it.
func FlowLabel(lqpn, rqpn uint32) uint32 {
	fl := uint64(lqpn) * uint64(rqpn)
	fl ^= fl >> 20
	fl ^= fl >> 40
	return uint32(fl) & 0xFFFFF
}

// SourcePort returns the UDP source port for the flow of a QP pair, the
// convention Linux asks RoCEv2 drivers to share (rdma_flow_label_to_udp_sport
// of FlowLabel): a value in 0xC000-0xFFFF that is constant for the
// connection, so its packets follow one ECMP path and are not reordered.
func SourcePort(lqpn, rqpn uint32) uint16 {
	fl := FlowLabel(lqpn, rqpn)
	return uint16(fl&0x3FFF^fl>>14) | 0xC000
}

// Envelope describes the IP and UDP headers around a RoCEv2 packet. One
// value serves a whole connection: addresses and ports stay fixed, the IP
// lengths and checksum are computed per datagram.
//
// The ICRC covers the IPv4 ID and DF bit, which a UDP socket neither lets
// its sender choose nor shows its receiver. A sender must describe here what
// its kernel will send: Linux gives DF packets of an unconnected UDP socket
// ID 0 (IP_PMTUDISC_DO makes every packet DF), but those of a connected
// socket a per-socket counter. A receiver on a socket checks the ICRC of
// senders known to do that (ID 0 + DF) with Verify; rxe and RNICs vary the
// ID, and ICRCCache.VerifyAnyID recovers it (and DF) from the trailer.
type Envelope struct {
	Src, Dst     netip.Addr // both IPv4 or both IPv6; an IPv4-mapped address is IPv6 here (Unmap it, as GID.Addr does)
	SrcPort      uint16     // flow entropy, see SourcePort
	DstPort      uint16     // Port (4791) for RoCEv2; no default, so a decoded Envelope rebuilds what it read
	TrafficClass uint8      // IPv4 TOS / IPv6 traffic class: DSCP and ECN; not covered by the ICRC
	HopLimit     uint8      // IPv4 TTL / IPv6 hop limit; 0 means DefaultHopLimit (a packet with 0 would die at the first hop); not covered by the ICRC
	FlowLabel    uint32     // IPv6 flow label (20 bits); not covered by the ICRC
	ID           uint16     // IPv4 identification; covered by the ICRC
	NoDF         bool       // clear IPv4 Don't Fragment (set by default, as rxe does)
}

// family reports whether e is IPv4, or ErrBadAddress.
func (e *Envelope) family() (v4 bool, err error) {
	switch {
	case e.Src.Is4() && e.Dst.Is4():
		return true, nil
	case e.Src.Is6() && e.Dst.Is6():
		return false, nil
	}
	return false, ErrBadAddress
}

func (e *Envelope) hopLimit() uint8 {
	if e.HopLimit == 0 {
		return DefaultHopLimit
	}
	return e.HopLimit
}

// appendHeaders appends the IP and UDP headers for a UDP payload of n bytes.
// Without sum the IPv4 header checksum is left 0 (the ICRC masks it).
func (e *Envelope) appendHeaders(b []byte, v4 bool, n int, sum bool) ([]byte, error) {
	udpLen := UDPHeaderLen + n
	if v4 {
		total := IPv4HeaderLen + udpLen
		if total > 0xFFFF {
			return b, ErrTooLong
		}
		var frag uint16
		if !e.NoDF {
			frag = 0x4000
		}
		start := len(b)
		b = append(b, 0x45, e.TrafficClass)
		b = binary.BigEndian.AppendUint16(b, uint16(total))
		b = binary.BigEndian.AppendUint16(b, e.ID)
		b = binary.BigEndian.AppendUint16(b, frag)
		b = append(b, e.hopLimit(), 17, 0, 0)
		s, d := e.Src.As4(), e.Dst.As4()
		b = append(b, s[:]...)
		b = append(b, d[:]...)
		if sum {
			binary.BigEndian.PutUint16(b[start+10:], ipv4Checksum(b[start:]))
		}
	} else {
		if udpLen > 0xFFFF {
			return b, ErrTooLong
		}
		b = binary.BigEndian.AppendUint32(b, 6<<28|uint32(e.TrafficClass)<<20|e.FlowLabel&0xFFFFF)
		b = binary.BigEndian.AppendUint16(b, uint16(udpLen))
		b = append(b, 17, e.hopLimit())
		s, d := e.Src.As16(), e.Dst.As16()
		b = append(b, s[:]...)
		b = append(b, d[:]...)
	}
	b = binary.BigEndian.AppendUint16(b, e.SrcPort)
	b = binary.BigEndian.AppendUint16(b, e.DstPort)
	b = binary.BigEndian.AppendUint16(b, uint16(udpLen))
	return append(b, 0, 0), nil // UDP checksum: see AppendDatagram
}

// udp6Checksum returns the UDP checksum of an IPv6 datagram (40-byte header,
// UDP header with checksum 0, payload) per RFC 8200 §8.1.
func udp6Checksum(ip []byte) uint16 {
	udp := ip[IPv6HeaderLen:]
	sum := uint64(len(udp)) + 17
	sum += sum32(ip[8:IPv6HeaderLen]) + sum32(udp)
	for sum > 0xFFFF {
		sum = sum>>16 + sum&0xFFFF
	}
	if c := ^uint16(sum); c != 0 {
		return c
	}
	return 0xFFFF // 0 means "no checksum"; its ones' complement twin is sent instead
}

// sum32 adds b up as big-endian 32-bit words (the last one zero-padded), a
// sum whose folding to 16 bits is the Internet checksum's ones'-complement sum.
func sum32(b []byte) uint64 {
	var sum uint64
	for len(b) >= 4 {
		sum += uint64(binary.BigEndian.Uint32(b))
		b = b[4:]
	}
	var last [4]byte
	copy(last[:], b)
	return sum + uint64(binary.BigEndian.Uint32(last[:]))
}

// ipv4Checksum returns the header checksum of a 20-byte IPv4 header whose
// checksum field is zero.
func ipv4Checksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i < IPv4HeaderLen; i += 2 {
		sum += uint32(h[i])<<8 | uint32(h[i+1])
	}
	sum = sum>>16 + sum&0xFFFF
	sum += sum >> 16
	return ^uint16(sum)
}

// AppendDatagram appends a complete IP datagram to b: IPv4 (with DF, header
// checksum) or IPv6 header, UDP header, the packet p and its ICRC, which it
// computes and also stores in p.ICRC. The UDP checksum is 0 over IPv4, as
// rxe sends it, and computed over IPv6, where RFC 8200 forbids 0 (tshark
// flags it); the ICRC does not cover it either way. It fails with p.Check's
// errors, ErrBadAddress or ErrTooLong, leaving b as it was.
func (e *Envelope) AppendDatagram(b []byte, p *Packet) ([]byte, error) {
	if err := p.Check(); err != nil {
		return b, err
	}
	v4, err := e.family()
	if err != nil {
		return b, err
	}
	start := len(b)
	b, err = e.appendHeaders(b, v4, p.Len(), true)
	if err != nil {
		return b, err
	}
	ipudp := len(b)
	b = p.AppendTo(b)
	p.ICRC = icrc(b[start:ipudp], ipudp-start-UDPHeaderLen, b[ipudp:])
	binary.LittleEndian.PutUint32(b[len(b)-ICRCLen:], p.ICRC)
	if !v4 {
		binary.BigEndian.PutUint16(b[ipudp-2:], udp6Checksum(b[start:]))
	}
	return b, nil
}

// AppendFrame appends an Ethernet II frame (dst, src, EtherType for the
// envelope's IP version) carrying AppendDatagram's datagram. It is meant for
// pcap files; a frame has no FCS.
func (e *Envelope) AppendFrame(b []byte, dst, src [6]byte, p *Packet) ([]byte, error) {
	v4, err := e.family()
	if err != nil {
		return b, err
	}
	eth := Ethernet{Dst: dst, Src: src, EtherType: EtherTypeIPv6}
	if v4 {
		eth.EtherType = EtherTypeIPv4
	}
	n := len(b)
	b, err = e.AppendDatagram(eth.AppendTo(b), p)
	if err != nil {
		return b[:n], err
	}
	return b, nil
}

// locate validates the IP and UDP headers of ip and returns the IP header
// length and the end of the UDP datagram (bytes after it, such as Ethernet
// padding, are ignored).
func locate(ip []byte) (ipLen, end int, err error) {
	if len(ip) < IPv4HeaderLen {
		return 0, 0, ErrTruncated
	}
	switch ip[0] >> 4 {
	case 4:
		if ip[0]&0x0F != 5 || ip[9] != 17 || binary.BigEndian.Uint16(ip[6:])&^0x4000 != 0 {
			return 0, 0, ErrNotRoCE // options, not UDP, a fragment or the reserved flag
		}
		ipLen, end = IPv4HeaderLen, int(binary.BigEndian.Uint16(ip[2:]))
		if end < IPv4HeaderLen {
			return 0, 0, ErrBadLength
		}
	case 6:
		if len(ip) < IPv6HeaderLen {
			return 0, 0, ErrTruncated
		}
		if ip[6] != 17 {
			return 0, 0, ErrNotRoCE // extension header or not UDP
		}
		ipLen, end = IPv6HeaderLen, IPv6HeaderLen+int(binary.BigEndian.Uint16(ip[4:]))
	default:
		return 0, 0, ErrNotRoCE
	}
	if end > len(ip) || end-ipLen < UDPHeaderLen {
		return 0, 0, ErrTruncated
	}
	udpLen := int(binary.BigEndian.Uint16(ip[ipLen+4:]))
	if udpLen != end-ipLen {
		return 0, 0, ErrBadLength
	}
	if udpLen < UDPHeaderLen+BTHLen+ICRCLen {
		return 0, 0, ErrTruncated
	}
	return ipLen, end, nil
}

// Decode parses the IP and UDP headers of an IP datagram into e and returns
// the UDP payload (aliasing ip), ready for Packet.Decode. It accepts IPv4
// without options, unfragmented and with the reserved flag clear (an
// Envelope could not rebuild it, and the ICRC covers it), IPv6 without
// extension headers, and
// any UDP ports; the UDP checksum is not checked. Errors: ErrTruncated,
// ErrNotRoCE, ErrBadLength.
func (e *Envelope) Decode(ip []byte) (udpPayload []byte, err error) {
	ipLen, end, err := locate(ip)
	if err != nil {
		return nil, err
	}
	if ipLen == IPv4HeaderLen {
		*e = Envelope{
			Src:          netip.AddrFrom4([4]byte(ip[12:16])),
			Dst:          netip.AddrFrom4([4]byte(ip[16:20])),
			TrafficClass: ip[1],
			HopLimit:     ip[8],
			ID:           binary.BigEndian.Uint16(ip[4:]),
			NoDF:         ip[6]&0x40 == 0,
		}
	} else {
		w := binary.BigEndian.Uint32(ip)
		*e = Envelope{
			Src:          netip.AddrFrom16([16]byte(ip[8:24])),
			Dst:          netip.AddrFrom16([16]byte(ip[24:40])),
			TrafficClass: uint8(w >> 20),
			FlowLabel:    w & 0xFFFFF,
			HopLimit:     ip[7],
		}
	}
	e.SrcPort = binary.BigEndian.Uint16(ip[ipLen:])
	e.DstPort = binary.BigEndian.Uint16(ip[ipLen+2:])
	return ip[ipLen+UDPHeaderLen : end : end], nil
}

// Ethernet is an Ethernet II header (no 802.1Q tag).
type Ethernet struct {
	Dst, Src  [6]byte
	EtherType uint16
}

// Decode fills h from the first EthernetLen bytes of b.
func (h *Ethernet) Decode(b []byte) error {
	if len(b) < EthernetLen {
		return ErrTruncated
	}
	h.Dst = [6]byte(b[0:6])
	h.Src = [6]byte(b[6:12])
	h.EtherType = binary.BigEndian.Uint16(b[12:])
	return nil
}

// AppendTo appends the 14-byte encoding of h to b.
func (h *Ethernet) AppendTo(b []byte) []byte {
	b = append(b, h.Dst[:]...)
	b = append(b, h.Src[:]...)
	return binary.BigEndian.AppendUint16(b, h.EtherType)
}
