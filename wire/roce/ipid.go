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
	piv   [32]uint32     // piv[b]: a vector whose highest set bit is b, or 0
	combo [32]uint32     // the header bits (bit k: ID bit k; bit 16: DF cleared) summing to piv[b]
	diff  [idBits]uint32 // diff[k]: the ICRC's change when header bit k flips
}

// shift returns the ICRC's change when the header bits m flip.
func (s *idSolver) shift(m uint32) uint32 {
	var d uint32
	for k := range idBits {
		if m>>k&1 != 0 {
			d ^= s.diff[k]
		}
	}
	return d
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
		s.diff[k] = c ^ base
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
	s, err := c.solver(e, udpPayload)
	if err != nil {
		return 0, false, err
	}
	// The solver's unknown is the header bits flipped from what e says;
	// its answer is relative to e's ID and DF.
	m, ok := s.solve(crc ^ trailer)
	if !ok {
		return 0, false, ErrICRC
	}
	m ^= flips(e, 0, true) // from flips of e's header to flips of ID 0 with DF
	return uint16(m), m>>16&1 == 0, nil
}

// VerifyID checks the ICRC trailer of udpPayload received over IPv4 with
// IPv4 ID id and DF bit df, read from the packet's own IP header (an AF_XDP
// receiver has it), whatever ID and DF e says: unlike VerifyAnyID, whose
// answer a corrupted packet matches with odds of about 2^-15, the check is
// the ICRC's full 2^-32. The cached prefix for e's ID and DF is reused and
// moved to id and df by the CRC's linearity, so senders that number their
// packets do not miss the cache on every packet. Over IPv6 id and df are
// ignored and it is Verify.
func (c *ICRCCache) VerifyID(e *Envelope, udpPayload []byte, id uint16, df bool) error {
	crc, err := c.ICRC(e, udpPayload)
	if err != nil {
		return err
	}
	trailer := binary.LittleEndian.Uint32(udpPayload[len(udpPayload)-ICRCLen:])
	if m := flips(e, id, df); m != 0 && e.Src.Is4() && e.Dst.Is4() {
		s, err := c.solver(e, udpPayload)
		if err != nil {
			return err
		}
		crc ^= s.shift(m)
	}
	if crc != trailer {
		return ErrICRC
	}
	return nil
}

// flips returns the header bits (bit k: ID bit k; bit 16: DF) in which id
// and df differ from e's ID and DF.
func flips(e *Envelope, id uint16, df bool) uint32 {
	m := uint32(e.ID ^ id)
	if df == e.NoDF {
		m |= 1 << 16
	}
	return m
}

// solver returns the cached solver for udpPayload's length, making it on a
// miss.
func (c *ICRCCache) solver(e *Envelope, udpPayload []byte) (*idSolver, error) {
	if s := c.ids[len(udpPayload)]; s != nil {
		return s, nil
	}
	s, err := newIDSolver(*e, udpPayload)
	if err != nil {
		return nil, err
	}
	if c.ids == nil || len(c.ids) >= maxIDSolvers {
		c.ids = make(map[int]*idSolver)
	}
	c.ids[len(udpPayload)] = s
	return s, nil
}
