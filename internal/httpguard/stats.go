package httpguard

import (
	"net/http"
	"sync/atomic"
)

// Reason is why a request was refused, as counted in Stats.
type Reason uint8

// Refusal reasons, each answered with one status.
const (
	ReasonMissingToken    Reason = iota // 401: no Authorization header
	ReasonMalformedToken                // 401: Authorization is not one "Bearer <token>"
	ReasonInvalidToken                  // 401: the token is not in the token file
	ReasonForbidden                     // 403: a read token on a request that changes state
	ReasonBodyTooLarge                  // 413: a body above max_body_bytes (declared or read)
	ReasonTooManyRequests               // 503: max_requests requests in progress (or bodies being received)
	ReasonTooManyStreams                // 503: max_streams streams and long polls open
	ReasonCrossOrigin                   // 403: a browser's cross-origin request that would change state
	ReasonBodyTimeout                   // 408: the body did not arrive within read_timeout
	ReasonBadBody                       // 400: the body could not be read (cut short, bad chunked encoding)
	ReasonNoRoute                       // 404: no such path (a server without an API of its own: Unrouted)
	ReasonMethod                        // 405: the path is served for other methods (Unrouted)
	NumReasons
)

var reasonNames = [NumReasons]string{
	"missing_token", "malformed_token", "invalid_token", "forbidden", "body_too_large",
	"too_many_requests", "too_many_streams", "cross_origin", "body_timeout", "bad_body",
	"no_route", "method",
}

var reasonStatus = [NumReasons]int{
	http.StatusUnauthorized, http.StatusUnauthorized, http.StatusUnauthorized, http.StatusForbidden,
	http.StatusRequestEntityTooLarge, http.StatusServiceUnavailable, http.StatusServiceUnavailable,
	http.StatusForbidden, http.StatusRequestTimeout, http.StatusBadRequest,
	http.StatusNotFound, http.StatusMethodNotAllowed,
}

// String returns the reason's metric label, e.g. "invalid_token".
func (r Reason) String() string {
	if r < NumReasons {
		return reasonNames[r]
	}
	return "unknown"
}

// Status is the HTTP status a refusal for r is answered with.
func (r Reason) Status() int {
	if r < NumReasons {
		return reasonStatus[r]
	}
	return http.StatusInternalServerError
}

// Stats counts what a Guard did. Fields are updated atomically.
type Stats struct {
	Requests atomic.Uint64             // requests seen
	Refused  [NumReasons]atomic.Uint64 // requests refused, by reason
	InFlight atomic.Int64              // requests (not streams) being served now
	Bodies   atomic.Int64              // request bodies being received now
	Streams  atomic.Int64              // streams and long polls open now
}
