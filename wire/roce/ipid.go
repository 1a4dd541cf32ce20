package roce

import "encoding/binary"

// An IPv4 header's identification and DF bit are covered by the ICRC, and a
// UDP socket shows its receiver neither. Senders such as dta's own (an
// unconnected socket with IP_PMTUDISC_DO) send ID 0 with DF, which is what
// Verify assumes; rxe and RDMA NICs number their packets. The ICRC is an
// affine function of those 17 header bits (ID and DF; the fragment offset is
// 0 in a packet a socket delivers whole), so from a trailer that does not
// match ID 0 with DF the receiver can solve for the ID and DF bit that would
// make it match: flipping a header bit changes the ICRC by a vector that
// depends only on the bit and the packet's length (the CRC's linearity), and
// the 17 vectors of one length are independent (a CRC-32 detects every burst
// of 32 bits or fewer). There is at most one solution; a packet corrupted
// elsewhere has one with probability about 2^-15 instead of 2^-32.

// idBits are the header bits solved for: the 16 ID bits, then DF.
const idBits = 17

// idSolver holds, for one UDP payload length, a basis of the span of the
// 17 ICRC differences, keyed by each vector's highest set bit, with the set
// of header bits whose differences add up to it.
type idSolver struct {
	piv   [32]uint32 // piv[b]: a vector whose highest set bit is b, or 0
	combo [32]uint32 // the header bits (bit k: ID bit k; bit 16: DF cleared) summing to piv[b]
}

// add puts the difference v of the header bits m into the basis.
func (s *idSolver) add(v, m uint32) {
	for b := 31; b >= 0 && v != 0; b-- {
		if v>>b&1 == 0 {
			continue
		}
		if s.piv[b] == 0 {
			s.piv[b], s.combo[b] = v, m
			return
		}
		v, m = v^s.piv[b], m^s.combo[b]
	}
}

// solve returns the header bits whose differences sum to d, if any.
func (s *idSolver) solve(d uint32) (uint32, bool) {
	var m uint32
	for b := 31; b >= 0 && d != 0; b-- {
		if d>>b&1 == 0 {
			continue
		}
		if s.piv[b] == 0 {
			return 0, false
		}
		d, m = d^s.piv[b], m^s.combo[b]
	}
	return m, d == 0
}

// newIDSolver computes the 17 differences for udpPayload's length by
// computing the ICRC with each header bit flipped (the payload's bytes do
// not matter: only the length does).
func newIDSolver(e Envelope, udpPayload []byte) (*idSolver, error) {
	e.ID, e.NoDF = 0, false
	base, err := e.ICRC(udpPayload)
	if err != nil {
		return nil, err
	}
	s := &idSolver{}
	for k := range idBits {
		f := e
		if k < 16 {
			f.ID = 1 << k
		} else {
			f.NoDF = true
		}
		c, err := f.ICRC(udpPayload)
		if err != nil {
			return nil, err
		}
		s.add(c^base, 1<<k)
	}
	return s, nil
}

// maxIDSolvers bounds the payload lengths an ICRCCache keeps solvers for.
const maxIDSolvers = 64

// VerifyAnyID checks the ICRC trailer of udpPayload received over IPv4 in
// e from a sender whose IPv4 ID and DF bit are not known (a UDP socket shows
// neither). A trailer valid for e as it is (ID 0 with DF, dta's own senders)
// returns id 0, df true. Otherwise it solves for the ID and DF bit that make
// the trailer valid and returns them, or ErrICRC when none does. Over IPv6,
// and for errors other than ErrICRC, it is Verify.
func (c *ICRCCache) VerifyAnyID(e *Envelope, udpPayload []byte) (id uint16, df bool, err error) {
	crc, err := c.ICRC(e, udpPayload)
	if err != nil {
		return 0, false, err
	}
	trailer := binary.LittleEndian.Uint32(udpPayload[len(udpPayload)-ICRCLen:])
	if crc == trailer {
		return e.ID, !e.NoDF, nil
	}
	if !e.Src.Is4() || !e.Dst.Is4() {
		return 0, false, ErrICRC
	}
	s := c.ids[len(udpPayload)]
	if s == nil {
		if s, err = newIDSolver(*e, udpPayload); err != nil {
			return 0, false, err
		}
		if c.ids == nil || len(c.ids) >= maxIDSolvers {
			c.ids = make(map[int]*idSolver)
		}
		c.ids[len(udpPayload)] = s
	}
	// The solver's differences are from ID 0 with DF, what e says for
	// every socket receiver; another e needs that ICRC computed.
	base := crc
	if e.ID != 0 || e.NoDF {
		f := *e
		f.ID, f.NoDF = 0, false
		if base, err = c.ICRC(&f, udpPayload); err != nil {
			return 0, false, err
		}
	}
	m, ok := s.solve(base ^ trailer)
	if !ok {
		return 0, false, ErrICRC
	}
	return uint16(m), m>>16&1 == 0, nil
}
