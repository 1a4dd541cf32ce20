package roce

import (
	"encoding/binary"
	"strconv"
)

// Header and field sizes in bytes.
const (
	BTHLen          = 12 // Base Transport Header
	RETHLen         = 16 // RDMA Extended Transport Header
	AtomicETHLen    = 28 // Atomic Extended Transport Header
	AETHLen         = 4  // ACK Extended Transport Header
	AtomicAckETHLen = 8  // Atomic ACK Extended Transport Header
	ImmDtLen        = 4  // Immediate Data
	DETHLen         = 8  // Datagram Extended Transport Header
	CNPReservedLen  = 16 // reserved bytes after the BTH of a CNP
	ICRCLen         = 4  // invariant CRC trailer
)

// Well-known values.
const (
	Port        = 4791       // UDP destination port of every RoCEv2 packet (IANA "roce")
	DefaultPKey = 0xFFFF     // default partition key, full member
	GSIQP       = 1          // QP number of the General Services Interface (CM MADs)
	GSIQKey     = 0x80010000 // Q_Key of QP1; MADs with another Q_Key are dropped
	PSNMask     = 1<<24 - 1  // PSNs, QP numbers and MSNs are 24-bit
)

// ComparePSN orders two 24-bit PSNs modulo 2^24: it returns -1 if a comes
// before b, 0 if they are equal and +1 if a comes after b. The 2^23 PSNs
// behind b count as before it, the 2^23 ahead of it as after (rxe psn_compare).
func ComparePSN(a, b uint32) int {
	d := int32((a - b) << 8)
	switch {
	case d < 0:
		return -1
	case d > 0:
		return 1
	}
	return 0
}

// Opcode is the BTH opcode: bits 7-5 select the transport (000 RC, 011 UD,
// 100 CNP), bits 4-0 the operation.
type Opcode uint8

// The opcodes this package encodes and decodes (IBA Vol. 1 ch. 9,
// include/rdma/ib_pack.h). Every other opcode is rejected with
// ErrUnknownOpcode.
const (
	OpSendFirst          Opcode = 0x00 // RC SEND First
	OpSendMiddle         Opcode = 0x01 // RC SEND Middle
	OpSendLast           Opcode = 0x02 // RC SEND Last
	OpSendLastImm        Opcode = 0x03 // RC SEND Last with Immediate
	OpSendOnly           Opcode = 0x04 // RC SEND Only
	OpSendOnlyImm        Opcode = 0x05 // RC SEND Only with Immediate
	OpWriteFirst         Opcode = 0x06 // RC RDMA WRITE First
	OpWriteMiddle        Opcode = 0x07 // RC RDMA WRITE Middle
	OpWriteLast          Opcode = 0x08 // RC RDMA WRITE Last
	OpWriteLastImm       Opcode = 0x09 // RC RDMA WRITE Last with Immediate
	OpWriteOnly          Opcode = 0x0A // RC RDMA WRITE Only
	OpWriteOnlyImm       Opcode = 0x0B // RC RDMA WRITE Only with Immediate
	OpReadRequest        Opcode = 0x0C // RC RDMA READ Request
	OpReadResponseFirst  Opcode = 0x0D // RC RDMA READ Response First
	OpReadResponseMiddle Opcode = 0x0E // RC RDMA READ Response Middle
	OpReadResponseLast   Opcode = 0x0F // RC RDMA READ Response Last
	OpReadResponseOnly   Opcode = 0x10 // RC RDMA READ Response Only
	OpACK                Opcode = 0x11 // RC ACKNOWLEDGE (ACK, RNR NAK or NAK)
	OpAtomicACK          Opcode = 0x12 // RC ATOMIC ACKNOWLEDGE
	OpCompareSwap        Opcode = 0x13 // RC COMPARE_SWAP
	OpFetchAdd           Opcode = 0x14 // RC FETCH_ADD
	OpUDSendOnly         Opcode = 0x64 // UD SEND Only (CM MADs on QP1)
	OpCNP                Opcode = 0x81 // RoCEv2 Congestion Notification Packet
)

// Headers is a set of extended transport headers.
type Headers uint8

// Extended transport headers, in the order they follow the BTH when several
// are present (RETH before ImmDt; AETH before AtomicAckETH).
const (
	HdrDETH         Headers = 1 << iota // Datagram ETH (UD)
	HdrRETH                             // RDMA ETH
	HdrAtomicETH                        // Atomic ETH
	HdrAETH                             // ACK ETH
	HdrAtomicAckETH                     // Atomic ACK ETH
	HdrImmDt                            // Immediate Data
	HdrCNPReserved                      // the 16 reserved bytes of a CNP
)

// PayloadRule says how many payload bytes an opcode may carry, in terms of
// the path MTU (PMTU counts payload only, without pad).
type PayloadRule uint8

// Payload rules (IBA ch. 9.7, spec/rocev2.md §6).
const (
	PayloadNone PayloadRule = iota // no payload at all
	PayloadPMTU                    // exactly PMTU bytes (FIRST, MIDDLE)
	PayloadLast                    // 1..PMTU bytes (LAST)
	PayloadOnly                    // 0..PMTU bytes (ONLY)
)

// Allows reports whether a payload of n bytes obeys the rule for path MTU m.
// The decoder does not apply it (it knows no PMTU); a responder that finds a
// violation answers NAK invalid request.
func (r PayloadRule) Allows(n int, m MTU) bool {
	pmtu := m.Bytes()
	switch r {
	case PayloadNone:
		return n == 0
	case PayloadPMTU:
		return n == pmtu && pmtu > 0
	case PayloadLast:
		return n >= 1 && n <= pmtu
	case PayloadOnly:
		return n >= 0 && n <= pmtu
	}
	return false
}

// OpcodeInfo describes what follows the BTH for one opcode.
type OpcodeInfo struct {
	Name      string      // Wireshark-style name, e.g. "RDMA WRITE Only"
	Headers   Headers     // extended headers after the BTH
	HeaderLen int         // BTH plus extended headers, in bytes
	Payload   PayloadRule // payload size rule
}

var opcodes = [256]OpcodeInfo{
	OpSendFirst:          {"SEND First", 0, BTHLen, PayloadPMTU},
	OpSendMiddle:         {"SEND Middle", 0, BTHLen, PayloadPMTU},
	OpSendLast:           {"SEND Last", 0, BTHLen, PayloadLast},
	OpSendLastImm:        {"SEND Last with Immediate", HdrImmDt, BTHLen + ImmDtLen, PayloadLast},
	OpSendOnly:           {"SEND Only", 0, BTHLen, PayloadOnly},
	OpSendOnlyImm:        {"SEND Only with Immediate", HdrImmDt, BTHLen + ImmDtLen, PayloadOnly},
	OpWriteFirst:         {"RDMA WRITE First", HdrRETH, BTHLen + RETHLen, PayloadPMTU},
	OpWriteMiddle:        {"RDMA WRITE Middle", 0, BTHLen, PayloadPMTU},
	OpWriteLast:          {"RDMA WRITE Last", 0, BTHLen, PayloadLast},
	OpWriteLastImm:       {"RDMA WRITE Last with Immediate", HdrImmDt, BTHLen + ImmDtLen, PayloadLast},
	OpWriteOnly:          {"RDMA WRITE Only", HdrRETH, BTHLen + RETHLen, PayloadOnly},
	OpWriteOnlyImm:       {"RDMA WRITE Only with Immediate", HdrRETH | HdrImmDt, BTHLen + RETHLen + ImmDtLen, PayloadOnly},
	OpReadRequest:        {"RDMA READ Request", HdrRETH, BTHLen + RETHLen, PayloadNone},
	OpReadResponseFirst:  {"RDMA READ Response First", HdrAETH, BTHLen + AETHLen, PayloadPMTU},
	OpReadResponseMiddle: {"RDMA READ Response Middle", 0, BTHLen, PayloadPMTU},
	OpReadResponseLast:   {"RDMA READ Response Last", HdrAETH, BTHLen + AETHLen, PayloadLast},
	OpReadResponseOnly:   {"RDMA READ Response Only", HdrAETH, BTHLen + AETHLen, PayloadOnly},
	OpACK:                {"Acknowledge", HdrAETH, BTHLen + AETHLen, PayloadNone},
	OpAtomicACK:          {"Atomic Acknowledge", HdrAETH | HdrAtomicAckETH, BTHLen + AETHLen + AtomicAckETHLen, PayloadNone},
	OpCompareSwap:        {"CmpSwap", HdrAtomicETH, BTHLen + AtomicETHLen, PayloadNone},
	OpFetchAdd:           {"FetchAdd", HdrAtomicETH, BTHLen + AtomicETHLen, PayloadNone},
	OpUDSendOnly:         {"UD SEND Only", HdrDETH, BTHLen + DETHLen, PayloadOnly},
	OpCNP:                {"CNP", HdrCNPReserved, BTHLen + CNPReservedLen, PayloadNone},
}

// Info returns what the opcode carries; ok is false for opcodes this package
// does not know.
func (op Opcode) Info() (info OpcodeInfo, ok bool) {
	info = opcodes[op]
	return info, info.HeaderLen != 0
}

// String returns the opcode's name, or its number in hex if unknown.
func (op Opcode) String() string {
	if n := opcodes[op].Name; n != "" {
		return n
	}
	return "opcode(0x" + strconv.FormatUint(uint64(op), 16) + ")"
}

// PadCount returns the number of pad bytes after a payload of n bytes:
// (-n) & 3, so that payload plus pad is a multiple of 4.
func PadCount(n int) int { return -n & 3 }

// MTU is the IBA path MTU enumeration used in CM messages (1..5).
type MTU uint8

// Path MTUs. They count payload bytes only.
const (
	MTU256  MTU = 1
	MTU512  MTU = 2
	MTU1024 MTU = 3
	MTU2048 MTU = 4
	MTU4096 MTU = 5
)

// Bytes returns the MTU in bytes, or 0 if m is not a valid enumeration value.
func (m MTU) Bytes() int {
	if m < MTU256 || m > MTU4096 {
		return 0
	}
	return 128 << m
}

// MTUFromBytes returns the enumeration value for 256, 512, 1024, 2048 or
// 4096 bytes; ok is false for any other size.
func MTUFromBytes(n int) (m MTU, ok bool) {
	for m = MTU256; m <= MTU4096; m++ {
		if m.Bytes() == n {
			return m, true
		}
	}
	return 0, false
}

// BTH is the 12-byte Base Transport Header. Values wider than their field
// (PadCnt > 3, TVer > 15, DestQP or PSN > 24 bits) are truncated by AppendTo.
// Reserved bits are ignored by Decode and sent as 0 by AppendTo.
type BTH struct {
	Opcode Opcode
	SE     bool   // solicited event
	MigReq bool   // path-migration state (M bit)
	PadCnt uint8  // pad bytes after the payload, 0-3
	TVer   uint8  // transport header version, must be 0
	PKey   uint16 // partition key, DefaultPKey on RoCE
	FECN   bool   // forward ECN (RoCEv2, masked in the ICRC)
	BECN   bool   // backward ECN (RoCEv2, set in CNPs, masked in the ICRC)
	DestQP uint32 // 24-bit destination QP number
	AckReq bool   // the requester asks for an acknowledgement
	PSN    uint32 // 24-bit packet sequence number
}

// Decode fills h from the first BTHLen bytes of b. It returns ErrTruncated
// if b is too short and ErrBadTVer (with h filled in) if TVer is not 0.
func (h *BTH) Decode(b []byte) error {
	if len(b) < BTHLen {
		return ErrTruncated
	}
	h.Opcode = Opcode(b[0])
	h.SE = b[1]&0x80 != 0
	h.MigReq = b[1]&0x40 != 0
	h.PadCnt = b[1] >> 4 & 3
	h.TVer = b[1] & 0x0F
	h.PKey = binary.BigEndian.Uint16(b[2:])
	h.FECN = b[4]&0x80 != 0
	h.BECN = b[4]&0x40 != 0
	h.DestQP = binary.BigEndian.Uint32(b[4:]) & PSNMask
	h.AckReq = b[8]&0x80 != 0
	h.PSN = binary.BigEndian.Uint32(b[8:]) & PSNMask
	if h.TVer != 0 {
		return ErrBadTVer
	}
	return nil
}

// AppendTo appends the 12-byte encoding of h to b.
func (h *BTH) AppendTo(b []byte) []byte {
	b1 := h.PadCnt&3<<4 | h.TVer&0x0F
	if h.SE {
		b1 |= 0x80
	}
	if h.MigReq {
		b1 |= 0x40
	}
	w1 := h.DestQP & PSNMask
	if h.FECN {
		w1 |= 1 << 31
	}
	if h.BECN {
		w1 |= 1 << 30
	}
	w2 := h.PSN & PSNMask
	if h.AckReq {
		w2 |= 1 << 31
	}
	b = append(b, byte(h.Opcode), b1)
	b = binary.BigEndian.AppendUint16(b, h.PKey)
	b = binary.BigEndian.AppendUint32(b, w1)
	return binary.BigEndian.AppendUint32(b, w2)
}
