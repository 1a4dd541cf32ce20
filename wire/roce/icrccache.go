package roce

import (
	"encoding/binary"
	"hash/crc32"
	"net/netip"
)

// ICRCCache computes ICRCs like [Envelope.ICRC] for a sender or receiver of
// many packets on few connections. Everything the ICRC covers up to the BTH's
// destination QP — the masked IP and UDP headers (addresses, ports, IPv4 ID
// and DF, lengths) and the BTH's first eight bytes (opcode, flags, partition
// key, destination QP) — is the same for every packet of one kind on one
// connection, so the cache keeps the CRC register after those bytes for the
// last few (envelope, payload length, opcode, QP) it met and, on a hit, feeds
// only the bytes from the PSN on. A miss computes the whole ICRC and
// remembers its prefix. Results are always exactly Envelope.ICRC's.
//
// The zero value is ready. An ICRCCache is not safe for concurrent use: give
// each goroutine (a responder's read loop, a requester's sender) its own.
type ICRCCache struct {
	ents [icrcCacheWays]icrcPrefix
	last uint8 // the way of the last hit or fill, tried first
	next uint8 // the way the next miss replaces (round robin)
	// ids are VerifyAnyID's solvers by UDP payload length (ipid.go).
	ids map[int]*idSolver
}

// icrcCacheWays is the number of prefixes kept: enough for a connection's
// request kinds in both directions (an Append's entries and head, READ
// requests, ACKs, ATOMIC ACKs), few enough to search linearly.
const icrcCacheWays = 8

// icrcPrefix is one remembered prefix: its key and the register after it.
type icrcPrefix struct {
	src, dst     netip.Addr
	sport, dport uint16
	id           uint16
	noDF, valid  bool
	n            int    // UDP payload length
	bth          uint64 // BTH bytes 0..7 read little-endian, byte 4 (FECN, BECN, resv) set to ones as the ICRC masks it
	reg          uint32 // CRC register after the masked headers and bth
}

// icrcPrefixLen is the BTH bytes a prefix covers: opcode through destination
// QP; the PSN and everything after it vary from packet to packet.
const icrcPrefixLen = 8

// ICRC returns the ICRC of udpPayload (BTH ... pad, ICRC trailer) sent in e,
// as Envelope.ICRC does, with its errors.
func (c *ICRCCache) ICRC(e *Envelope, udpPayload []byte) (uint32, error) {
	if len(udpPayload) < BTHLen+ICRCLen {
		return 0, ErrTruncated
	}
	bth := binary.LittleEndian.Uint64(udpPayload) | 0xFF<<32
	n := len(udpPayload)
	if p := &c.ents[c.last]; p.hit(e, n, bth) {
		return icrcFrom(p.reg, udpPayload[icrcPrefixLen:n-ICRCLen]), nil
	}
	for i := range c.ents {
		if p := &c.ents[i]; p.hit(e, n, bth) {
			c.last = uint8(i)
			return icrcFrom(p.reg, udpPayload[icrcPrefixLen:n-ICRCLen]), nil
		}
	}
	v4, err := e.family()
	if err != nil {
		return 0, err
	}
	var hdr [IPv6HeaderLen + UDPHeaderLen + icrcPrefixLen]byte
	h, err := e.appendHeaders(hdr[:0], v4, n, false)
	if err != nil {
		return 0, err
	}
	ipLen := len(h) - UDPHeaderLen
	if v4 {
		h[1], h[8], h[10], h[11] = 0xFF, 0xFF, 0xFF, 0xFF // TOS, TTL, header checksum
	} else {
		h[0] |= 0x0F                                    // version | traffic class high nibble
		h[1], h[2], h[3], h[7] = 0xFF, 0xFF, 0xFF, 0xFF // traffic class, flow label, hop limit
	}
	h[ipLen+6], h[ipLen+7] = 0xFF, 0xFF // UDP checksum
	h = binary.LittleEndian.AppendUint64(h, bth)
	reg := update8(icrcSeed, h)
	p := &c.ents[c.next]
	c.last, c.next = c.next, (c.next+1)%icrcCacheWays
	*p = icrcPrefix{src: e.Src, dst: e.Dst, sport: e.SrcPort, dport: e.DstPort, id: e.ID, noDF: e.NoDF,
		valid: true, n: n, bth: bth, reg: reg}
	return icrcFrom(reg, udpPayload[icrcPrefixLen:n-ICRCLen]), nil
}

// hit reports whether p is the prefix of a payload of n bytes in e whose
// masked BTH bytes 0..7 are bth.
func (p *icrcPrefix) hit(e *Envelope, n int, bth uint64) bool {
	return p.bth == bth && p.n == n && p.valid && p.sport == e.SrcPort && p.dport == e.DstPort &&
		p.id == e.ID && p.noDF == e.NoDF && p.src == e.Src && p.dst == e.Dst
}

// icrcFrom finishes an ICRC from the register after a prefix: rest is the
// payload from the PSN to the trailer, which the ICRC covers unmasked.
func icrcFrom(reg uint32, rest []byte) uint32 {
	if len(rest) <= icrcInline {
		return ^update8(reg, rest)
	}
	return crc32.Update(^reg, crc32.IEEETable, rest)
}

// Seal writes the ICRC of udpPayload sent in e into its last 4 bytes, as
// Envelope.Seal does.
func (c *ICRCCache) Seal(e *Envelope, udpPayload []byte) error {
	crc, err := c.ICRC(e, udpPayload)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(udpPayload[len(udpPayload)-ICRCLen:], crc)
	return nil
}

// Verify checks the ICRC trailer of udpPayload received in e, as
// Envelope.VerifyICRC does: nil, ErrICRC or an error of Envelope.ICRC.
func (c *ICRCCache) Verify(e *Envelope, udpPayload []byte) error {
	crc, err := c.ICRC(e, udpPayload)
	if err != nil {
		return err
	}
	if crc != binary.LittleEndian.Uint32(udpPayload[len(udpPayload)-ICRCLen:]) {
		return ErrICRC
	}
	return nil
}
