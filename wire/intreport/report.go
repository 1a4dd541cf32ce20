package intreport

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Sizes and constants of the Telemetry Report Format v2.0.
const (
	Version         = 2    // the Ver of the Telemetry Report Group Header
	GroupHeaderLen  = 8    // Telemetry Report Group Header
	ReportHeaderLen = 4    // the first word of an Individual Report
	INTFixedLen     = 8    // RepMdBits, Domain Specific ID, DSMdBits, DSMdstatus
	LengthToEnd     = 0xFF // Report Length: the report extends to the end of the packet
	MaxSeq          = 1<<22 - 1
	MaxHWID         = 1<<6 - 1
)

// RepType is an Individual Report's type.
type RepType uint8

// Report types.
const (
	RepInnerOnly RepType = 0
	RepINT       RepType = 1
	RepIOAM      RepType = 2 // its main contents are not defined by version 2.0
)

// InType says what follows an Individual Report's main contents.
type InType uint8

// Inner types.
const (
	InNone           InType = 0
	InTLV            InType = 1
	InDomainSpecific InType = 2
	InEthernet       InType = 3
	InIPv4           InType = 4
	InIPv6           InType = 5
)

// GroupHeader is the Telemetry Report Group Header.
type GroupHeader struct {
	HWID   uint8  // hardware subsystem within the node, 6 bits
	Seq    uint32 // 22 bits, per (node, hw_id) and destination
	NodeID uint32 // the node that generated the reports
}

// Decode reads the group header at the start of b.
func (g *GroupHeader) Decode(b []byte) error {
	if len(b) < GroupHeaderLen {
		return fmt.Errorf("%w: %d bytes, a group header takes %d", ErrTruncated, len(b), GroupHeaderLen)
	}
	w := binary.BigEndian.Uint32(b)
	if v := w >> 28; v != Version {
		return fmt.Errorf("%w: %d", ErrVersion, v)
	}
	g.HWID, g.Seq = uint8(w>>22)&MaxHWID, w&MaxSeq
	g.NodeID = binary.BigEndian.Uint32(b[4:])
	return nil
}

// AppendTo appends the group header (version 2) to b.
func (g GroupHeader) AppendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, Version<<28|uint32(g.HWID&MaxHWID)<<22|g.Seq&MaxSeq)
	return binary.BigEndian.AppendUint32(b, g.NodeID)
}

// Report is one Individual Report.
type Report struct {
	Type   RepType
	Inner  InType
	Length uint8 // Report Length field, 4-byte words (LengthToEnd: to the end of the packet)

	Dropped      bool // D
	Congested    bool // Q
	Tracked      bool // F
	Intermediate bool // I

	// Report type INT: the main contents.
	DomainID   uint16
	DSMdBits   uint16
	DSMdStatus uint16
	Metadata   Metadata // the baseline metadata; Metadata.Bits is RepMdBits
	DSMetadata []byte   // the domain specific metadata (aliases the packet)

	// Contents are the inner contents (a truncated packet, TLVs or domain
	// specific extension data, as Inner says), aliasing the packet.
	Contents []byte
}

// Decoder walks the Individual Reports of one telemetry report packet. It
// allocates nothing; the reports it fills alias the packet.
type Decoder struct {
	Group GroupHeader
	rest  []byte
}

// Reset starts decoding pkt (a UDP payload): it reads the group header.
func (d *Decoder) Reset(pkt []byte) error {
	d.rest = nil
	if err := d.Group.Decode(pkt); err != nil {
		return err
	}
	d.rest = pkt[GroupHeaderLen:]
	if len(d.rest) == 0 {
		return fmt.Errorf("%w: a group header without reports", ErrTruncated)
	}
	return nil
}

// Next decodes the next Individual Report into r. It returns io.EOF after
// the last one. An error in a report whose length is sound leaves the
// decoder at the next report (the caller counts it and goes on); an error
// in a length ends the packet.
func (d *Decoder) Next(r *Report) error {
	b := d.rest
	if len(b) == 0 {
		return io.EOF
	}
	if len(b) < ReportHeaderLen {
		d.rest = nil
		return fmt.Errorf("%w: %d bytes left, an individual report header takes %d", ErrTruncated, len(b), ReportHeaderLen)
	}
	w := binary.BigEndian.Uint32(b)
	*r = Report{
		Type: RepType(w >> 28), Inner: InType(w>>24) & 0xF, Length: uint8(w >> 16),
		Dropped: w&(1<<7) != 0, Congested: w&(1<<6) != 0, Tracked: w&(1<<5) != 0, Intermediate: w&(1<<4) != 0,
	}
	md := int(uint8(w>>8)) * 4
	var body []byte
	if r.Length == LengthToEnd {
		body, d.rest = b[ReportHeaderLen:], nil
	} else {
		n := int(r.Length) * 4
		if n > len(b)-ReportHeaderLen {
			d.rest = nil
			return fmt.Errorf("%w: %d bytes, %d left", ErrReportLength, n, len(b)-ReportHeaderLen)
		}
		body, d.rest = b[ReportHeaderLen:ReportHeaderLen+n], b[ReportHeaderLen+n:]
	}
	if r.Inner > InIPv6 {
		return fmt.Errorf("%w: %d", ErrInType, r.Inner)
	}
	switch r.Type {
	case RepInnerOnly:
		// MD Length is ignored on reception.
		r.Contents = body
		return nil
	case RepINT:
	case RepIOAM:
		return fmt.Errorf("%w: IOAM reports (their format is not defined in version 2.0)", ErrUnsupported)
	default:
		return fmt.Errorf("%w: %d", ErrRepType, r.Type)
	}
	if len(body) < INTFixedLen+md {
		return fmt.Errorf("%w: %d bytes of report, %d of them INT main contents", ErrReportLength, len(body), INTFixedLen+md)
	}
	repMd := binary.BigEndian.Uint16(body)
	r.DomainID = binary.BigEndian.Uint16(body[2:])
	r.DSMdBits = binary.BigEndian.Uint16(body[4:])
	r.DSMdStatus = binary.BigEndian.Uint16(body[6:])
	base := MetadataLen(repMd)
	if base > md || r.DSMdBits == 0 && base != md || r.DSMdBits != 0 && base == md {
		return fmt.Errorf("%w: MD Length %d bytes, RepMdBits %#04x select %d, DSMdBits %#04x", ErrMDLength, md, repMd, base, r.DSMdBits)
	}
	decodeMetadata(&r.Metadata, repMd, body[INTFixedLen:INTFixedLen+base], true)
	r.DSMetadata = body[INTFixedLen+base : INTFixedLen+md : INTFixedLen+md]
	r.Contents = body[INTFixedLen+md:]
	return nil
}

// AppendReport appends one Individual Report: the header (Report Length and
// MD Length computed from the rest), for RepINT the main contents from r
// (r.Metadata.Bits is RepMdBits) and r.DSMetadata, then r.Contents, which
// must be a whole number of 4-byte words (pad a truncated packet). A report
// longer than 254 words is written with Report Length 0xFF and must then be
// the packet's last.
func AppendReport(b []byte, r *Report) ([]byte, error) {
	if len(r.Contents)%4 != 0 || len(r.DSMetadata)%4 != 0 {
		return b, fmt.Errorf("intreport: contents of %d bytes and DS metadata of %d: want multiples of 4", len(r.Contents), len(r.DSMetadata))
	}
	md, main := 0, 0
	if r.Type == RepINT {
		md = MetadataLen(r.Metadata.Bits) + len(r.DSMetadata)
		main = INTFixedLen + md
	}
	if md/4 > 0xFF {
		return b, fmt.Errorf("intreport: %d bytes of metadata, at most %d", md, 0xFF*4)
	}
	words := (main + len(r.Contents)) / 4
	if words >= LengthToEnd {
		words = LengthToEnd
	}
	w := uint32(r.Type&0xF)<<28 | uint32(r.Inner&0xF)<<24 | uint32(words)<<16 | uint32(md/4)<<8
	for i, f := range []bool{r.Dropped, r.Congested, r.Tracked, r.Intermediate} {
		if f {
			w |= 1 << (7 - i)
		}
	}
	b = binary.BigEndian.AppendUint32(b, w)
	if r.Type == RepINT {
		b = binary.BigEndian.AppendUint16(b, r.Metadata.Bits)
		b = binary.BigEndian.AppendUint16(b, r.DomainID)
		b = binary.BigEndian.AppendUint16(b, r.DSMdBits)
		b = binary.BigEndian.AppendUint16(b, r.DSMdStatus)
		b = AppendMetadata(b, &r.Metadata, true)
		b = append(b, r.DSMetadata...)
	}
	return append(b, r.Contents...), nil
}
