package roce

import (
	"encoding/binary"
	"strconv"
)

// CM messages (IBA Vol. 1 ch. 12, tables 106-113; Linux ibta_vol1_c12.h).
// Each Decode reads the CMDataLen bytes after the MAD header and each
// AppendTo appends exactly CMDataLen bytes. Offsets in comments are from the
// start of those bytes; "b0" is the most significant bit of a byte. Values
// wider than their field are truncated by AppendTo; reserved bits are
// ignored by Decode and sent as 0.

func get24(b []byte) uint32 { return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]) }

func put24(b []byte, v uint32) { b[0], b[1], b[2] = byte(v>>16), byte(v>>8), byte(v) }

func bit(v bool, mask byte) byte {
	if v {
		return mask
	}
	return 0
}

// Message codes in REJ.MessageRejected and MRA.MessageMRAed.
const (
	CMMsgREQ   = 0 // the REQ
	CMMsgREP   = 1 // the REP
	CMMsgOther = 2 // another message (LAP for MRA)
)

// CMPath is one path of a REQ (44 bytes: primary at offset 52, alternate
// at 96).
type CMPath struct {
	LocalLID        uint16 // 0xFFFF (permissive) on RoCE
	RemoteLID       uint16 // 0xFFFF (permissive) on RoCE
	LocalGID        GID
	RemoteGID       GID
	FlowLabel       uint32 // 20 bits
	PacketRate      uint8  // 6 bits
	TrafficClass    uint8
	HopLimit        uint8
	SL              uint8 // service level, 4 bits
	SubnetLocal     bool
	LocalACKTimeout uint8 // 5 bits: 4.096 µs × 2^n
}

func (p *CMPath) decode(b []byte) {
	p.LocalLID = binary.BigEndian.Uint16(b)
	p.RemoteLID = binary.BigEndian.Uint16(b[2:])
	p.LocalGID = GID(b[4:20])
	p.RemoteGID = GID(b[20:36])
	p.FlowLabel = binary.BigEndian.Uint32(b[36:]) >> 12
	p.PacketRate = b[39] & 0x3F
	p.TrafficClass = b[40]
	p.HopLimit = b[41]
	p.SL = b[42] >> 4
	p.SubnetLocal = b[42]&0x08 != 0
	p.LocalACKTimeout = b[43] >> 3
}

func (p *CMPath) encode(b []byte) {
	binary.BigEndian.PutUint16(b, p.LocalLID)
	binary.BigEndian.PutUint16(b[2:], p.RemoteLID)
	copy(b[4:20], p.LocalGID[:])
	copy(b[20:36], p.RemoteGID[:])
	binary.BigEndian.PutUint32(b[36:], p.FlowLabel<<12|uint32(p.PacketRate&0x3F))
	b[40] = p.TrafficClass
	b[41] = p.HopLimit
	b[42] = p.SL<<4 | bit(p.SubnetLocal, 0x08)
	b[43] = p.LocalACKTimeout << 3
}

// ConnectRequest is the REQ message (table 106), sent by the active side.
type ConnectRequest struct {
	LocalCommID             uint32 // 0: the sender's connection identifier
	ServiceID               uint64 // 8: see ServiceID
	LocalCAGUID             uint64 // 16
	LocalQKey               uint32 // 28: 0 for RC
	LocalQPN                uint32 // 32: 24 bits, the sender's QP
	ResponderResources      uint8  // 35: READ/atomic the sender accepts as responder
	LocalEECN               uint32 // 36: 24 bits
	InitiatorDepth          uint8  // 39: READ/atomic the sender keeps outstanding
	RemoteEECN              uint32 // 40: 24 bits
	RemoteCMResponseTimeout uint8  // 43 b0: 5 bits
	TransportServiceType    uint8  // 43 b5: 2 bits, 0 = RC
	EndToEndFlowControl     bool   // 43 b7
	StartingPSN             uint32 // 44: 24 bits, the PSN the sender expects to receive first
	LocalCMResponseTimeout  uint8  // 47 b0: 5 bits
	RetryCount              uint8  // 47 b5: 3 bits
	PKey                    uint16 // 48
	PathMTU                 MTU    // 50 b0: 4 bits
	RDCExists               bool   // 50 b4
	RNRRetryCount           uint8  // 50 b5: 3 bits, 7 = infinite
	MaxCMRetries            uint8  // 51 b0: 4 bits
	SRQ                     bool   // 51 b4
	ExtendedTransportType   uint8  // 51 b5: 3 bits
	Primary                 CMPath // 52
	Alternate               CMPath // 96: all zero when there is none
	SAPSupported            bool   // 139 b5
	PrivateData             [92]byte
}

// Decode fills m from a REQ's CMDataLen bytes.
func (m *ConnectRequest) Decode(b []byte) error {
	if len(b) < CMDataLen {
		return ErrTruncated
	}
	m.LocalCommID = binary.BigEndian.Uint32(b)
	m.ServiceID = binary.BigEndian.Uint64(b[8:])
	m.LocalCAGUID = binary.BigEndian.Uint64(b[16:])
	m.LocalQKey = binary.BigEndian.Uint32(b[28:])
	m.LocalQPN = get24(b[32:])
	m.ResponderResources = b[35]
	m.LocalEECN = get24(b[36:])
	m.InitiatorDepth = b[39]
	m.RemoteEECN = get24(b[40:])
	m.RemoteCMResponseTimeout = b[43] >> 3
	m.TransportServiceType = b[43] >> 1 & 3
	m.EndToEndFlowControl = b[43]&1 != 0
	m.StartingPSN = get24(b[44:])
	m.LocalCMResponseTimeout = b[47] >> 3
	m.RetryCount = b[47] & 7
	m.PKey = binary.BigEndian.Uint16(b[48:])
	m.PathMTU = MTU(b[50] >> 4)
	m.RDCExists = b[50]&0x08 != 0
	m.RNRRetryCount = b[50] & 7
	m.MaxCMRetries = b[51] >> 4
	m.SRQ = b[51]&0x08 != 0
	m.ExtendedTransportType = b[51] & 7
	m.Primary.decode(b[52:96])
	m.Alternate.decode(b[96:140])
	m.SAPSupported = b[139]&0x04 != 0
	m.PrivateData = [92]byte(b[140:232])
	return nil
}

// AppendTo appends the CMDataLen-byte encoding of m to b.
func (m *ConnectRequest) AppendTo(b []byte) []byte {
	b, d := extend(b, CMDataLen)
	binary.BigEndian.PutUint32(d, m.LocalCommID)
	binary.BigEndian.PutUint64(d[8:], m.ServiceID)
	binary.BigEndian.PutUint64(d[16:], m.LocalCAGUID)
	binary.BigEndian.PutUint32(d[28:], m.LocalQKey)
	put24(d[32:], m.LocalQPN)
	d[35] = m.ResponderResources
	put24(d[36:], m.LocalEECN)
	d[39] = m.InitiatorDepth
	put24(d[40:], m.RemoteEECN)
	d[43] = m.RemoteCMResponseTimeout<<3 | m.TransportServiceType&3<<1 | bit(m.EndToEndFlowControl, 1)
	put24(d[44:], m.StartingPSN)
	d[47] = m.LocalCMResponseTimeout<<3 | m.RetryCount&7
	binary.BigEndian.PutUint16(d[48:], m.PKey)
	d[50] = byte(m.PathMTU)<<4 | bit(m.RDCExists, 0x08) | m.RNRRetryCount&7
	d[51] = m.MaxCMRetries<<4 | bit(m.SRQ, 0x08) | m.ExtendedTransportType&7
	m.Primary.encode(d[52:96])
	m.Alternate.encode(d[96:140])
	d[139] |= bit(m.SAPSupported, 0x04)
	copy(d[140:], m.PrivateData[:])
	return b
}

// ConnectReply is the REP message (table 110), the passive side's answer.
type ConnectReply struct {
	LocalCommID         uint32 // 0: the replier's connection identifier
	RemoteCommID        uint32 // 4: the REQ's LocalCommID
	LocalQKey           uint32 // 8
	LocalQPN            uint32 // 12: 24 bits, the replier's QP
	LocalEECN           uint32 // 16: 24 bits
	StartingPSN         uint32 // 20: 24 bits, the PSN the replier expects to receive first
	ResponderResources  uint8  // 24
	InitiatorDepth      uint8  // 25
	TargetACKDelay      uint8  // 26 b0: 5 bits
	FailoverAccepted    uint8  // 26 b5: 2 bits
	EndToEndFlowControl bool   // 26 b7
	RNRRetryCount       uint8  // 27 b0: 3 bits
	SRQ                 bool   // 27 b3
	LocalCAGUID         uint64 // 28
	PrivateData         [196]byte
}

// Decode fills m from a REP's CMDataLen bytes.
func (m *ConnectReply) Decode(b []byte) error {
	if len(b) < CMDataLen {
		return ErrTruncated
	}
	m.LocalCommID = binary.BigEndian.Uint32(b)
	m.RemoteCommID = binary.BigEndian.Uint32(b[4:])
	m.LocalQKey = binary.BigEndian.Uint32(b[8:])
	m.LocalQPN = get24(b[12:])
	m.LocalEECN = get24(b[16:])
	m.StartingPSN = get24(b[20:])
	m.ResponderResources = b[24]
	m.InitiatorDepth = b[25]
	m.TargetACKDelay = b[26] >> 3
	m.FailoverAccepted = b[26] >> 1 & 3
	m.EndToEndFlowControl = b[26]&1 != 0
	m.RNRRetryCount = b[27] >> 5
	m.SRQ = b[27]&0x10 != 0
	m.LocalCAGUID = binary.BigEndian.Uint64(b[28:])
	m.PrivateData = [196]byte(b[36:232])
	return nil
}

// AppendTo appends the CMDataLen-byte encoding of m to b.
func (m *ConnectReply) AppendTo(b []byte) []byte {
	b, d := extend(b, CMDataLen)
	binary.BigEndian.PutUint32(d, m.LocalCommID)
	binary.BigEndian.PutUint32(d[4:], m.RemoteCommID)
	binary.BigEndian.PutUint32(d[8:], m.LocalQKey)
	put24(d[12:], m.LocalQPN)
	put24(d[16:], m.LocalEECN)
	put24(d[20:], m.StartingPSN)
	d[24] = m.ResponderResources
	d[25] = m.InitiatorDepth
	d[26] = m.TargetACKDelay<<3 | m.FailoverAccepted&3<<1 | bit(m.EndToEndFlowControl, 1)
	d[27] = m.RNRRetryCount<<5 | bit(m.SRQ, 0x10)
	binary.BigEndian.PutUint64(d[28:], m.LocalCAGUID)
	copy(d[36:], m.PrivateData[:])
	return b
}

// ReadyToUse is the RTU message (table 111) that completes the handshake.
type ReadyToUse struct {
	LocalCommID  uint32 // 0
	RemoteCommID uint32 // 4
	PrivateData  [224]byte
}

// Decode fills m from an RTU's CMDataLen bytes.
func (m *ReadyToUse) Decode(b []byte) error {
	if len(b) < CMDataLen {
		return ErrTruncated
	}
	m.LocalCommID = binary.BigEndian.Uint32(b)
	m.RemoteCommID = binary.BigEndian.Uint32(b[4:])
	m.PrivateData = [224]byte(b[8:232])
	return nil
}

// AppendTo appends the CMDataLen-byte encoding of m to b.
func (m *ReadyToUse) AppendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, m.LocalCommID)
	b = binary.BigEndian.AppendUint32(b, m.RemoteCommID)
	return append(b, m.PrivateData[:]...)
}

// RejectReason is the REJ reason code (Linux enum ib_cm_rej_reason).
type RejectReason uint16

// Reject reasons.
const (
	RejectNoQP                      RejectReason = 1
	RejectNoEEC                     RejectReason = 2
	RejectNoResources               RejectReason = 3
	RejectTimeout                   RejectReason = 4
	RejectUnsupported               RejectReason = 5
	RejectInvalidCommID             RejectReason = 6
	RejectInvalidCommInstance       RejectReason = 7
	RejectInvalidServiceID          RejectReason = 8 // no listener on the service ID
	RejectInvalidTransportType      RejectReason = 9
	RejectStaleConnection           RejectReason = 10
	RejectRDCNotExist               RejectReason = 11
	RejectInvalidGID                RejectReason = 12
	RejectInvalidLID                RejectReason = 13
	RejectInvalidSL                 RejectReason = 14
	RejectInvalidTrafficClass       RejectReason = 15
	RejectInvalidHopLimit           RejectReason = 16
	RejectInvalidPacketRate         RejectReason = 17
	RejectInvalidAltGID             RejectReason = 18
	RejectInvalidAltLID             RejectReason = 19
	RejectInvalidAltSL              RejectReason = 20
	RejectInvalidAltTrafficClass    RejectReason = 21
	RejectInvalidAltHopLimit        RejectReason = 22
	RejectInvalidAltPacketRate      RejectReason = 23
	RejectPortCMRedirect            RejectReason = 24
	RejectPortRedirect              RejectReason = 25
	RejectInvalidMTU                RejectReason = 26
	RejectInsufficientRespResources RejectReason = 27
	RejectConsumerDefined           RejectReason = 28 // the application said no
	RejectInvalidRNRRetry           RejectReason = 29
	RejectDuplicateLocalCommID      RejectReason = 30
	RejectInvalidClassVersion       RejectReason = 31
	RejectInvalidFlowLabel          RejectReason = 32
	RejectInvalidAltFlowLabel       RejectReason = 33
	RejectVendorOptionNotSupported  RejectReason = 35
)

var rejectNames = [...]string{
	1: "no QP", 2: "no EEC", 3: "no resources", 4: "timeout", 5: "unsupported",
	6: "invalid comm ID", 7: "invalid comm instance", 8: "invalid service ID",
	9: "invalid transport type", 10: "stale connection", 11: "RDC does not exist",
	12: "invalid GID", 13: "invalid LID", 14: "invalid SL", 15: "invalid traffic class",
	16: "invalid hop limit", 17: "invalid packet rate", 18: "invalid alt GID",
	19: "invalid alt LID", 20: "invalid alt SL", 21: "invalid alt traffic class",
	22: "invalid alt hop limit", 23: "invalid alt packet rate", 24: "port CM redirect",
	25: "port redirect", 26: "invalid MTU", 27: "insufficient responder resources",
	28: "consumer defined", 29: "invalid RNR retry", 30: "duplicate local comm ID",
	31: "invalid class version", 32: "invalid flow label", 33: "invalid alt flow label",
	35: "vendor option not supported",
}

// String returns the reason in words, e.g. "invalid service ID".
func (r RejectReason) String() string {
	if int(r) < len(rejectNames) && rejectNames[r] != "" {
		return rejectNames[r]
	}
	return "reject reason " + strconv.Itoa(int(r))
}

// ConnectReject is the REJ message (table 108).
type ConnectReject struct {
	LocalCommID     uint32       // 0
	RemoteCommID    uint32       // 4: 0 if unknown
	MessageRejected uint8        // 8 b0: 2 bits, CMMsgREQ, CMMsgREP or CMMsgOther
	RejectInfoLen   uint8        // 9 b0: 7 bits, bytes of ARI used
	Reason          RejectReason // 10
	ARI             [72]byte     // 12: additional reject information
	PrivateData     [148]byte    // 84
}

// Decode fills m from a REJ's CMDataLen bytes.
func (m *ConnectReject) Decode(b []byte) error {
	if len(b) < CMDataLen {
		return ErrTruncated
	}
	m.LocalCommID = binary.BigEndian.Uint32(b)
	m.RemoteCommID = binary.BigEndian.Uint32(b[4:])
	m.MessageRejected = b[8] >> 6
	m.RejectInfoLen = b[9] >> 1
	m.Reason = RejectReason(binary.BigEndian.Uint16(b[10:]))
	m.ARI = [72]byte(b[12:84])
	m.PrivateData = [148]byte(b[84:232])
	return nil
}

// AppendTo appends the CMDataLen-byte encoding of m to b.
func (m *ConnectReject) AppendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, m.LocalCommID)
	b = binary.BigEndian.AppendUint32(b, m.RemoteCommID)
	b = append(b, m.MessageRejected<<6, m.RejectInfoLen<<1)
	b = binary.BigEndian.AppendUint16(b, uint16(m.Reason))
	b = append(b, m.ARI[:]...)
	return append(b, m.PrivateData[:]...)
}

// MessageReceiptAck is the MRA message (table 107): "I got your message,
// give me more time".
type MessageReceiptAck struct {
	LocalCommID    uint32 // 0
	RemoteCommID   uint32 // 4
	MessageMRAed   uint8  // 8 b0: 2 bits, CMMsgREQ, CMMsgREP or CMMsgOther (LAP)
	ServiceTimeout uint8  // 9 b0: 5 bits, 4.096 µs × 2^n
	PrivateData    [222]byte
}

// Decode fills m from an MRA's CMDataLen bytes.
func (m *MessageReceiptAck) Decode(b []byte) error {
	if len(b) < CMDataLen {
		return ErrTruncated
	}
	m.LocalCommID = binary.BigEndian.Uint32(b)
	m.RemoteCommID = binary.BigEndian.Uint32(b[4:])
	m.MessageMRAed = b[8] >> 6
	m.ServiceTimeout = b[9] >> 3
	m.PrivateData = [222]byte(b[10:232])
	return nil
}

// AppendTo appends the CMDataLen-byte encoding of m to b.
func (m *MessageReceiptAck) AppendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, m.LocalCommID)
	b = binary.BigEndian.AppendUint32(b, m.RemoteCommID)
	b = append(b, m.MessageMRAed<<6, m.ServiceTimeout<<3)
	return append(b, m.PrivateData[:]...)
}

// DisconnectRequest is the DREQ message (table 112).
type DisconnectRequest struct {
	LocalCommID  uint32 // 0
	RemoteCommID uint32 // 4
	RemoteQPN    uint32 // 8: 24 bits, the receiver's QP (or EECN)
	PrivateData  [220]byte
}

// Decode fills m from a DREQ's CMDataLen bytes.
func (m *DisconnectRequest) Decode(b []byte) error {
	if len(b) < CMDataLen {
		return ErrTruncated
	}
	m.LocalCommID = binary.BigEndian.Uint32(b)
	m.RemoteCommID = binary.BigEndian.Uint32(b[4:])
	m.RemoteQPN = get24(b[8:])
	m.PrivateData = [220]byte(b[12:232])
	return nil
}

// AppendTo appends the CMDataLen-byte encoding of m to b.
func (m *DisconnectRequest) AppendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, m.LocalCommID)
	b = binary.BigEndian.AppendUint32(b, m.RemoteCommID)
	b = binary.BigEndian.AppendUint32(b, m.RemoteQPN<<8)
	return append(b, m.PrivateData[:]...)
}

// DisconnectReply is the DREP message (table 113).
type DisconnectReply struct {
	LocalCommID  uint32 // 0
	RemoteCommID uint32 // 4
	PrivateData  [224]byte
}

// Decode fills m from a DREP's CMDataLen bytes.
func (m *DisconnectReply) Decode(b []byte) error {
	if len(b) < CMDataLen {
		return ErrTruncated
	}
	m.LocalCommID = binary.BigEndian.Uint32(b)
	m.RemoteCommID = binary.BigEndian.Uint32(b[4:])
	m.PrivateData = [224]byte(b[8:232])
	return nil
}

// AppendTo appends the CMDataLen-byte encoding of m to b.
func (m *DisconnectReply) AppendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, m.LocalCommID)
	b = binary.BigEndian.AppendUint32(b, m.RemoteCommID)
	return append(b, m.PrivateData[:]...)
}
