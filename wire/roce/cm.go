package roce

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"strconv"
)

// MAD and CM sizes in bytes.
const (
	MADLen       = 256 // a whole Management Datagram
	MADHeaderLen = 24  // MAD common header
	CMDataLen    = 232 // CM message after the MAD header
	IPCMLen      = 36  // rdma_cm IP-CM header at the start of REQ private data
)

// MAD header values of the Communication Manager.
const (
	MADBaseVersion = 1    // MAD base version
	MgmtClassCM    = 0x07 // management class of the CM
	CMClassVersion = 2    // CM class version
	MethodSend     = 0x03 // the only method CM messages use
)

// AttrID is the MAD attribute ID; for the CM it names the message.
type AttrID uint16

// CM attribute IDs.
const (
	AttrClassPortInfo AttrID = 0x0001
	AttrREQ           AttrID = 0x0010 // ConnectRequest
	AttrMRA           AttrID = 0x0011 // MessageReceiptAcknowledgement
	AttrREJ           AttrID = 0x0012 // ConnectReject
	AttrREP           AttrID = 0x0013 // ConnectReply
	AttrRTU           AttrID = 0x0014 // ReadyToUse
	AttrDREQ          AttrID = 0x0015 // DisconnectRequest
	AttrDREP          AttrID = 0x0016 // DisconnectReply
	AttrSIDRREQ       AttrID = 0x0017 // ServiceIDResolutionRequest
	AttrSIDRREP       AttrID = 0x0018 // ServiceIDResolutionResponse
	AttrLAP           AttrID = 0x0019 // LoadAlternatePath
	AttrAPR           AttrID = 0x001A // AlternatePathResponse
)

// String returns the CM name of the attribute, e.g. "REQ".
func (a AttrID) String() string {
	switch a {
	case AttrClassPortInfo:
		return "ClassPortInfo"
	case AttrREQ:
		return "REQ"
	case AttrMRA:
		return "MRA"
	case AttrREJ:
		return "REJ"
	case AttrREP:
		return "REP"
	case AttrRTU:
		return "RTU"
	case AttrDREQ:
		return "DREQ"
	case AttrDREP:
		return "DREP"
	case AttrSIDRREQ:
		return "SIDR_REQ"
	case AttrSIDRREP:
		return "SIDR_REP"
	case AttrLAP:
		return "LAP"
	case AttrAPR:
		return "APR"
	}
	return "attribute(0x" + strconv.FormatUint(uint64(a), 16) + ")"
}

// MADHeader is the 24-byte MAD common header. The 2 reserved bytes at
// offset 18 are ignored and sent as 0.
type MADHeader struct {
	BaseVersion   uint8
	MgmtClass     uint8
	ClassVersion  uint8
	Method        uint8  // bit 7 is the response bit R
	Status        uint16 // 0 for CM
	ClassSpecific uint16
	TID           uint64 // transaction ID; a REQ's is reused by REP, RTU and REJ
	AttrID        AttrID
	AttrMod       uint32 // newer Linux carries ECE data here in REQ/REP
}

// CMHeader returns the MAD header of a CM message sent with transaction
// ID tid.
func CMHeader(attr AttrID, tid uint64) MADHeader {
	return MADHeader{
		BaseVersion:  MADBaseVersion,
		MgmtClass:    MgmtClassCM,
		ClassVersion: CMClassVersion,
		Method:       MethodSend,
		TID:          tid,
		AttrID:       attr,
	}
}

// Decode fills h from the first MADHeaderLen bytes of b.
func (h *MADHeader) Decode(b []byte) error {
	if len(b) < MADHeaderLen {
		return ErrTruncated
	}
	h.BaseVersion = b[0]
	h.MgmtClass = b[1]
	h.ClassVersion = b[2]
	h.Method = b[3]
	h.Status = binary.BigEndian.Uint16(b[4:])
	h.ClassSpecific = binary.BigEndian.Uint16(b[6:])
	h.TID = binary.BigEndian.Uint64(b[8:])
	h.AttrID = AttrID(binary.BigEndian.Uint16(b[16:]))
	h.AttrMod = binary.BigEndian.Uint32(b[20:])
	return nil
}

// AppendTo appends the 24-byte encoding of h to b.
func (h *MADHeader) AppendTo(b []byte) []byte {
	b = append(b, h.BaseVersion, h.MgmtClass, h.ClassVersion, h.Method)
	b = binary.BigEndian.AppendUint16(b, h.Status)
	b = binary.BigEndian.AppendUint16(b, h.ClassSpecific)
	b = binary.BigEndian.AppendUint64(b, h.TID)
	b = binary.BigEndian.AppendUint16(b, uint16(h.AttrID))
	b = append(b, 0, 0)
	return binary.BigEndian.AppendUint32(b, h.AttrMod)
}

// CM is one Communication Management MAD: its header and, of the message
// fields, the one Header.AttrID names (the others are unspecified). It is
// meant to be reused for every MAD a worker receives.
type CM struct {
	Header MADHeader
	REQ    ConnectRequest
	MRA    MessageReceiptAck
	REJ    ConnectReject
	REP    ConnectReply
	RTU    ReadyToUse
	DREQ   DisconnectRequest
	DREP   DisconnectReply
}

// Decode parses a 256-byte MAD (the payload of a UD SEND Only to QP1). It
// returns ErrTruncated if mad is shorter than MADLen, ErrNotCM unless base
// version, class and class version are those of the CM, and
// ErrUnknownAttribute for attributes other than REQ, MRA, REJ, REP, RTU,
// DREQ and DREP. Bytes after MADLen are ignored.
func (m *CM) Decode(mad []byte) error {
	if len(mad) < MADLen {
		return ErrTruncated
	}
	m.Header.Decode(mad)
	h := &m.Header
	if h.BaseVersion != MADBaseVersion || h.MgmtClass != MgmtClassCM || h.ClassVersion != CMClassVersion {
		return ErrNotCM
	}
	d := mad[MADHeaderLen:MADLen]
	switch h.AttrID {
	case AttrREQ:
		return m.REQ.Decode(d)
	case AttrMRA:
		return m.MRA.Decode(d)
	case AttrREJ:
		return m.REJ.Decode(d)
	case AttrREP:
		return m.REP.Decode(d)
	case AttrRTU:
		return m.RTU.Decode(d)
	case AttrDREQ:
		return m.DREQ.Decode(d)
	case AttrDREP:
		return m.DREP.Decode(d)
	}
	return ErrUnknownAttribute
}

// AppendTo appends the 256-byte MAD: the header and the message named by
// Header.AttrID. For an attribute without a message type here the 232 data
// bytes are zero.
func (m *CM) AppendTo(b []byte) []byte {
	b = m.Header.AppendTo(b)
	switch m.Header.AttrID {
	case AttrREQ:
		return m.REQ.AppendTo(b)
	case AttrMRA:
		return m.MRA.AppendTo(b)
	case AttrREJ:
		return m.REJ.AppendTo(b)
	case AttrREP:
		return m.REP.AppendTo(b)
	case AttrRTU:
		return m.RTU.AppendTo(b)
	case AttrDREQ:
		return m.DREQ.AppendTo(b)
	case AttrDREP:
		return m.DREP.AppendTo(b)
	}
	b, _ = extend(b, CMDataLen)
	return b
}

// extend appends n zero bytes to b and returns b and the appended window.
func extend(b []byte, n int) (all, window []byte) {
	b = slices.Grow(b, n)
	l := len(b)
	b = b[:l+n]
	clear(b[l:])
	return b, b[l:]
}

// CMPacket returns the packet that carries a MAD on RoCEv2: UD SEND Only to
// QP1 with P_Key 0xFFFF and a DETH with the GSI Q_Key and source QP 1. The
// PSN of QP1 traffic is arbitrary. The packet references mad.
func CMPacket(psn uint32, mad []byte) Packet {
	return Packet{
		BTH:     BTH{Opcode: OpUDSendOnly, PKey: DefaultPKey, DestQP: GSIQP, PSN: psn & PSNMask},
		DETH:    DETH{QKey: GSIQKey, SrcQP: GSIQP},
		Payload: mad,
	}
}

// PortSpace is an rdma_cm port space: the middle of an IP-based service ID.
type PortSpace uint16

// Port spaces (RDMA_PS_*).
const (
	PortSpaceIPoIB PortSpace = 0x0002
	PortSpaceTCP   PortSpace = 0x0106 // RC connections (rdma_cm RDMA_PS_TCP)
	PortSpaceUDP   PortSpace = 0x0111
	PortSpaceIB    PortSpace = 0x013F
)

// ServiceID returns the IBA Annex A11 service ID of an IP port:
// 0x0000000001_PS_port, e.g. 0x00000000010604D2 for TCP port 1234.
func ServiceID(ps PortSpace, port uint16) uint64 {
	return uint64(ps)<<16 | uint64(port)
}

// ParseServiceID splits an IP-based service ID; ok is false if id is not
// of the form 0x00000000_PSPS_PORT.
func ParseServiceID(id uint64) (ps PortSpace, port uint16, ok bool) {
	if id>>32 != 0 {
		return 0, 0, false
	}
	ps = PortSpace(id >> 16)
	switch ps {
	case PortSpaceIPoIB, PortSpaceTCP, PortSpaceUDP, PortSpaceIB:
		return ps, uint16(id), true
	}
	return 0, 0, false
}

// GID is a 128-bit IBA global identifier; on RoCEv2 an IPv6 address or the
// IPv4-mapped form ::ffff:a.b.c.d.
type GID [16]byte

// GIDFromAddr returns the GID of an IP address.
func GIDFromAddr(a netip.Addr) GID { return a.As16() }

// Addr returns the IP address of g; IPv4-mapped GIDs become IPv4.
func (g GID) Addr() netip.Addr { return netip.AddrFrom16(g).Unmap() }

// IPCMHeader is the 36-byte header rdma_cm puts at the start of a REQ's
// private data (IBA Annex A11, Linux cma.c struct cma_hdr): version 0, the
// IP version, the active side's source port and both IP addresses.
type IPCMHeader struct {
	SrcPort uint16
	Src     netip.Addr // IPv4 or IPv6; decides the IP version field
	Dst     netip.Addr // same family as Src
}

// Decode fills h from the first IPCMLen bytes of b (REQ.PrivateData). It
// returns ErrTruncated, or ErrBadPrivateData for a CMA version other than 0
// or an IP version other than 4 or 6 (rdma_cm rejects those too).
func (h *IPCMHeader) Decode(b []byte) error {
	if len(b) < IPCMLen {
		return ErrTruncated
	}
	if b[0] != 0 {
		return ErrBadPrivateData
	}
	h.SrcPort = binary.BigEndian.Uint16(b[2:])
	switch b[1] >> 4 {
	case 4:
		h.Src = netip.AddrFrom4([4]byte(b[16:20]))
		h.Dst = netip.AddrFrom4([4]byte(b[32:36]))
	case 6:
		h.Src = netip.AddrFrom16([16]byte(b[4:20]))
		h.Dst = netip.AddrFrom16([16]byte(b[20:36]))
	default:
		return ErrBadPrivateData
	}
	return nil
}

// AppendTo appends the 36-byte encoding of h to b. IPv4 addresses (also
// IPv4-mapped ones) are written as 12 zero bytes and the address, with IP
// version 4; anything else as IPv6.
func (h *IPCMHeader) AppendTo(b []byte) []byte {
	s, d := h.Src.Unmap(), h.Dst.Unmap()
	ver := byte(0x60)
	if s.Is4() {
		ver = 0x40
	}
	b = append(b, 0, ver)
	b = binary.BigEndian.AppendUint16(b, h.SrcPort)
	for _, a := range [2]netip.Addr{s, d} {
		a16 := a.As16() // never panics, unlike As4
		if ver == 0x40 {
			b = append(b, zeros[:12]...)
			b = append(b, a16[12:]...)
		} else {
			b = append(b, a16[:]...)
		}
	}
	return b
}
