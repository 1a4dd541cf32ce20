package translator

import (
	"errors"

	"github.com/dta-go/dta/internal/primitive/appendlist"
	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/internal/primitive/sketchmerge"
	"github.com/dta-go/dta/wire/dta"
)

// Reason is why a report (or a whole datagram) was dropped.
type Reason uint8

// Drop reasons. Their names (Reason.String) are metric label values.
const (
	ReasonTruncated      Reason = iota // shorter than its header or sub-header
	ReasonUnknownOpcode                // opcode is not a DTA report
	ReasonLength                       // a length field runs past the datagram
	ReasonTrailing                     // bytes after the report
	ReasonRedundancy                   // N = 0, above 8, or above the store's maximum
	ReasonHop                          // hop 0 or beyond the path / the store's hops
	ReasonKeyLen                       // key length 0 or above 64
	ReasonValueLen                     // value length 0 or above the wire bound
	ReasonBatch                        // empty or nested batch
	ReasonUnknownStore                 // no store with that id, or no default store for the primitive
	ReasonWrongPrimitive               // the store id names a store of another primitive
	ReasonValueSize                    // value or entry size differs from the store's
	ReasonList                         // list id beyond the store's lists
	ReasonValueSet                     // Postcarding hop value outside the store's value set
	ReasonPathLen                      // Postcarding path length beyond the store's hops
	ReasonOutOfOrder                   // retransmittable datagram after a gap (NACKed)
	ReasonDuplicate                    // retransmittable datagram already applied (re-ACKed)
	ReasonSink                         // the sink refused the ops
	ReasonNotAllowed                   // datagram from a source outside translator.allow_sources (Worker.Refuse)
	ReasonRateLimited                  // datagram above its source's rate limit (Worker.Refuse)
	ReasonSketchRun                    // Sketch-Merge row or columns beyond the store's geometry
	ReasonEpochClosed                  // Sketch-Merge report for an epoch older than the newest
	NumReasons
)

var reasonNames = [NumReasons]string{
	"truncated", "unknown_opcode", "length", "trailing", "redundancy", "hop", "key_len",
	"value_len", "batch", "unknown_store", "wrong_primitive", "value_size", "list",
	"value_set", "path_len", "out_of_order", "duplicate", "sink",
	"not_allowed", "rate_limited", "sketch_run", "epoch_closed",
}

// String returns the reason's metric label.
func (r Reason) String() string {
	if r < NumReasons {
		return reasonNames[r]
	}
	return "unknown"
}

// Routing errors.
var (
	ErrUnknownStore   = errors.New("no such store")
	ErrWrongPrimitive = errors.New("store is of another primitive")
	ErrSink           = errors.New("sink refused ops")
)

// Classify returns the Reason a drop for err (an error of decoding,
// routing or translating a report) is counted under.
func Classify(err error) Reason {
	if errors.Is(err, errHopValueSize) {
		return ReasonValueSize
	}
	return classify(err)
}

// classify maps an error from decoding, routing or translation to its Reason.
func classify(err error) Reason {
	switch {
	case errors.Is(err, dta.ErrTruncated):
		return ReasonTruncated
	case errors.Is(err, dta.ErrUnknownOpcode):
		return ReasonUnknownOpcode
	case errors.Is(err, dta.ErrLength):
		return ReasonLength
	case errors.Is(err, dta.ErrTrailing):
		return ReasonTrailing
	case errors.Is(err, dta.ErrRedundancy), errors.Is(err, keywrite.ErrRedundancy):
		return ReasonRedundancy
	case errors.Is(err, dta.ErrHop), errors.Is(err, postcard.ErrHop):
		return ReasonHop
	case errors.Is(err, dta.ErrKeyLen):
		return ReasonKeyLen
	case errors.Is(err, dta.ErrValueLen):
		return ReasonValueLen
	case errors.Is(err, dta.ErrBatch):
		return ReasonBatch
	case errors.Is(err, ErrUnknownStore):
		return ReasonUnknownStore
	case errors.Is(err, ErrWrongPrimitive):
		return ReasonWrongPrimitive
	case errors.Is(err, keywrite.ErrValueSize), errors.Is(err, appendlist.ErrEntrySize):
		return ReasonValueSize
	case errors.Is(err, appendlist.ErrList):
		return ReasonList
	case errors.Is(err, postcard.ErrValue):
		return ReasonValueSet
	case errors.Is(err, postcard.ErrPathLen):
		return ReasonPathLen
	case errors.Is(err, sketchmerge.ErrRow), errors.Is(err, sketchmerge.ErrColumns), errors.Is(err, sketchmerge.ErrRunLen):
		return ReasonSketchRun
	case errors.Is(err, sketchmerge.ErrOldEpoch):
		return ReasonEpochClosed
	}
	return ReasonSink
}
