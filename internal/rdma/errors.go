package rdma

import (
	"errors"

	"github.com/dta-go/dta/wire/roce"
)

// Errors returned, unwrapped, by the data path and wrapped at the
// boundaries (Dial, RegisterMR).
var (
	// ErrNotConnected: the requester has no established connection (it is
	// reconnecting, or closed); the ops were not sent.
	ErrNotConnected = errors.New("rdma: not connected")
	// ErrClosed: the endpoint was closed.
	ErrClosed = errors.New("rdma: closed")
	// ErrUnknownTarget: an op names a store index with no Target.
	ErrUnknownTarget = errors.New("rdma: op names a store with no target")
	// ErrOutOfRange: an op reaches beyond its target's length.
	ErrOutOfRange = errors.New("rdma: op outside its target")
	// ErrMisaligned: a FETCH_ADD offset is not a multiple of 8.
	ErrMisaligned = errors.New("rdma: atomic offset not 8-byte aligned")
	// ErrBadOp: an op of unknown kind, or a write longer than 2^31 bytes.
	ErrBadOp = errors.New("rdma: invalid op")
	// ErrTimeout: the peer stopped answering (CM handshake or ACK timeout).
	ErrTimeout = errors.New("rdma: timeout")
	// ErrAdvertisementTooLarge: the responder's advertisement exceeds
	// RequesterConfig.MaxAdvertisement.
	ErrAdvertisementTooLarge = errors.New("rdma: advertisement too large")
)

// RejectError is returned by Dial when the responder answers the REQ with a
// REJ.
type RejectError struct {
	Reason roce.RejectReason // the REJ's reason
}

// Error describes the rejection with its reason.
func (e *RejectError) Error() string { return "rdma: connection rejected: " + e.Reason.String() }
