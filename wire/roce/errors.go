package roce

import "errors"

// Sentinel errors. Decoders return exactly one of these (never a wrapped or
// formatted error), so a receive path can count drops per reason with
// errors.Is or a switch and never allocates on a malformed packet.
var (
	// ErrTruncated: the buffer is shorter than the headers it must hold.
	ErrTruncated = errors.New("roce: truncated")
	// ErrBadTVer: the BTH transport header version is not 0.
	ErrBadTVer = errors.New("roce: BTH transport version is not 0")
	// ErrUnknownOpcode: the BTH opcode is not one this package knows.
	ErrUnknownOpcode = errors.New("roce: unknown opcode")
	// ErrBadPad: the BTH pad count is larger than the payload it pads.
	ErrBadPad = errors.New("roce: payload shorter than the pad count")
	// ErrBadLength: a length field disagrees with the buffer, or an opcode
	// that carries no payload has one.
	ErrBadLength = errors.New("roce: length mismatch")
	// ErrTooLong: the datagram would not fit the 16-bit IP/UDP length fields.
	ErrTooLong = errors.New("roce: datagram too long")
	// ErrICRC: the invariant CRC does not match the packet.
	ErrICRC = errors.New("roce: ICRC mismatch")
	// ErrNotRoCE: the IP packet is not a single unfragmented IPv4 (without
	// options or the reserved flag) or IPv6 (without extension headers)
	// datagram carrying UDP.
	ErrNotRoCE = errors.New("roce: not an IPv4/IPv6 UDP datagram")
	// ErrBadAddress: an Envelope's addresses are missing or of mixed families.
	ErrBadAddress = errors.New("roce: source and destination must both be IPv4 or both IPv6")
	// ErrNotCM: a MAD is not a Communication Management MAD this package
	// speaks (base version 1, class 0x07, class version 2).
	ErrNotCM = errors.New("roce: not a CM MAD")
	// ErrUnknownAttribute: a CM MAD carries an attribute this package does
	// not decode (ClassPortInfo, SIDR, LAP, APR, ...).
	ErrUnknownAttribute = errors.New("roce: unknown CM attribute")
	// ErrBadPrivateData: the rdma_cm IP-CM private-data header has an
	// unknown version or IP version.
	ErrBadPrivateData = errors.New("roce: bad IP-CM private data header")
)
