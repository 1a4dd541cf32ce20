package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dta-go/dta/internal/export"
)

// Export exports the Kafka exporter's counters (export:).
type Export struct{ E *export.Exporter }

var (
	exRecords   = desc("export_records_total", "Records the Kafka brokers acknowledged, by stream (append, paths, changes).", "stream")
	exBytes     = desc("export_bytes_total", "Value bytes of the acknowledged records, by stream.", "stream")
	exErrors    = desc("export_errors_total", "Records the brokers refused or that failed to send, by stream (append and changes are sent again; a path is queued again, or dropped as refused or queue_full).", "stream")
	exDropped   = desc("export_dropped_total", "What was not exported, by stream and reason (queue_full: paths queue full; lapped: Append entries overwritten before they were read; refused: a path the brokers refused for good; shutdown: unsent at stop).", "stream", "reason")
	exBroker    = desc("export_broker_errors_total", "Failed attempts to reach a Kafka broker, by reason (connect, tls, auth, request).", "reason")
	exLag       = desc("export_append_lag_entries", "Append entries in the stores not yet acknowledged by the brokers, over all lists.")
	exInFlight  = desc("export_in_flight_records", "Records handed to the Kafka client and not yet acknowledged.")
	exInFlMax   = desc("export_in_flight_limit_records", "export.max_in_flight: reads from the stores pause at it.")
	exPathQueue = desc("export_path_queue", "Paths waiting in the queue from the translator.")
	exPathCap   = desc("export_path_queue_capacity", "export.path_queue.")
	exPending   = desc("export_pending_blocks", "Changed 4 KiB store blocks not yet compared and sent (their slots coalesce).")
	exIntervals = desc("export_change_intervals_total", "Changes intervals run.")
	exLastAck   = desc("export_last_ack_timestamp_seconds", "When the brokers last acknowledged a record, Unix time (0: never).")
	exResets    = desc("export_cursor_resets_total", "Append lists whose numbering started over as the exporter saw it (a reset, or a restart after a crash): each starts a new generation.")
)

// Describe implements prometheus.Collector.
func (c Export) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{exRecords, exBytes, exErrors, exDropped, exLag, exInFlight, exInFlMax, exPathQueue,
		exPathCap, exPending, exIntervals, exLastAck, exResets, exBroker} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c Export) Collect(ch chan<- prometheus.Metric) {
	s := c.E.Stats()
	for st := range export.NumStreams {
		name := st.String()
		counter(ch, exRecords, s.Records[st].Load(), name)
		counter(ch, exBytes, s.Bytes[st].Load(), name)
		counter(ch, exErrors, s.Errors[st].Load(), name)
		for r := range export.NumDropReasons {
			counter(ch, exDropped, s.Dropped[st][r].Load(), name, r.String())
		}
	}
	cfg := c.E.Config()
	gauge(ch, exLag, float64(s.AppendLag.Load()))
	gauge(ch, exInFlight, float64(s.InFlight.Load()))
	gauge(ch, exInFlMax, float64(cfg.MaxInFlight))
	gauge(ch, exPathQueue, float64(s.PathQueue.Load()))
	gauge(ch, exPathCap, float64(cfg.PathQueue))
	gauge(ch, exPending, float64(s.PendingBlocks.Load()))
	counter(ch, exIntervals, s.Intervals.Load())
	gauge(ch, exLastAck, float64(s.LastAck.Load())/1e9)
	counter(ch, exResets, s.CursorResets.Load())
	for r := range export.NumBrokerErrors {
		counter(ch, exBroker, s.BrokerErrors[r].Load(), r.String())
	}
}
