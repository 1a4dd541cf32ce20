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

// icrc computes the ICRC (spec/rocev2.md §9) of a RoCEv2 datagram given as
// its IP and UDP headers (ipudp, ipLen bytes of IP header) and its UDP
// payload (BTH through ICRC, at least BTHLen+ICRCLen bytes). The masked
// header bytes go through a byte-wise loop over the caller's bytes, so
// nothing is copied and nothing escapes; the rest goes to crc32.Update.
func icrc(ipudp []byte, ipLen int, udpPayload []byte) uint32 {
	reg := uint32(icrcSeed)
	if ipLen == IPv4HeaderLen {
		for i, c := range ipudp[:IPv4HeaderLen] {
			switch i {
			case 1, 8, 10, 11: // TOS, TTL, header checksum
				c = 0xFF
			}
			reg = step(reg, c)
		}
	} else {
		for i, c := range ipudp[:IPv6HeaderLen] {
			switch i {
			case 0: // version | traffic class high nibble
				c |= 0x0F
			case 1, 2, 3, 7: // traffic class, flow label, hop limit
				c = 0xFF
			}
			reg = step(reg, c)
		}
	}
	for i, c := range ipudp[ipLen : ipLen+UDPHeaderLen] {
		if i >= 6 { // UDP checksum
			c = 0xFF
		}
		reg = step(reg, c)
	}
	for i, c := range udpPayload[:BTHLen] {
		if i == 4 { // FECN, BECN, Resv6
			c = 0xFF
		}
		reg = step(reg, c)
	}
	return crc32.Update(^reg, crc32.IEEETable, udpPayload[BTHLen:len(udpPayload)-ICRCLen])
}

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
	h, err := e.appendHeaders(buf[:0], v4, len(udpPayload))
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
