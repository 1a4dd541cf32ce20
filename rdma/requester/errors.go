package requester

import (
	"errors"
	"fmt"

	"github.com/dta-go/dta/wire/roce"
)

// Errors returned, unwrapped, by Post and Flush and in Completions, and
// wrapped by Dial.
var (
	// ErrNotConnected: the requester has no established connection (it is
	// reconnecting, or closed); the ops were not sent. In a Completion: the
	// connection went down with the atomic unacknowledged; it may or may
	// not have executed.
	ErrNotConnected = errors.New("rdma: not connected")
	// ErrClosed: the requester was closed.
	ErrClosed = errors.New("rdma: closed")
	// ErrUnknownTarget: an op names a target index with no Target.
	ErrUnknownTarget = errors.New("rdma: op names a store with no target")
	// ErrOutOfRange: an op reaches beyond its target's length.
	ErrOutOfRange = errors.New("rdma: op outside its target")
	// ErrMisaligned: an atomic's address is not a multiple of 8.
	ErrMisaligned = errors.New("rdma: atomic offset not 8-byte aligned")
	// ErrBadOp: an op of unknown kind, a write or read longer than 2^31
	// bytes, or a read needing more PSNs than the window holds.
	ErrBadOp = errors.New("rdma: invalid op")
	// ErrTimeout: the peer stopped answering (CM handshake or ACK timeout).
	ErrTimeout = errors.New("rdma: timeout")
	// ErrAdvertisementTooLarge: the responder's advertisement exceeds
	// Config.MaxAdvertisement.
	ErrAdvertisementTooLarge = errors.New("rdma: advertisement too large")
	// ErrRefused, in a Completion: the responder refused the atomic or
	// read with a NAK (remote access error, invalid request, remote
	// operational error); it did not execute.
	ErrRefused = errors.New("rdma: op refused by the responder")
)

// errTimedOut completes the atomics and reads outstanding when the
// connection is declared lost after Config.Retries ACK timeouts.
var errTimedOut = fmt.Errorf("%w: %w", ErrNotConnected, ErrTimeout)

// RejectError is returned by Dial when the responder answers the REQ with a
// REJ.
type RejectError struct {
	Reason roce.RejectReason // the REJ's reason
}

// Error describes the rejection with its reason.
func (e *RejectError) Error() string { return "rdma: connection rejected: " + e.Reason.String() }
