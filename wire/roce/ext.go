package roce

import (
	"encoding/binary"
	"strconv"
	"time"
)

// RETH is the RDMA Extended Transport Header of WRITE First/Only and READ
// Request packets.
type RETH struct {
	VA     uint64 // responder virtual address (iova as registered)
	RKey   uint32 // remote key of the memory region
	DMALen uint32 // length of the whole message, not of this packet
}

// Decode fills h from the first RETHLen bytes of b.
func (h *RETH) Decode(b []byte) error {
	if len(b) < RETHLen {
		return ErrTruncated
	}
	h.VA = binary.BigEndian.Uint64(b)
	h.RKey = binary.BigEndian.Uint32(b[8:])
	h.DMALen = binary.BigEndian.Uint32(b[12:])
	return nil
}

// AppendTo appends the 16-byte encoding of h to b.
func (h *RETH) AppendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, h.VA)
	b = binary.BigEndian.AppendUint32(b, h.RKey)
	return binary.BigEndian.AppendUint32(b, h.DMALen)
}

// AtomicETH is the Atomic Extended Transport Header of COMPARE_SWAP and
// FETCH_ADD. FETCH_ADD carries the addend in SwapAdd and ignores Compare.
type AtomicETH struct {
	VA      uint64 // 8-byte aligned responder virtual address
	RKey    uint32 // remote key of the memory region
	SwapAdd uint64 // swap value (COMPARE_SWAP) or addend (FETCH_ADD)
	Compare uint64 // compare value (COMPARE_SWAP); send 0 with FETCH_ADD
}

// Decode fills h from the first AtomicETHLen bytes of b.
func (h *AtomicETH) Decode(b []byte) error {
	if len(b) < AtomicETHLen {
		return ErrTruncated
	}
	h.VA = binary.BigEndian.Uint64(b)
	h.RKey = binary.BigEndian.Uint32(b[8:])
	h.SwapAdd = binary.BigEndian.Uint64(b[12:])
	h.Compare = binary.BigEndian.Uint64(b[20:])
	return nil
}

// AppendTo appends the 28-byte encoding of h to b.
func (h *AtomicETH) AppendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, h.VA)
	b = binary.BigEndian.AppendUint32(b, h.RKey)
	b = binary.BigEndian.AppendUint64(b, h.SwapAdd)
	return binary.BigEndian.AppendUint64(b, h.Compare)
}

// AETH is the ACK Extended Transport Header of ACKNOWLEDGE, ATOMIC
// ACKNOWLEDGE and READ responses.
type AETH struct {
	Syndrome Syndrome
	MSN      uint32 // 24-bit message sequence number: messages completed, mod 2^24
}

// Decode fills h from the first AETHLen bytes of b.
func (h *AETH) Decode(b []byte) error {
	if len(b) < AETHLen {
		return ErrTruncated
	}
	h.Syndrome = Syndrome(b[0])
	h.MSN = binary.BigEndian.Uint32(b) & PSNMask
	return nil
}

// AppendTo appends the 4-byte encoding of h to b.
func (h *AETH) AppendTo(b []byte) []byte {
	return binary.BigEndian.AppendUint32(b, uint32(h.Syndrome)<<24|h.MSN&PSNMask)
}

// Syndrome is the AETH syndrome byte: bit 7 reserved, bits 6-5 the type,
// bits 4-0 a credit count code, RNR timer code or NAK code.
type Syndrome uint8

// SyndromeType is bits 6-5 of a Syndrome.
type SyndromeType uint8

// Syndrome types.
const (
	SyndromeACK      SyndromeType = 0 // ACK; value = credit count code
	SyndromeRNRNAK   SyndromeType = 1 // receiver not ready; value = RNR timer code
	SyndromeReserved SyndromeType = 2 // reserved
	SyndromeNAK      SyndromeType = 3 // NAK; value = NAK code
)

// Common syndromes.
const (
	// ACKUnlimited is an ACK with the "invalid" credit code 31: no
	// end-to-end flow control. rxe sends it on every ACK.
	ACKUnlimited Syndrome = 0x1F
	// NAKPSNSequenceError: a PSN gap; BTH.PSN carries the expected PSN.
	NAKPSNSequenceError Syndrome = 0x60
	// NAKInvalidRequest: bad opcode, opcode sequence, length or alignment.
	NAKInvalidRequest Syndrome = 0x61
	// NAKRemoteAccessError: bad R_Key, bounds or access rights.
	NAKRemoteAccessError Syndrome = 0x62
	// NAKRemoteOperationalError: responder-internal failure.
	NAKRemoteOperationalError Syndrome = 0x63
	// NAKInvalidRDRequest: invalid RD request (RD transport only).
	NAKInvalidRDRequest Syndrome = 0x64
)

// ACKSyndrome returns an ACK syndrome carrying credit count code c (0-31;
// 31 means no end-to-end flow control).
func ACKSyndrome(c uint8) Syndrome { return Syndrome(c & 0x1F) }

// RNRNAKSyndrome returns an RNR NAK syndrome carrying RNR timer code t (0-31).
func RNRNAKSyndrome(t uint8) Syndrome { return Syndrome(0x20 | t&0x1F) }

// Type returns the syndrome type (bits 6-5).
func (s Syndrome) Type() SyndromeType { return SyndromeType(s >> 5 & 3) }

// Value returns bits 4-0: the credit count code, RNR timer code or NAK code.
func (s Syndrome) Value() uint8 { return uint8(s) & 0x1F }

// IsACK reports whether s is a positive acknowledgement.
func (s Syndrome) IsACK() bool { return s.Type() == SyndromeACK }

// String describes the syndrome the way tshark does, e.g. "ACK",
// "RNR NAK (timer 1.28ms)", "NAK remote access error".
func (s Syndrome) String() string {
	switch s.Type() {
	case SyndromeACK:
		if s.Value() == 0x1F {
			return "ACK"
		}
		return "ACK (credits " + strconv.Itoa(CreditCount(s.Value())) + ")"
	case SyndromeRNRNAK:
		return "RNR NAK (timer " + RNRTimer(s.Value()).String() + ")"
	case SyndromeNAK:
		switch s {
		case NAKPSNSequenceError:
			return "NAK PSN sequence error"
		case NAKInvalidRequest:
			return "NAK invalid request"
		case NAKRemoteAccessError:
			return "NAK remote access error"
		case NAKRemoteOperationalError:
			return "NAK remote operational error"
		case NAKInvalidRDRequest:
			return "NAK invalid RD request"
		}
	}
	return "reserved syndrome 0x" + strconv.FormatUint(uint64(s), 16)
}

var credits = [31]uint16{0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256,
	384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768}

// CreditCount returns the number of receive credits credit count code c
// stands for, or -1 for code 31 ("invalid": no end-to-end flow control) and
// codes out of range.
func CreditCount(c uint8) int {
	if int(c) >= len(credits) {
		return -1
	}
	return int(credits[c])
}

var rnrMicros = [32]uint32{655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
	1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920,
	122880, 163840, 245760, 327680, 491520}

// RNRTimer returns how long RNR timer code t (0-31) asks the requester to
// wait before retrying (code 0 is the longest, 655.36 ms).
func RNRTimer(t uint8) time.Duration {
	return time.Duration(rnrMicros[t&0x1F]) * time.Microsecond
}

// AtomicAckETH is the Atomic ACK Extended Transport Header.
type AtomicAckETH struct {
	OrigData uint64 // the remote 8-byte value before the atomic executed
}

// Decode fills h from the first AtomicAckETHLen bytes of b.
func (h *AtomicAckETH) Decode(b []byte) error {
	if len(b) < AtomicAckETHLen {
		return ErrTruncated
	}
	h.OrigData = binary.BigEndian.Uint64(b)
	return nil
}

// AppendTo appends the 8-byte encoding of h to b.
func (h *AtomicAckETH) AppendTo(b []byte) []byte {
	return binary.BigEndian.AppendUint64(b, h.OrigData)
}

// ImmDt is the 4-byte immediate data of the "with Immediate" opcodes. It is
// opaque to RDMA and delivered in the responder's receive completion.
type ImmDt struct {
	Data uint32
}

// Decode fills h from the first ImmDtLen bytes of b.
func (h *ImmDt) Decode(b []byte) error {
	if len(b) < ImmDtLen {
		return ErrTruncated
	}
	h.Data = binary.BigEndian.Uint32(b)
	return nil
}

// AppendTo appends the 4-byte encoding of h to b.
func (h *ImmDt) AppendTo(b []byte) []byte {
	return binary.BigEndian.AppendUint32(b, h.Data)
}

// DETH is the Datagram Extended Transport Header of UD packets.
type DETH struct {
	QKey  uint32 // queue key; GSIQKey for QP1
	SrcQP uint32 // 24-bit source QP number
}

// Decode fills h from the first DETHLen bytes of b. The reserved byte is
// ignored.
func (h *DETH) Decode(b []byte) error {
	if len(b) < DETHLen {
		return ErrTruncated
	}
	h.QKey = binary.BigEndian.Uint32(b)
	h.SrcQP = binary.BigEndian.Uint32(b[4:]) & PSNMask
	return nil
}

// AppendTo appends the 8-byte encoding of h to b.
func (h *DETH) AppendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, h.QKey)
	return binary.BigEndian.AppendUint32(b, h.SrcQP&PSNMask)
}
