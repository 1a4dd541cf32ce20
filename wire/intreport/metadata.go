package intreport

import (
	"encoding/binary"
	"math/bits"
)

// Metadata bits, numbered as the specifications number them: bit 0 is the
// most significant bit of the 16-bit bitmap (RepMdBits in a report, the
// Instruction Bitmap in an INT-MD header). Use Mask to test one.
const (
	BitNodeID       = 0  // INT-MD only: node id (4 bytes); reserved in RepMdBits
	BitL1Interfaces = 1  // level 1 ingress (16 bits) and egress (16 bits) interface ids
	BitHopLatency   = 2  // hop latency (4 bytes)
	BitQueue        = 3  // queue id (8 bits) and queue occupancy (24 bits)
	BitIngressTime  = 4  // ingress timestamp (8 bytes)
	BitEgressTime   = 5  // egress timestamp (8 bytes)
	BitL2Interfaces = 6  // level 2 ingress and egress interface ids (4 bytes each)
	BitTxUtil       = 7  // egress port TX utilization (4 bytes)
	BitBuffer       = 8  // buffer id (8 bits) and buffer occupancy (24 bits)
	BitDrop         = 15 // RepMdBits: queue id (8 bits), drop reason (8 bits), padding (16 bits)
	BitChecksum     = 15 // Instruction Bitmap: checksum complement (4 bytes, last)
)

// Mask returns the bitmap bit of metadata bit i (0 = most significant).
func Mask(i int) uint16 { return 1 << (15 - i) }

// wideBits are the bits that select 8 bytes instead of 4.
var wideBits = Mask(BitIngressTime) | Mask(BitEgressTime) | Mask(BitL2Interfaces)

// MetadataLen is the bytes of metadata a bitmap selects: 4 per bit set (a
// reserved bit included: later minor versions may define it as 4 bytes), 8
// for bits 4, 5 and 6.
func MetadataLen(bitmap uint16) int {
	return 4*bits.OnesCount16(bitmap) + 4*bits.OnesCount16(bitmap&wideBits)
}

// Invalid is the value a node stores for metadata it cannot provide.
const Invalid = 0xFFFFFFFF

// Metadata is one node's metadata as a bitmap selects it. Fields whose bit
// is not set are zero.
type Metadata struct {
	Bits uint16 // the bitmap

	NodeID           uint32 // bit 0 (INT-MD stacks only)
	IngressIf        uint16 // bit 1
	EgressIf         uint16
	HopLatency       uint32 // bit 2
	QueueID          uint8  // bit 3
	QueueOccupancy   uint32 // 24 bits
	IngressTimestamp uint64 // bit 4
	EgressTimestamp  uint64 // bit 5
	IngressIfL2      uint32 // bit 6
	EgressIfL2       uint32
	TxUtilization    uint32 // bit 7
	BufferID         uint8  // bit 8
	BufferOccupancy  uint32 // 24 bits
	DropQueueID      uint8  // bit 15 of RepMdBits
	DropReason       uint8
	Checksum         uint32 // bit 15 of an Instruction Bitmap
}

// Has reports whether bit i is set.
func (m *Metadata) Has(i int) bool { return m.Bits&Mask(i) != 0 }

// decodeMetadata fills m from b, which holds exactly MetadataLen(bitmap)
// bytes, in bit order. inReport selects the meaning of bits 0 and 15.
func decodeMetadata(m *Metadata, bitmap uint16, b []byte, inReport bool) {
	*m = Metadata{Bits: bitmap}
	at := 0
	for i := 0; i < 16; i++ {
		if bitmap&Mask(i) == 0 {
			continue
		}
		w := binary.BigEndian.Uint32(b[at:])
		switch i {
		case BitNodeID:
			if !inReport {
				m.NodeID = w
			}
		case BitL1Interfaces:
			m.IngressIf, m.EgressIf = uint16(w>>16), uint16(w)
		case BitHopLatency:
			m.HopLatency = w
		case BitQueue:
			m.QueueID, m.QueueOccupancy = uint8(w>>24), w&0xFFFFFF
		case BitIngressTime:
			m.IngressTimestamp = binary.BigEndian.Uint64(b[at:])
		case BitEgressTime:
			m.EgressTimestamp = binary.BigEndian.Uint64(b[at:])
		case BitL2Interfaces:
			m.IngressIfL2, m.EgressIfL2 = w, binary.BigEndian.Uint32(b[at+4:])
		case BitTxUtil:
			m.TxUtilization = w
		case BitBuffer:
			m.BufferID, m.BufferOccupancy = uint8(w>>24), w&0xFFFFFF
		case 15:
			if inReport {
				m.DropQueueID, m.DropReason = uint8(w>>24), uint8(w>>16)
			} else {
				m.Checksum = w
			}
		}
		at += 4
		if wideBits&Mask(i) != 0 {
			at += 4
		}
	}
}

// AppendMetadata appends m's fields selected by m.Bits, in bit order (the
// reserved bits as Invalid words). inReport selects the meaning of bits 0
// and 15 as decodeMetadata does; bit 0 in a report is written as Invalid.
func AppendMetadata(b []byte, m *Metadata, inReport bool) []byte {
	for i := 0; i < 16; i++ {
		if m.Bits&Mask(i) == 0 {
			continue
		}
		switch i {
		case BitNodeID:
			if inReport {
				b = binary.BigEndian.AppendUint32(b, Invalid)
			} else {
				b = binary.BigEndian.AppendUint32(b, m.NodeID)
			}
		case BitL1Interfaces:
			b = binary.BigEndian.AppendUint32(b, uint32(m.IngressIf)<<16|uint32(m.EgressIf))
		case BitHopLatency:
			b = binary.BigEndian.AppendUint32(b, m.HopLatency)
		case BitQueue:
			b = binary.BigEndian.AppendUint32(b, uint32(m.QueueID)<<24|m.QueueOccupancy&0xFFFFFF)
		case BitIngressTime:
			b = binary.BigEndian.AppendUint64(b, m.IngressTimestamp)
		case BitEgressTime:
			b = binary.BigEndian.AppendUint64(b, m.EgressTimestamp)
		case BitL2Interfaces:
			b = binary.BigEndian.AppendUint32(b, m.IngressIfL2)
			b = binary.BigEndian.AppendUint32(b, m.EgressIfL2)
		case BitTxUtil:
			b = binary.BigEndian.AppendUint32(b, m.TxUtilization)
		case BitBuffer:
			b = binary.BigEndian.AppendUint32(b, uint32(m.BufferID)<<24|m.BufferOccupancy&0xFFFFFF)
		case 15:
			if inReport {
				b = binary.BigEndian.AppendUint32(b, uint32(m.DropQueueID)<<24|uint32(m.DropReason)<<16)
			} else {
				b = binary.BigEndian.AppendUint32(b, m.Checksum)
			}
		default:
			b = binary.BigEndian.AppendUint32(b, Invalid)
		}
	}
	return b
}
