package intreport

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// INT shim and header constants (INT v2.1, "INT over TCP/UDP").
const (
	ShimLen        = 4  // the INT shim header for TCP/UDP
	MDHeaderLen    = 12 // the INT-MD metadata header
	MXHeaderLen    = 12 // the INT-MX header
	ShimTypeMD     = 1  // INT-MD header follows the shim
	ShimTypeDest   = 2  // destination header (not defined in v2.1)
	ShimTypeMX     = 3  // INT-MX header follows the shim
	NPTNone        = 0  // INT signalled by DSCP or a probe marker
	NPTUDPPayload  = 1  // INT after an existing UDP header; the shim holds the original destination port
	NPTL4Header    = 2  // INT in a new UDP header; the original L4 header follows the stack, its protocol in the shim
	MaxHops        = 255
	ipProtoTCP     = 6
	ipProtoUDP     = 17
	ipProtoAH      = 51
	etherTypeIPv4  = 0x0800
	etherTypeIPv6  = 0x86DD
	etherTypeVLAN  = 0x8100
	etherTypeQinQ  = 0x88A8
	maxVLANTags    = 2
	maxIPv6ExtHdrs = 8 // RFC 8200 §4.1: each type once, destination options twice, and AH
)

// Flow is the 5-tuple of a truncated packet.
type Flow struct {
	Src, Dst         netip.Addr
	SrcPort, DstPort uint16
	Proto            uint8
}

// MDHeader is an INT-MD (or, with MX set, INT-MX) header.
type MDHeader struct {
	MX            bool  // an INT-MX header: no stack, each node reports
	Discard       bool  // D
	HopExceeded   bool  // E
	MTUExceeded   bool  // M
	HopML         uint8 // per-hop metadata length, 4-byte words
	RemainingHops uint8
	Instructions  uint16 // Instruction Bitmap
	DomainID      uint16
	DSInstruction uint16
	DSFlags       uint16
}

// Detect says how a truncated packet signals INT over TCP/UDP (INT v2.1
// lists three options; a domain uses one).
type Detect struct {
	// UDPPorts are the INT_TBD destination ports that mark INT after a UDP
	// header. Empty: any UDP or TCP payload that holds a well-formed INT
	// shim and header (type, version and lengths all consistent) is taken
	// as INT.
	UDPPorts []uint16
	// DSCPMask and DSCPValue mark INT after a TCP or UDP header by the IPv4
	// DSCP / IPv6 traffic class (DSCP & DSCPMask == DSCPValue); a zero
	// mask does not use the DSCP.
	DSCPMask, DSCPValue uint8
}

// Inner is what a report's truncated packet says: its flow, its TTL (the
// outermost IP header's TTL or hop limit) and the INT header and metadata
// stack it carries, if any.
type Inner struct {
	Flow    Flow
	HasFlow bool
	TTL     uint8
	HasINT  bool
	INT     MDHeader
	// Stack is the INT-MD metadata stack, aliasing the packet: Hops entries
	// of INT.HopML words each, the most recent hop first.
	Stack []byte
	Hops  int
}

// Hop decodes hop i of the stack (0 is the hop that pushed last, the one
// nearest the reporting node) into m.
func (in *Inner) Hop(i int, m *Metadata) {
	n := int(in.INT.HopML) * 4
	b := in.Stack[i*n : (i+1)*n]
	bits := in.INT.Instructions
	if MetadataLen(bits) > n {
		// Cannot happen: Parse checked it.
		*m = Metadata{}
		return
	}
	decodeMetadata(m, bits, b[:MetadataLen(bits)], false)
}

// ParseInner reads a report's inner contents of type t: a truncated
// Ethernet, IPv4 or IPv6 packet, or TLVs holding one. It fills in; inner
// contents that carry no packet (none, domain specific data) leave in
// without a flow.
func ParseInner(t InType, b []byte, det *Detect, in *Inner) error {
	*in = Inner{}
	switch t {
	case InNone, InDomainSpecific:
		return nil
	case InEthernet:
		return in.ethernet(b, det)
	case InIPv4:
		return in.ipOf(4, b, det)
	case InIPv6:
		return in.ipOf(6, b, det)
	case InTLV:
		for len(b) > 0 {
			if len(b) < 4 {
				return fmt.Errorf("%w: %d bytes left", ErrTLV, len(b))
			}
			typ, n := b[0]>>4, int(b[1])*4
			if n > len(b)-4 {
				return fmt.Errorf("%w: TLV of %d bytes, %d left", ErrTLV, n, len(b)-4)
			}
			data := b[4 : 4+n]
			switch typ {
			case 1:
				return in.ethernet(data, det)
			case 2:
				return in.ipOf(4, data, det)
			case 3:
				return in.ipOf(6, data, det)
			}
			b = b[4+n:]
		}
		return nil
	}
	return fmt.Errorf("%w: %d", ErrInType, t)
}

func (in *Inner) ethernet(b []byte, det *Detect) error {
	if len(b) < 14 {
		return fmt.Errorf("%w: Ethernet header of %d bytes", ErrInner, len(b))
	}
	et, at := binary.BigEndian.Uint16(b[12:]), 14
	for tags := 0; et == etherTypeVLAN || et == etherTypeQinQ; tags++ {
		if tags == maxVLANTags || len(b) < at+4 {
			return fmt.Errorf("%w: VLAN tags", ErrInner)
		}
		et, at = binary.BigEndian.Uint16(b[at+2:]), at+4
	}
	switch et {
	case etherTypeIPv4:
		return in.ipOf(4, b[at:], det)
	case etherTypeIPv6:
		return in.ipOf(6, b[at:], det)
	}
	return fmt.Errorf("%w: ethertype %#04x", ErrUnsupported, et)
}

// ipOf reads an IP header that its container (the inner type, TLV type or
// ethertype) says is of version v: a header of the other version is
// malformed, not read as what it claims.
func (in *Inner) ipOf(v byte, b []byte, det *Detect) error {
	if len(b) > 0 && b[0]>>4 != v {
		return fmt.Errorf("%w: IPv%d contents with an IP version %d header", ErrInner, v, b[0]>>4)
	}
	return in.ip(b, det)
}

// ip reads an IPv4 or IPv6 header (by its version nibble) and what follows.
// A fragment other than the first has no L4 header: its flow has no ports
// and no INT is looked for.
func (in *Inner) ip(b []byte, det *Detect) error {
	if len(b) < 1 {
		return fmt.Errorf("%w: empty IP packet", ErrInner)
	}
	var proto, dscp uint8
	var l4 []byte
	later := false // a fragment other than the first
	switch b[0] >> 4 {
	case 4:
		if len(b) < 20 {
			return fmt.Errorf("%w: IPv4 header of %d bytes", ErrInner, len(b))
		}
		ihl := int(b[0]&0xF) * 4
		if ihl < 20 || ihl > len(b) {
			return fmt.Errorf("%w: IPv4 IHL %d", ErrInner, ihl)
		}
		dscp, in.TTL, proto = b[1]>>2, b[8], b[9]
		later = binary.BigEndian.Uint16(b[6:])&0x1FFF != 0
		in.Flow.Src = netip.AddrFrom4([4]byte(b[12:16]))
		in.Flow.Dst = netip.AddrFrom4([4]byte(b[16:20]))
		l4 = b[ihl:]
		if proto == ipProtoAH && !later { // IPsec AH (RFC 4302): skipped as IPv6 skips it
			if len(l4) < 8 || (int(l4[1])+2)*4 > len(l4) {
				return fmt.Errorf("%w: authentication header", ErrInner)
			}
			proto, l4 = l4[0], l4[(int(l4[1])+2)*4:]
		}
	case 6:
		if len(b) < 40 {
			return fmt.Errorf("%w: IPv6 header of %d bytes", ErrInner, len(b))
		}
		dscp = uint8(binary.BigEndian.Uint16(b)>>4) >> 2
		proto, in.TTL = b[6], b[7]
		in.Flow.Src = netip.AddrFrom16([16]byte(b[8:24]))
		in.Flow.Dst = netip.AddrFrom16([16]byte(b[24:40]))
		l4 = b[40:]
		for i := 0; i < maxIPv6ExtHdrs && isIPv6Ext(proto) && !later; i++ {
			if len(l4) < 8 {
				return fmt.Errorf("%w: IPv6 extension header", ErrInner)
			}
			n := 8 + int(l4[1])*8
			switch proto {
			case 44: // fragment header: fixed 8 bytes
				n = 8
				later = later || binary.BigEndian.Uint16(l4[2:])>>3 != 0
			case ipProtoAH: // its length counts 4-byte words, minus 2 (RFC 4302)
				n = (int(l4[1]) + 2) * 4
			}
			if n > len(l4) {
				return fmt.Errorf("%w: IPv6 extension header of %d bytes", ErrInner, n)
			}
			proto, l4 = l4[0], l4[n:]
		}
	default:
		return fmt.Errorf("%w: IP version %d", ErrInner, b[0]>>4)
	}
	in.Flow.Proto, in.HasFlow = proto, true
	if later {
		return nil
	}
	return in.l4(proto, dscp, l4, det)
}

// isIPv6Ext reports the extension headers skipped to reach the L4 header:
// hop-by-hop, routing, fragment, authentication (AH) and destination
// options. ESP is not: what follows it is encrypted.
func isIPv6Ext(p uint8) bool { return p == 0 || p == 43 || p == 44 || p == ipProtoAH || p == 60 }

// l4 reads the TCP or UDP header (the truncated packet may end before it:
// then the flow has no ports) and an INT shim and header after it.
func (in *Inner) l4(proto, dscp uint8, b []byte, det *Detect) error {
	var hdr int
	switch proto {
	case ipProtoUDP:
		hdr = 8
	case ipProtoTCP:
		if len(b) < 20 {
			return nil
		}
		hdr = int(b[12]>>4) * 4
		if hdr < 20 {
			return fmt.Errorf("%w: TCP data offset %d", ErrInner, hdr)
		}
	default:
		return nil
	}
	if len(b) < 4 {
		return nil
	}
	in.Flow.SrcPort, in.Flow.DstPort = binary.BigEndian.Uint16(b), binary.BigEndian.Uint16(b[2:])
	if len(b) < hdr {
		return nil
	}
	payload := b[hdr:]
	// Once a marking is configured, only packets it marks carry INT: a UDP
	// destination port marks UDP packets only, so with ports alone a TCP
	// packet is never INT.
	marked, explicit := false, false
	if det != nil {
		if det.DSCPMask != 0 {
			explicit = true
			marked = dscp&det.DSCPMask == det.DSCPValue
		}
		if len(det.UDPPorts) > 0 {
			explicit = true
			for _, p := range det.UDPPorts {
				marked = marked || proto == ipProtoUDP && p == in.Flow.DstPort
			}
		}
	}
	if explicit && !marked {
		return nil
	}
	n, err := in.int(payload, proto, !explicit)
	if err != nil || n == 0 {
		return err
	}
	return nil
}

// int reads an INT shim and header at the start of b. heuristic: nothing
// marked the packet as INT, so a payload that does not look exactly like
// INT is taken as payload, not as an error. It returns the bytes of INT
// read (0: none).
func (in *Inner) int(b []byte, proto uint8, heuristic bool) (int, error) {
	bad := func(format string, a ...any) (int, error) {
		if heuristic {
			return 0, nil
		}
		return 0, fmt.Errorf("%w: "+format, append([]any{ErrINTHeader}, a...)...)
	}
	if len(b) < ShimLen {
		return bad("%d bytes for the shim", len(b))
	}
	typ, npt, words := b[0]>>4, b[0]>>2&3, int(b[1])
	total := words * 4
	switch {
	case typ != ShimTypeMD && typ != ShimTypeMX:
		return bad("shim type %d", typ)
	case npt > NPTL4Header || proto == ipProtoTCP && npt != NPTNone:
		return bad("next protocol type %d", npt)
	case total < MDHeaderLen || total > len(b)-ShimLen:
		return bad("INT length %d words with %d bytes left", words, len(b)-ShimLen)
	}
	h := b[ShimLen:]
	w := binary.BigEndian.Uint32(h)
	if w>>28 != 2 {
		return bad("INT header version %d", w>>28)
	}
	md := MDHeader{
		MX:            typ == ShimTypeMX,
		Discard:       w&(1<<27) != 0,
		Instructions:  binary.BigEndian.Uint16(h[4:]),
		DomainID:      binary.BigEndian.Uint16(h[6:]),
		DSInstruction: binary.BigEndian.Uint16(h[8:]),
		DSFlags:       binary.BigEndian.Uint16(h[10:]),
	}
	var stack []byte
	hops := 0
	if !md.MX {
		md.HopExceeded, md.MTUExceeded = w&(1<<26) != 0, w&(1<<25) != 0
		md.HopML, md.RemainingHops = uint8(w>>8)&0x1F, uint8(w)
		stack = h[MDHeaderLen:total]
		n := int(md.HopML) * 4
		switch {
		case len(stack) > 0 && n == 0:
			return bad("a stack of %d bytes with Hop ML 0", len(stack))
		case n != 0 && MetadataLen(md.Instructions) > n:
			return bad("Hop ML %d words, the instructions take %d bytes", md.HopML, MetadataLen(md.Instructions))
		case n != 0 && len(stack)%n != 0 && md.DomainID == 0 && md.DSInstruction == 0 && md.DSFlags == 0:
			// Only source-only domain specific metadata may make the stack
			// longer than whole hops, and without domain fields there is
			// none.
			if heuristic {
				return 0, nil
			}
			return 0, fmt.Errorf("%w: %d bytes, hops of %d", ErrINTStack, len(stack), n)
		}
		if n != 0 {
			// With domain fields, what is left past whole hops is the
			// source's source-only domain specific metadata (INT v2.1), at
			// the bottom of the stack: not a hop. (Source-only metadata of
			// a multiple of Hop ML reads as hops: its size is the domain's.)
			hops = len(stack) / n
			stack = stack[:hops*n]
		}
	} else if total != MXHeaderLen && heuristic {
		return 0, nil
	}
	in.HasINT, in.INT, in.Stack, in.Hops = true, md, stack, hops
	// Restore the original flow fields the INT source moved into the shim.
	rest := b[ShimLen+total:]
	switch npt {
	case NPTUDPPayload:
		in.Flow.DstPort = binary.BigEndian.Uint16(b[2:])
	case NPTL4Header:
		in.Flow.Proto = b[3]
		in.Flow.SrcPort, in.Flow.DstPort = 0, 0
		if (in.Flow.Proto == ipProtoTCP || in.Flow.Proto == ipProtoUDP) && len(rest) >= 4 {
			in.Flow.SrcPort, in.Flow.DstPort = binary.BigEndian.Uint16(rest), binary.BigEndian.Uint16(rest[2:])
		}
	}
	return ShimLen + total, nil
}
