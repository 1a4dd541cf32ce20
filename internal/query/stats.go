package query

import "sync/atomic"

// Endpoint identifies one route of the API in [Stats].
type Endpoint uint8

// The API's endpoints. EndpointOther counts requests that matched no route.
const (
	EndpointStores Endpoint = iota
	EndpointStore
	EndpointKeyWrite
	EndpointKeyWriteBatch
	EndpointKeyIncrement
	EndpointKeyIncrementBatch
	EndpointKeyIncrementReset
	EndpointPostcard
	EndpointPostcardBatch
	EndpointAppend
	EndpointAppendHead
	EndpointAppendReset
	EndpointNotifications
	EndpointOther
	NumEndpoints // number of endpoints, for arrays indexed by Endpoint
)

var endpointNames = [NumEndpoints]string{
	EndpointStores:            "stores",
	EndpointStore:             "store",
	EndpointKeyWrite:          "keywrite",
	EndpointKeyWriteBatch:     "keywrite_batch",
	EndpointKeyIncrement:      "keyincrement",
	EndpointKeyIncrementBatch: "keyincrement_batch",
	EndpointKeyIncrementReset: "keyincrement_reset",
	EndpointPostcard:          "postcard",
	EndpointPostcardBatch:     "postcard_batch",
	EndpointAppend:            "append",
	EndpointAppendHead:        "append_head",
	EndpointAppendReset:       "append_reset",
	EndpointNotifications:     "notifications",
	EndpointOther:             "other",
}

// String returns the endpoint's metric label, e.g. "keywrite_batch".
func (e Endpoint) String() string {
	if e < NumEndpoints {
		return endpointNames[e]
	}
	return "invalid"
}

// Reason is why a request failed, as counted in [Stats].
type Reason uint8

// Reasons a request fails, each with the HTTP status it is answered with.
const (
	ReasonInvalid        Reason = iota // 400: malformed or out-of-range parameter or body
	ReasonUnknownStore                 // 404: no store of that name or id
	ReasonWrongPrimitive               // 404: the store is of another primitive than the endpoint
	ReasonUnknownList                  // 404: list id beyond the Append store's lists
	ReasonNoRoute                      // 404: no such endpoint
	ReasonMethod                       // 405: endpoint exists, not for this method
	ReasonCursorAhead                  // 409: Append cursor beyond the list's head
	ReasonTooLarge                     // 413: request body above Config.MaxBodyBytes
	ReasonInternal                     // 500: a store failed (a bug)
	NumReasons                         // number of reasons, for arrays indexed by Reason
)

var reasonNames = [NumReasons]string{
	ReasonInvalid:        "invalid",
	ReasonUnknownStore:   "unknown_store",
	ReasonWrongPrimitive: "wrong_primitive",
	ReasonUnknownList:    "unknown_list",
	ReasonNoRoute:        "no_route",
	ReasonMethod:         "method",
	ReasonCursorAhead:    "cursor_ahead",
	ReasonTooLarge:       "too_large",
	ReasonInternal:       "internal",
}

// String returns the reason's metric label, e.g. "cursor_ahead".
func (r Reason) String() string {
	if r < NumReasons {
		return reasonNames[r]
	}
	return "invalid_reason"
}

// Stats counts what the query server did. All fields are updated atomically;
// a metrics adapter reads them with Load.
type Stats struct {
	// Requests counts requests per endpoint, failed ones included.
	Requests [NumEndpoints]atomic.Uint64
	// Errors counts failed requests per endpoint and reason.
	Errors [NumEndpoints][NumReasons]atomic.Uint64
	// Keys counts keys looked up (single and batch queries).
	Keys atomic.Uint64
	// Entries counts Append entries returned.
	Entries atomic.Uint64
	// Notifications counts notifications written to streams.
	Notifications atomic.Uint64
	// LongPolls is the number of Append polls waiting for entries now.
	LongPolls atomic.Int64
	// Streams is the number of notification streams open now.
	Streams atomic.Int64
}
