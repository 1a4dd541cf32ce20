package roce

import (
	"encoding/binary"
	"hash/crc32"
)

// icrcSeed is the CRC-32 register (not yet inverted) after the eight 0xFF
// bytes that stand for the absent LRH, starting from 0xFFFFFFFF. rxe starts
// its ICRC from the same value.
const icrcSeed = 0xDEBB20E3

// step feeds one byte into a CRC-32 (IEEE, reflected) register.
func step(reg uint32, c byte) uint32 {
	return crc32.IEEETable[byte(reg)^c] ^ reg>>8
}

// slicing8 holds the tables of the slicing-by-8 CRC-32 (IEEE, reflected):
// slicing8[0] is crc32.IEEETable and slicing8[k][i] the register after
// feeding byte i followed by k zero bytes. It is computed once and only
// read.
var slicing8 = func() *[8][256]uint32 {
	var t [8][256]uint32
	t[0] = *crc32.IEEETable
	for i := range 256 {
		for k := 1; k < 8; k++ {
			v := t[k-1][i]
			t[k][i] = v>>8 ^ t[0][byte(v)]
		}
	}
	return &t
}()

// update8 feeds p into the CRC-32 register reg eight bytes at a time. It
// serves the masked headers icrc builds on its stack: crc32.Update would
// make them escape (it calls through a function variable).
func update8(reg uint32, p []byte) uint32 {
	t := slicing8
	for len(p) >= 8 {
		reg ^= binary.LittleEndian.Uint32(p)
		reg = t[7][byte(reg)] ^ t[6][byte(reg>>8)] ^ t[5][byte(reg>>16)] ^ t[4][reg>>24] ^
			t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]]
		p = p[8:]
	}
	if len(p) >= 4 {
		reg ^= binary.LittleEndian.Uint32(p)
		reg = t[3][byte(reg)] ^ t[2][byte(reg>>8)] ^ t[1][byte(reg>>16)] ^ t[0][reg>>24]
		p = p[4:]
	}
	for _, c := range p {
		reg = step(reg, c)
	}
	return reg
}

// icrc computes the ICRC (spec/rocev2.md §9) of a RoCEv2 datagram given as
// its IP and UDP headers (ipudp, ipLen bytes of IP header) and its UDP
// payload (BTH through ICRC, at least BTHLen+ICRCLen bytes). The headers
// and the BTH are copied to the stack with their variant fields set to
// ones and fed eight bytes at a time (update8), with the rest of a small
// packet; a larger rest goes to crc32.Update (hardware-accelerated for the
// IEEE table). Nothing escapes.
func icrc(ipudp []byte, ipLen int, udpPayload []byte) uint32 {
	var buf [IPv6HeaderLen + UDPHeaderLen + BTHLen + icrcInline]byte
	n := copy(buf[:], ipudp[:ipLen+UDPHeaderLen])
	if ipLen == IPv4HeaderLen {
		buf[1], buf[8], buf[10], buf[11] = 0xFF, 0xFF, 0xFF, 0xFF // TOS, TTL, header checksum
	} else {
		buf[0] |= 0x0F                                          // version | traffic class high nibble
		buf[1], buf[2], buf[3], buf[7] = 0xFF, 0xFF, 0xFF, 0xFF // traffic class, flow label, hop limit
	}
	buf[n-2], buf[n-1] = 0xFF, 0xFF // UDP checksum
	n += copy(buf[n:], udpPayload[:BTHLen])
	buf[n-BTHLen+4] = 0xFF // FECN, BECN, Resv6
	rest := udpPayload[BTHLen : len(udpPayload)-ICRCLen]
	if len(rest) <= icrcInline {
		// A small packet's rest (an ACK's AETH, a WRITE's RETH and a word)
		// goes with the headers: crc32.Update would take it a byte at a
		// time below 16 bytes.
		n += copy(buf[n:], rest)
		return ^update8(icrcSeed, buf[:n])
	}
	reg := update8(icrcSeed, buf[:n])
	return crc32.Update(^reg, crc32.IEEETable, rest)
}

// icrcInline is the most bytes after the BTH that icrc copies next to the
// masked headers rather than passing to crc32.Update.
const icrcInline = 48

// ICRC computes the invariant CRC of a RoCEv2 packet given as a whole IP
// datagram (IPv4 or IPv6 header, UDP header, BTH ... pad, ICRC trailer). The
// trailer's current bytes are not read. Bytes after the UDP datagram (e.g.
// Ethernet padding) are ignored. Errors are those of Envelope.Decode.
//
// The result is written to the trailer least-significant byte first
// (binary.LittleEndian.PutUint32); tshark shows those 4 bytes read
// big-endian.
func ICRC(ip []byte) (uint32, error) {
	ipLen, end, err := locate(ip)
	if err != nil {
		return 0, err
	}
	return icrc(ip, ipLen, ip[ipLen+UDPHeaderLen:end]), nil
}

// VerifyICRC checks the ICRC trailer of the IP datagram ip. It returns nil,
// ErrICRC, or an error of Envelope.Decode.
func VerifyICRC(ip []byte) error {
	ipLen, end, err := locate(ip)
	if err != nil {
		return err
	}
	if icrc(ip, ipLen, ip[ipLen+UDPHeaderLen:end]) != binary.LittleEndian.Uint32(ip[end-ICRCLen:]) {
		return ErrICRC
	}
	return nil
}

// ICRC computes the invariant CRC of a UDP payload (BTH ... pad, ICRC
// trailer, at least BTHLen+ICRCLen bytes) sent in e, rebuilding the IP and
// UDP headers from e. It serves receivers that get UDP payloads from a
// socket: they must know the fields the ICRC covers but a socket does not
// report (IPv4 ID and DF). Errors: ErrTruncated, ErrBadAddress, ErrTooLong.
func (e *Envelope) ICRC(udpPayload []byte) (uint32, error) {
	if len(udpPayload) < BTHLen+ICRCLen {
		return 0, ErrTruncated
	}
	v4, err := e.family()
	if err != nil {
		return 0, err
	}
	var buf [IPv6HeaderLen + UDPHeaderLen]byte
	h, err := e.appendHeaders(buf[:0], v4, len(udpPayload), false) // the ICRC masks the IPv4 checksum
	if err != nil {
		return 0, err
	}
	return icrc(h, len(h)-UDPHeaderLen, udpPayload), nil
}

// Seal computes the ICRC of udpPayload sent in e and writes it into the
// payload's last 4 bytes.
func (e *Envelope) Seal(udpPayload []byte) error {
	crc, err := e.ICRC(udpPayload)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(udpPayload[len(udpPayload)-ICRCLen:], crc)
	return nil
}

// VerifyICRC checks the ICRC trailer of udpPayload as received in e. It
// returns nil, ErrICRC or an error of Envelope.ICRC.
func (e *Envelope) VerifyICRC(udpPayload []byte) error {
	crc, err := e.ICRC(udpPayload)
	if err != nil {
		return err
	}
	if crc != binary.LittleEndian.Uint32(udpPayload[len(udpPayload)-ICRCLen:]) {
		return ErrICRC
	}
	return nil
}
