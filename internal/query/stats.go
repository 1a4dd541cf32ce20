package query

import (
	"sync/atomic"
	"time"
)

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
	EndpointAppendHeads
	EndpointEpochs
	EndpointSketch
	EndpointSketchTopK
	EndpointSketchNorms
	EndpointSketchEpochs
	EndpointSketchCounters
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
	EndpointAppendHeads:       "append_heads",
	EndpointEpochs:            "epochs",
	EndpointSketch:            "sketchmerge",
	EndpointSketchTopK:        "sketchmerge_topk",
	EndpointSketchNorms:       "sketchmerge_norms",
	EndpointSketchEpochs:      "sketchmerge_epochs",
	EndpointSketchCounters:    "sketchmerge_counters",
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
	ReasonUnknownEpoch                 // 404: at names no kept epoch
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
	ReasonUnknownEpoch:   "unknown_epoch",
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
	// Latency holds the durations of requests per endpoint, from routing to
	// the last byte written (an Append long poll includes its wait). The
	// notification stream is left out: its duration is the client's.
	Latency [NumEndpoints]Latency
}

// latencyBounds are the upper bounds of Latency's buckets, in seconds: from
// 100 µs (a cached Key-Write lookup) to 30 s (the longest long poll).
var latencyBounds = [NumLatencyBuckets - 1]float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
}

// NumLatencyBuckets is the number of buckets of a [Latency], the last one
// unbounded.
const NumLatencyBuckets = 18

// LatencyBounds returns the upper bounds, in seconds, of the first
// NumLatencyBuckets-1 buckets of a [Latency]; the last bucket has none.
func LatencyBounds() []float64 { return latencyBounds[:] }

// Latency is a histogram of request durations with fixed buckets (see
// [LatencyBounds]), kept as atomic counters so that recording costs no lock
// and no allocation.
type Latency struct {
	// Buckets counts requests per bucket (not cumulative): Buckets[i] those
	// above bound i-1 and at most bound i; the last, those above every bound.
	Buckets [NumLatencyBuckets]atomic.Uint64
	// SumNanos is the sum of the recorded durations, in nanoseconds.
	SumNanos atomic.Uint64
}

// Observe records one request that took d.
func (l *Latency) Observe(d time.Duration) {
	s := d.Seconds()
	i := 0
	for i < len(latencyBounds) && s > latencyBounds[i] {
		i++
	}
	l.Buckets[i].Add(1)
	if d > 0 {
		l.SumNanos.Add(uint64(d))
	}
}
