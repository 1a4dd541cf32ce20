package rdma

import "github.com/dta-go/dta/rdma/requester"

// Errors returned, unwrapped, by the data path and wrapped at the
// boundaries (Dial, RegisterMR). The requester's are those of the public
// package rdma/requester, so that errors.Is matches either name.
var (
	// ErrNotConnected: the requester has no established connection (it is
	// reconnecting, or closed); the ops were not sent.
	ErrNotConnected = requester.ErrNotConnected
	// ErrClosed: the endpoint was closed.
	ErrClosed = requester.ErrClosed
	// ErrUnknownTarget: an op names a store index with no Target.
	ErrUnknownTarget = requester.ErrUnknownTarget
	// ErrOutOfRange: an op reaches beyond its target's length.
	ErrOutOfRange = requester.ErrOutOfRange
	// ErrMisaligned: a FETCH_ADD offset is not a multiple of 8.
	ErrMisaligned = requester.ErrMisaligned
	// ErrBadOp: an op of unknown kind, or a write longer than 2^31 bytes.
	ErrBadOp = requester.ErrBadOp
	// ErrTimeout: the peer stopped answering (CM handshake or ACK timeout).
	ErrTimeout = requester.ErrTimeout
	// ErrAdvertisementTooLarge: the responder's advertisement exceeds
	// RequesterConfig.MaxAdvertisement.
	ErrAdvertisementTooLarge = requester.ErrAdvertisementTooLarge
)

// RejectError is returned by Dial when the responder answers the REQ with a
// REJ (requester.RejectError).
type RejectError = requester.RejectError
