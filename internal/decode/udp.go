package decode

import (
	"encoding/binary"
	"net/netip"
)

// UDP is a UDP datagram found in a captured frame. Its slices alias the
// frame.
type UDP struct {
	Src, Dst netip.AddrPort
	Payload  []byte // the UDP payload, cut at the UDP length when captured whole
	Note     string // why the payload may be incomplete: "capture truncated", "IP fragment: payload incomplete"
	IP       []byte // the IP datagram from its header on, cut at the IP length when captured whole (for the RoCEv2 ICRC)
}

// FindUDP finds the UDP datagram in a frame of the given link type
// (Ethernet with VLAN tags, Linux cooked v1 and v2, BSD and OpenBSD
// loopback, raw IP), over IPv4 or IPv6 with extension headers. It reports
// false for anything else: not IP, not UDP, not the first fragment, or cut
// before the end of the UDP header.
func FindUDP(link uint32, b []byte) (UDP, bool) {
	var etype uint16
	switch link {
	case LinkEthernet:
		if len(b) < 14 {
			return UDP{}, false
		}
		etype, b = binary.BigEndian.Uint16(b[12:]), b[14:]
		for (etype == 0x8100 || etype == 0x88a8 || etype == 0x9100) && len(b) >= 4 { // VLAN tags
			etype, b = binary.BigEndian.Uint16(b[2:]), b[4:]
		}
	case LinkSLL:
		if len(b) < 16 {
			return UDP{}, false
		}
		etype, b = binary.BigEndian.Uint16(b[14:]), b[16:]
	case LinkSLL2:
		if len(b) < 20 {
			return UDP{}, false
		}
		etype, b = binary.BigEndian.Uint16(b[0:]), b[20:]
	case LinkNull, LinkLoop:
		if len(b) < 4 {
			return UDP{}, false
		}
		fam := binary.LittleEndian.Uint32(b)
		if link == LinkLoop || fam > 0xffff {
			fam = binary.BigEndian.Uint32(b)
		}
		b = b[4:]
		switch fam {
		case 2:
			etype = 0x0800
		case 10, 24, 28, 30:
			etype = 0x86dd
		}
	case LinkRaw, LinkRawAlt1, LinkRawAlt2, LinkIPv4, LinkIPv6:
		if len(b) == 0 {
			return UDP{}, false
		}
		switch b[0] >> 4 {
		case 4:
			etype = 0x0800
		case 6:
			etype = 0x86dd
		}
	}
	switch etype {
	case 0x0800:
		return findIPv4(b)
	case 0x86dd:
		return findIPv6(b)
	}
	return UDP{}, false
}

func findIPv4(b []byte) (UDP, bool) {
	if len(b) < 20 || b[0]>>4 != 4 {
		return UDP{}, false
	}
	ihl := int(b[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(b[2:]))
	frag := binary.BigEndian.Uint16(b[6:])
	if ihl < 20 || len(b) < ihl || b[9] != 17 || frag&0x1fff != 0 {
		return UDP{}, false // not UDP, or not the first fragment
	}
	if total >= ihl && total < len(b) {
		b = b[:total] // drop Ethernet padding
	}
	src := netip.AddrFrom4([4]byte(b[12:16]))
	dst := netip.AddrFrom4([4]byte(b[16:20]))
	d, ok := findUDPHeader(src, dst, b[ihl:])
	if ok && frag&0x2000 != 0 {
		d.Note = "IP fragment: payload incomplete"
	}
	d.IP = b
	return d, ok
}

func findIPv6(b []byte) (UDP, bool) {
	if len(b) < 40 || b[0]>>4 != 6 {
		return UDP{}, false
	}
	plen := int(binary.BigEndian.Uint16(b[4:]))
	next := b[6]
	src := netip.AddrFrom16([16]byte(b[8:24]))
	dst := netip.AddrFrom16([16]byte(b[24:40]))
	if 40+plen < len(b) {
		b = b[:40+plen] // drop Ethernet padding
	}
	ip := b
	b = b[40:]
	note := ""
	for range 8 { // extension headers, bounded
		switch next {
		case 17:
			d, ok := findUDPHeader(src, dst, b)
			if ok && d.Note == "" {
				d.Note = note
			}
			d.IP = ip
			return d, ok
		case 0, 43, 60: // hop-by-hop, routing, destination options
			if len(b) < 8 || len(b) < (int(b[1])+1)*8 {
				return UDP{}, false
			}
			next, b = b[0], b[(int(b[1])+1)*8:]
		case 51: // authentication header
			if len(b) < 8 || len(b) < (int(b[1])+2)*4 {
				return UDP{}, false
			}
			next, b = b[0], b[(int(b[1])+2)*4:]
		case 44: // fragment
			if len(b) < 8 || binary.BigEndian.Uint16(b[2:])&0xfff8 != 0 {
				return UDP{}, false // not the first fragment
			}
			if b[3]&1 != 0 {
				note = "IP fragment: payload incomplete"
			}
			next, b = b[0], b[8:]
		default:
			return UDP{}, false
		}
	}
	return UDP{}, false
}

func findUDPHeader(src, dst netip.Addr, b []byte) (UDP, bool) {
	if len(b) < 8 {
		return UDP{}, false
	}
	d := UDP{
		Src: netip.AddrPortFrom(src, binary.BigEndian.Uint16(b[0:])),
		Dst: netip.AddrPortFrom(dst, binary.BigEndian.Uint16(b[2:])),
	}
	l := int(binary.BigEndian.Uint16(b[4:]))
	b = b[8:]
	switch {
	case l >= 8 && l-8 <= len(b):
		b = b[:l-8]
	case l >= 8:
		d.Note = "capture truncated"
	}
	d.Payload = b
	return d, true
}
