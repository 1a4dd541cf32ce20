package intreport

import (
	"encoding/binary"
	"fmt"
)

// Packet describes a truncated packet for AppendPacket: an IPv4 or IPv6
// header, and the flow's TCP or UDP header, with an INT-MD (or INT-MX)
// header and stack between them when INT is set.
type Packet struct {
	Flow Flow
	TTL  uint8
	DSCP uint8
	// INT, when set, adds an INT shim and header. With INTPort set the INT
	// is carried as the INT v2.1 example does: a new UDP header (to
	// INTPort) between the IP header and the original L4 header, whose
	// protocol the shim holds (NPT 2). Without, the INT follows the flow's
	// L4 header and the caller marks the packet by its DSCP (NPT 0).
	INT     *MDHeader
	INTPort uint16
	// Hops are the INT-MD stack's entries, the most recent hop first, each
	// holding the fields INT.Instructions selects.
	Hops []Metadata
}

// AppendPacket appends the truncated packet p describes to b, padded with
// zeros to a multiple of 4 bytes, as an Individual Report's contents must
// be. It fails if the INT header cannot hold the hops.
func AppendPacket(b []byte, p *Packet) ([]byte, error) {
	var intBytes []byte
	if p.INT != nil {
		var err error
		if intBytes, err = appendINT(nil, p); err != nil {
			return b, err
		}
	}
	l4Len := 20
	if p.Flow.Proto == ipProtoUDP {
		l4Len = 8
	}
	proto := p.Flow.Proto
	extra := len(intBytes)
	if p.INT != nil && p.INTPort != 0 {
		proto, extra = ipProtoUDP, 8+len(intBytes)
	}
	start := len(b)
	if p.Flow.Src.Is4() {
		total := 20 + extra + l4Len
		b = append(b, 0x45, p.DSCP<<2)
		b = binary.BigEndian.AppendUint16(b, uint16(total))
		b = append(b, 0, 0, 0x40, 0, p.TTL, proto, 0, 0) // id 0, DF, checksum 0
		s, d := p.Flow.Src.As4(), p.Flow.Dst.As4()
		b = append(b, s[:]...)
		b = append(b, d[:]...)
	} else {
		b = binary.BigEndian.AppendUint32(b, 6<<28|uint32(p.DSCP)<<22)
		b = binary.BigEndian.AppendUint16(b, uint16(extra+l4Len))
		b = append(b, proto, p.TTL)
		s, d := p.Flow.Src.As16(), p.Flow.Dst.As16()
		b = append(b, s[:]...)
		b = append(b, d[:]...)
	}
	if p.INT != nil && p.INTPort != 0 {
		b = binary.BigEndian.AppendUint16(b, p.Flow.SrcPort) // entropy: any source port will do
		b = binary.BigEndian.AppendUint16(b, p.INTPort)
		b = binary.BigEndian.AppendUint16(b, uint16(8+len(intBytes)+l4Len))
		b = append(b, 0, 0)
		b = append(b, intBytes...)
	}
	b = binary.BigEndian.AppendUint16(b, p.Flow.SrcPort)
	b = binary.BigEndian.AppendUint16(b, p.Flow.DstPort)
	if p.Flow.Proto == ipProtoUDP {
		b = binary.BigEndian.AppendUint16(b, uint16(8+len(intBytes)))
		b = append(b, 0, 0)
	} else {
		b = append(b, 0, 0, 0, 1, 0, 0, 0, 0, 5<<4, 0x18, 0xFF, 0xFF, 0, 0, 0, 0) // seq 1, data offset 5, PSH|ACK
	}
	if p.INT != nil && p.INTPort == 0 {
		b = append(b, intBytes...)
	}
	for (len(b)-start)%4 != 0 {
		b = append(b, 0)
	}
	return b, nil
}

// appendINT appends the shim, the INT-MD (or MX) header and the stack.
func appendINT(b []byte, p *Packet) ([]byte, error) {
	h := p.INT
	typ, body := byte(ShimTypeMD), MDHeaderLen
	if h.MX {
		typ = ShimTypeMX
	} else {
		n := int(h.HopML) * 4
		if MetadataLen(h.Instructions) > n || len(p.Hops) > 0 && n == 0 {
			return b, fmt.Errorf("intreport: Hop ML %d words cannot hold the instructions' %d bytes", h.HopML, MetadataLen(h.Instructions))
		}
		body += n * len(p.Hops)
	}
	if body/4 > 0xFF {
		return b, fmt.Errorf("%w: %d hops", ErrTooManyHops, len(p.Hops))
	}
	npt, last := byte(NPTNone), uint16(0)
	if p.INTPort != 0 {
		npt, last = NPTL4Header, uint16(p.Flow.Proto)
	}
	b = append(b, typ<<4|npt<<2, byte(body/4))
	b = binary.BigEndian.AppendUint16(b, last)
	w := uint32(2) << 28
	if h.Discard {
		w |= 1 << 27
	}
	if !h.MX {
		if h.HopExceeded {
			w |= 1 << 26
		}
		if h.MTUExceeded {
			w |= 1 << 25
		}
		w |= uint32(h.HopML&0x1F)<<8 | uint32(h.RemainingHops)
	}
	b = binary.BigEndian.AppendUint32(b, w)
	b = binary.BigEndian.AppendUint16(b, h.Instructions)
	b = binary.BigEndian.AppendUint16(b, h.DomainID)
	b = binary.BigEndian.AppendUint16(b, h.DSInstruction)
	b = binary.BigEndian.AppendUint16(b, h.DSFlags)
	if h.MX {
		return b, nil
	}
	for i := range p.Hops {
		m := p.Hops[i]
		m.Bits = h.Instructions
		start := len(b)
		b = AppendMetadata(b, &m, false)
		for len(b)-start < int(h.HopML)*4 {
			b = binary.BigEndian.AppendUint32(b, Invalid)
		}
	}
	return b, nil
}
