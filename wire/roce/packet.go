package roce

import "encoding/binary"

// Packet is one RoCEv2 packet as carried in a UDP payload: BTH, the extended
// headers its opcode calls for, payload, pad and ICRC. Only the headers named
// by BTH.Opcode's Info are meaningful; Decode zeroes the others.
//
// A Packet is a view and a builder. Decode points Payload into the decoded
// buffer (no copy); the Packet is valid only as long as that buffer is.
// AppendTo encodes it, computing PadCnt and writing zero pad bytes.
type Packet struct {
	BTH          BTH
	RETH         RETH
	AtomicETH    AtomicETH
	AETH         AETH
	AtomicAckETH AtomicAckETH
	ImmDt        ImmDt
	DETH         DETH

	// Payload is the data after the headers, without pad. After Decode it
	// aliases the decoded buffer (its capacity ends at the payload, so an
	// append cannot overwrite the pad).
	Payload []byte

	// ICRC is the trailer as carried: the CRC value whose little-endian
	// encoding the last 4 bytes hold. Decode does not check it (it needs the
	// IP header; see VerifyICRC and Envelope.VerifyICRC). AppendTo writes it
	// unchanged; Envelope.AppendDatagram and Envelope.Seal compute it.
	ICRC uint32
}

// Decode parses a UDP payload b into p. It checks, in this order: length
// for a BTH and ICRC (ErrTruncated), TVer (ErrBadTVer), the opcode
// (ErrUnknownOpcode), length for the opcode's headers (ErrTruncated), a
// payload on an opcode that has none (ErrBadLength) and a pad count larger
// than the payload (ErrBadPad). Payload sizes against the path MTU, pad byte
// values and the ICRC are left to the caller.
func (p *Packet) Decode(b []byte) error {
	if len(b) < BTHLen+ICRCLen {
		return ErrTruncated
	}
	*p = Packet{}
	if err := p.BTH.Decode(b); err != nil {
		return err
	}
	info := opcodes[p.BTH.Opcode]
	if info.HeaderLen == 0 {
		return ErrUnknownOpcode
	}
	end := len(b) - ICRCLen
	if end < info.HeaderLen {
		return ErrTruncated
	}
	n := end - info.HeaderLen
	if info.Payload == PayloadNone && n != 0 {
		return ErrBadLength
	}
	if n < int(p.BTH.PadCnt) {
		return ErrBadPad
	}
	off := BTHLen
	h := info.Headers
	if h&HdrDETH != 0 {
		p.DETH.Decode(b[off:])
		off += DETHLen
	}
	if h&HdrRETH != 0 {
		p.RETH.Decode(b[off:])
		off += RETHLen
	}
	if h&HdrAtomicETH != 0 {
		p.AtomicETH.Decode(b[off:])
		off += AtomicETHLen
	}
	if h&HdrAETH != 0 {
		p.AETH.Decode(b[off:])
		off += AETHLen
	}
	if h&HdrAtomicAckETH != 0 {
		p.AtomicAckETH.Decode(b[off:])
		off += AtomicAckETHLen
	}
	if h&HdrImmDt != 0 {
		p.ImmDt.Decode(b[off:])
	}
	pe := end - int(p.BTH.PadCnt)
	p.Payload = b[info.HeaderLen:pe:pe]
	p.ICRC = binary.LittleEndian.Uint32(b[end:])
	return nil
}

// Check reports whether p can be encoded as a packet Decode accepts: a
// known opcode (ErrUnknownOpcode), TVer 0 (ErrBadTVer) and no payload on
// an opcode that carries none (ErrBadLength).
func (p *Packet) Check() error {
	info := opcodes[p.BTH.Opcode]
	switch {
	case info.HeaderLen == 0:
		return ErrUnknownOpcode
	case p.BTH.TVer != 0:
		return ErrBadTVer
	case info.Payload == PayloadNone && len(p.Payload) != 0:
		return ErrBadLength
	}
	return nil
}

// Len returns the encoded length of p in bytes, ICRC included.
func (p *Packet) Len() int {
	hl := opcodes[p.BTH.Opcode].HeaderLen
	if hl == 0 {
		hl = BTHLen
	}
	return hl + len(p.Payload) + PadCount(len(p.Payload)) + ICRCLen
}

var zeros [CNPReservedLen]byte

// AppendTo appends the encoding of p to b: the BTH with PadCnt set to
// PadCount(len(Payload)), the extended headers of the opcode, the payload,
// zero pad bytes and the ICRC field (little-endian). The other BTH fields
// are written as they are. Call Check first if p comes from untrusted
// input: for an unknown opcode no extended header is written.
func (p *Packet) AppendTo(b []byte) []byte {
	pad := PadCount(len(p.Payload))
	bth := p.BTH
	bth.PadCnt = uint8(pad)
	b = bth.AppendTo(b)
	h := opcodes[p.BTH.Opcode].Headers
	if h&HdrDETH != 0 {
		b = p.DETH.AppendTo(b)
	}
	if h&HdrRETH != 0 {
		b = p.RETH.AppendTo(b)
	}
	if h&HdrAtomicETH != 0 {
		b = p.AtomicETH.AppendTo(b)
	}
	if h&HdrAETH != 0 {
		b = p.AETH.AppendTo(b)
	}
	if h&HdrAtomicAckETH != 0 {
		b = p.AtomicAckETH.AppendTo(b)
	}
	if h&HdrImmDt != 0 {
		b = p.ImmDt.AppendTo(b)
	}
	if h&HdrCNPReserved != 0 {
		b = append(b, zeros[:CNPReservedLen]...)
	}
	b = append(b, p.Payload...)
	b = append(b, zeros[:pad]...)
	return binary.LittleEndian.AppendUint32(b, p.ICRC)
}
