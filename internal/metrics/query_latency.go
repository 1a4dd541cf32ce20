package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dta-go/dta/internal/query"
)

var qLatency = desc("query_request_duration_seconds",
	"Query API request durations, by endpoint (an Append long poll includes its wait; notification streams are not timed).", "endpoint")

// collectLatency exports the query server's latency buckets as one
// Prometheus histogram per endpoint (all zero until it serves a request).
func (c Query) collectLatency(ch chan<- prometheus.Metric) {
	bounds := query.LatencyBounds()
	for e := range query.NumEndpoints {
		if e == query.EndpointNotifications {
			continue
		}
		l := &c.S.Latency[e]
		buckets := make(map[float64]uint64, len(bounds))
		var n uint64
		for i, b := range bounds {
			n += l.Buckets[i].Load()
			buckets[b] = n
		}
		n += l.Buckets[len(bounds)].Load()
		sum := time.Duration(l.SumNanos.Load()).Seconds()
		ch <- prometheus.MustNewConstHistogram(qLatency, n, sum, buckets, e.String())
	}
}
