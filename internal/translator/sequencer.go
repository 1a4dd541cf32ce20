package translator

import (
	"net/netip"

	"github.com/dta-go/dta/wire/dta"
)

// Sequencer is the translator's go-back-N check of retransmittable
// datagrams, for a front end that routes reports to several translators
// itself (internal/fanout): the check happens once per datagram, before
// any translator sees its reports.
type Sequencer struct{ t *seqTracker }

// NewSequencer tracks up to maxReporters reporters.
func NewSequencer(maxReporters int) *Sequencer {
	return &Sequencer{t: newSeqTracker(maxReporters)}
}

// Check applies the rule to a retransmittable datagram with sequence number
// seq from a reporter: apply reports whether its reports are to be applied
// (false for a duplicate or after a gap), and reply is the ACK (or NACK) to
// send back, appended to dst.
func (s *Sequencer) Check(dst []byte, from netip.AddrPort, seq uint8) (apply bool, reason Reason, reply []byte) {
	v, last := s.t.check(from, seq)
	switch v {
	case seqDuplicate:
		return false, ReasonDuplicate, dta.Ack{Seq: last}.AppendTo(dst)
	case seqGap:
		return false, ReasonOutOfOrder, dta.Ack{Seq: last, NACK: true}.AppendTo(dst)
	}
	return true, 0, dta.Ack{Seq: seq}.AppendTo(dst)
}

// Drop counts a report a front end could not decode (by the error's reason),
// as Handle would have.
func (w *Worker) Drop(err error, from netip.AddrPort, now int64) { w.drop(err, from, now) }
