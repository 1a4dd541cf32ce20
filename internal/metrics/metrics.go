// Package metrics exposes the components' statistics to Prometheus. It is
// the only importer of the Prometheus client: components keep plain atomic
// counters, and the collectors here read them at scrape time, so nothing on
// the report path formats labels or touches a map.
package metrics

import (
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dta-go/dta/internal/intmap"
	"github.com/dta-go/dta/internal/query"
	"github.com/dta-go/dta/internal/rdma"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/translator"
	"github.com/dta-go/dta/internal/transport/udp"
	"github.com/dta-go/dta/wire/dta"
)

// Registry holds the collectors a process exports. Components add theirs
// with Register; nothing outside this package needs the Prometheus client.
type Registry struct{ reg *prometheus.Registry }

// NewRegistry returns a registry with the Go runtime and process collectors.
func NewRegistry() *Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &Registry{reg: reg}
}

// Register adds a collector of this package (Translator, Catalog, Query).
func (r *Registry) Register(c prometheus.Collector) error { return r.reg.Register(c) }

// Handler serves the registry in the Prometheus exposition format.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{Registry: r.reg})
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("dta_"+name, help, labels, nil)
}

func counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v uint64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

// Translator exports a translator's and its UDP listener's counters. Listener
// may be nil (a translator fed by other means).
type Translator struct {
	T        *translator.Translator
	Listener *udp.Listener
	// INT and Mapper, when set, add the INT telemetry report input
	// (internal/metrics/int.go).
	INT    *udp.Listener
	Mapper *intmap.Mapper
}

var (
	trDatagrams = desc("translator_datagrams_total", "Report datagrams received by the translator.")
	trReports   = desc("translator_reports_total", "Reports translated and applied, by primitive.", "primitive")
	trDrops     = desc("translator_drops_total", "Reports (or datagrams) dropped, by reason.", "reason")
	trOps       = desc("translator_ops_total", "Memory ops handed to the sink for Key-Write and Key-Increment reports.")
	trAcks      = desc("translator_acks_total", "ACKs sent for retransmittable reports.")
	trNacks     = desc("translator_nacks_total", "NACKs sent for retransmittable reports after a sequence gap.")
	pcCounters  = map[string]*prometheus.Desc{
		"postcards": desc("postcard_cache_postcards_total", "Postcards cached."),
		"complete":  desc("postcard_cache_complete_total", "Paths written because every hop arrived."),
		"evicted":   desc("postcard_cache_evicted_total", "Partial paths written early because another flow took the cache entry."),
		"expired":   desc("postcard_cache_expired_total", "Partial paths written because they aged out."),
		"chunks":    desc("postcard_cache_chunk_writes_total", "Chunk writes emitted (paths times redundancy)."),
	}
	alEntries = desc("append_entries_total", "Append entries accepted, by store.", "store")
	alBatches = desc("append_batches_total", "Append batches written, by store.", "store")
	alPartial = desc("append_partial_batches_total", "Append batches written before they were full, by store.", "store")
	alWraps   = desc("append_wrap_splits_total", "Append batches split at a ring's end, by store.", "store")
	alPending = desc("append_pending_entries", "Append entries the translator holds in partial batches, not yet written to the store, by store.", "store")
	ruleEvals = desc("rule_evaluations_total", "Paths (Postcarding source) or reports (other sources) a translator rule was evaluated on, by rule and its source store.", "rule", "source")
	ruleFires = desc("rule_fires_total", "Evaluations whose comparison held, each running the rule's action, by rule and its source store.", "rule", "source")
	ruleErrs  = desc("rule_action_errors_total", "Rule actions whose memory ops the sink refused, by rule and its source store.", "rule", "source")
	udpDesc   = map[string]*prometheus.Desc{
		"datagrams":    desc("udp_datagrams_total", "Datagrams received on the report sockets."),
		"bytes":        desc("udp_bytes_total", "Bytes received on the report sockets."),
		"batches":      desc("udp_batches_total", "recvmmsg batches read."),
		"truncated":    desc("udp_truncated_total", "Datagrams longer than the receive buffer, dropped."),
		"read_errors":  desc("udp_read_errors_total", "Socket read errors."),
		"reply_errors": desc("udp_reply_errors_total", "ACK/NACK send errors."),
		"kernel_drops": desc("udp_kernel_drops_total", "Datagrams the kernel dropped on the report sockets (receive buffer overflow)."),
	}
)

// Describe implements prometheus.Collector.
func (c Translator) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{trDatagrams, trReports, trDrops, trOps, trAcks, trNacks, alEntries, alBatches, alPartial, alWraps, alPending, ruleEvals, ruleFires, ruleErrs} {
		ch <- d
	}
	for _, d := range pcCounters {
		ch <- d
	}
	if c.Listener != nil {
		for _, d := range udpDesc {
			ch <- d
		}
	}
	if c.Mapper != nil {
		for _, d := range intDescs {
			ch <- d
		}
	}
}

// Collect implements prometheus.Collector.
func (c Translator) Collect(ch chan<- prometheus.Metric) {
	c.collectINT(ch)
	s := c.T.Stats()
	counter(ch, trDatagrams, s.Datagrams)
	for _, p := range dta.Primitives {
		counter(ch, trReports, s.Reports[p], p.String())
	}
	for r := range translator.NumReasons {
		counter(ch, trDrops, s.Drops[r], r.String())
	}
	counter(ch, trOps, s.Ops)
	counter(ch, trAcks, s.Acks)
	counter(ch, trNacks, s.Nacks)
	pc := c.T.PostcardCache().Stats()
	counter(ch, pcCounters["postcards"], pc.Postcards.Load())
	counter(ch, pcCounters["complete"], pc.Complete.Load())
	counter(ch, pcCounters["evicted"], pc.Evicted.Load())
	counter(ch, pcCounters["expired"], pc.Expired.Load())
	counter(ch, pcCounters["chunks"], pc.Chunks.Load())
	for i, d := range c.T.Stores() {
		w := c.T.AppendWriter(i)
		if w == nil {
			continue
		}
		st := w.Stats()
		counter(ch, alEntries, st.Entries.Load(), d.Name)
		counter(ch, alBatches, st.Batches.Load(), d.Name)
		counter(ch, alPartial, st.Partial.Load(), d.Name)
		counter(ch, alWraps, st.WrapSplits.Load(), d.Name)
		gauge(ch, alPending, float64(st.Pending()), d.Name)
	}
	stores := c.T.Stores()
	for _, r := range c.T.Rules() {
		st, src := r.Stats(), stores[r.Source].Name
		counter(ch, ruleEvals, st.Evaluations.Load(), r.Name, src)
		counter(ch, ruleFires, st.Fires.Load(), r.Name, src)
		counter(ch, ruleErrs, st.Errors.Load(), r.Name, src)
	}
	if l := c.Listener; l != nil {
		collectUDP(ch, l)
	}

}

// Catalog exports the collector's stores and its local sink's counters.
type Catalog struct {
	C *store.Catalog
	// OccupancySamples is how many units per store are sampled per scrape
	// for the occupancy estimate (default 4096).
	OccupancySamples int
}

var (
	stBytes     = desc("store_region_bytes", "Bytes of memory of each store's region.", "store", "primitive", "backing")
	stOccupancy = desc("store_occupancy_ratio", "Estimated share of a store's slots (chunks, counters, lists) in use.", "store", "primitive")
	skOps       = desc("sink_ops_total", "Memory ops applied to the collector's regions by the local sink.")
	skBytes     = desc("sink_bytes_total", "Bytes written by the local sink.")
	skRejected  = desc("sink_rejected_total", "Memory ops the local sink refused (unknown store, out of bounds, misaligned).")
	skNotify    = desc("notifications_total", "Write-with-immediate notifications delivered.")
	skNotifyDr  = desc("notifications_dropped_total", "Notifications a slow subscriber missed.")
)

// Describe implements prometheus.Collector.
func (c Catalog) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{stBytes, stOccupancy, skOps, skBytes, skRejected, skNotify, skNotifyDr} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c Catalog) Collect(ch chan<- prometheus.Metric) {
	n := c.OccupancySamples
	if n <= 0 {
		n = 4096
	}
	for _, s := range c.C.Stores() {
		p := s.Primitive.String()
		gauge(ch, stBytes, float64(s.Region.Size()), s.Name, p, s.Region.Backing())
		gauge(ch, stOccupancy, s.Occupancy(n), s.Name, p)
	}
	st := c.C.Stats()
	counter(ch, skOps, st.Ops.Load())
	counter(ch, skBytes, st.Bytes.Load())
	counter(ch, skRejected, st.Rejected.Load())
	counter(ch, skNotify, st.Notifications.Load())
	counter(ch, skNotifyDr, st.NotifyDropped.Load())
}

// Query exports the query API's counters.
type Query struct{ S *query.Stats }

var (
	qRequests = desc("query_requests_total", "Query API requests, by endpoint.", "endpoint")
	qErrors   = desc("query_errors_total", "Failed query API requests, by endpoint and reason.", "endpoint", "reason")
	qKeys     = desc("query_keys_total", "Keys looked up.")
	qEntries  = desc("query_append_entries_total", "Append entries returned to readers.")
	qNotify   = desc("query_notifications_total", "Notifications written to streams.")
	qPolls    = desc("query_long_polls", "Append long-polls waiting now.")
	qStreams  = desc("query_streams", "Notification streams open now.")
)

// Describe implements prometheus.Collector.
func (c Query) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{qRequests, qErrors, qKeys, qEntries, qNotify, qPolls, qStreams, qLatency} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c Query) Collect(ch chan<- prometheus.Metric) {
	for e := range query.NumEndpoints {
		counter(ch, qRequests, c.S.Requests[e].Load(), e.String())
		for r := range query.NumReasons {
			// A series appears at its first error, but internal (a 500,
			// a bug) exists from the start, at 0, so that an alert on
			// its rate sees the first one.
			if v := c.S.Errors[e][r].Load(); v != 0 || r == query.ReasonInternal {
				counter(ch, qErrors, v, e.String(), r.String())
			}
		}
	}
	counter(ch, qKeys, c.S.Keys.Load())
	counter(ch, qEntries, c.S.Entries.Load())
	counter(ch, qNotify, c.S.Notifications.Load())
	gauge(ch, qPolls, float64(c.S.LongPolls.Load()))
	gauge(ch, qStreams, float64(c.S.Streams.Load()))
	c.collectLatency(ch)
}

// counterList exports a fixed list of atomic counters.
type counterList []struct {
	d *prometheus.Desc
	v *atomic.Uint64
}

func (l counterList) describe(ch chan<- *prometheus.Desc) {
	for _, c := range l {
		ch <- c.d
	}
}

func (l counterList) collect(ch chan<- prometheus.Metric) {
	for _, c := range l {
		counter(ch, c.d, c.v.Load())
	}
}

// Responder exports a software RoCEv2 responder's counters.
type Responder struct{ R *rdma.Responder }

func (c Responder) list() counterList {
	s := c.R.Stats()
	return counterList{
		{desc("rdma_responder_packets_total", "RoCEv2 packets received (each packet of a coalesced datagram counts)."), &s.Packets},
		{desc("rdma_responder_bytes_total", "UDP payload bytes of the RoCEv2 packets received."), &s.Bytes},
		{desc("rdma_responder_receive_batches_total", "Receive calls that returned datagrams (packets / batches is the mean batch)."), &s.Batches},
		{desc("rdma_responder_pauses_total", "Reads after a pause rather than a wait to be woken (collector.pause), those that found nothing included."), &s.Pauses},
		{desc("rdma_responder_coalesced_total", "Datagrams received that held several RoCEv2 packets (UDP GRO of a requester's GSO run on loopback)."), &s.Coalesced},
		{desc("rdma_responder_truncated_total", "Datagrams (or coalesced packets) longer than the largest RoCEv2 packet, dropped."), &s.Truncated},
		{desc("rdma_responder_bad_icrc_total", "RoCEv2 packets dropped for a wrong ICRC."), &s.BadICRC},
		{desc("rdma_responder_foreign_ip_id_total", "RoCEv2 packets whose ICRC matched with an IPv4 ID and DF bit recovered from it (a NIC's or rxe's sender; dta's own send ID 0 with DF)."), &s.ForeignIPID},
		{desc("rdma_responder_malformed_total", "RoCEv2 packets dropped as undecodable, of another partition (P_Key), or of another transport than their QP's."), &s.Malformed},
		{desc("rdma_responder_unknown_qp_total", "RoCEv2 packets for no connected QP."), &s.UnknownQP},
		{desc("rdma_responder_not_allowed_total", "RoCEv2 packets from a source outside collector.allow_translators, dropped."), &s.NotAllowed},
		{desc("rdma_responder_cm_reject_not_allowed_total", "CM REQs from a source outside collector.allow_translators, answered with REJ consumer defined."), &s.CMRejectNotAllowed},
		{desc("rdma_responder_qps_revoked_total", "Connections closed because their peer left collector.allow_translators."), &s.QPsRevoked},
		{desc("rdma_responder_duplicates_total", "Duplicate requests re-ACKed, never re-executed."), &s.Duplicates},
		{desc("rdma_responder_out_of_sequence_total", "Requests after a PSN gap, dropped."), &s.OutOfSequence},
		{desc("rdma_responder_writes_total", "RDMA WRITE messages executed."), &s.Writes},
		{desc("rdma_responder_write_bytes_total", "Bytes placed by RDMA WRITEs."), &s.WriteBytes},
		{desc("rdma_responder_atomics_total", "Atomics executed."), &s.Atomics},
		{desc("rdma_responder_atomic_replays_total", "Duplicate atomics answered from the saved value."), &s.AtomicReplays},
		{desc("rdma_responder_atomic_replay_misses_total", "Duplicate atomics no longer in the saved history, dropped."), &s.AtomicReplayMisses},
		{desc("rdma_responder_immediates_total", "Immediates of WRITE with immediate delivered to the collector."), &s.Immediates},
		{desc("rdma_responder_reads_total", "RDMA READ requests executed (first time)."), &s.Reads},
		{desc("rdma_responder_read_bytes_total", "Bytes returned by RDMA READs."), &s.ReadBytes},
		{desc("rdma_responder_read_replays_total", "Duplicate READ requests executed again."), &s.ReadReplays},
		{desc("rdma_responder_read_responses_total", "READ Response packets sent, replays included."), &s.ReadResponses},
		{desc("rdma_responder_reject_length_total", "Requests with a payload, pad or DMA length the message and path MTU forbid."), &s.RejectLength},
		{desc("rdma_responder_reject_opcode_total", "Requests with an unsupported or out-of-sequence opcode."), &s.RejectOpcode},
		{desc("rdma_responder_acks_total", "ACKs sent."), &s.ACKs},
		{desc("rdma_responder_atomic_acks_total", "ATOMIC ACKs sent (one per atomic executed or replayed)."), &s.AtomicACKs},
		{desc("rdma_responder_nak_sequence_total", "NAK PSN sequence error sent."), &s.NAKSequence},
		{desc("rdma_responder_nak_invalid_request_total", "NAK invalid request sent."), &s.NAKInvalidRequest},
		{desc("rdma_responder_nak_remote_access_total", "NAK remote access error sent."), &s.NAKRemoteAccess},
		{desc("rdma_responder_nak_remote_operational_total", "NAK remote operational error sent."), &s.NAKRemoteOperational},
		{desc("rdma_responder_reject_rkey_total", "Requests with an unknown R_Key."), &s.RejectRKey},
		{desc("rdma_responder_reject_bounds_total", "Requests outside their memory region."), &s.RejectBounds},
		{desc("rdma_responder_reject_rights_total", "Requests the memory region's access rights forbid."), &s.RejectRights},
		{desc("rdma_responder_reject_misaligned_total", "Atomics not 8-byte aligned."), &s.RejectMisaligned},
		{desc("rdma_responder_cm_requests_total", "CM connection requests received."), &s.CMRequests},
		{desc("rdma_responder_cm_duplicate_requests_total", "Retransmitted CM REQs, answered with the saved REP."), &s.CMDuplicateRequests},
		{desc("rdma_responder_cm_replies_total", "CM REPs sent (first time)."), &s.CMReplies},
		{desc("rdma_responder_cm_established_total", "Connections established."), &s.CMReadyToUse},
		{desc("rdma_responder_cm_disconnects_total", "Disconnect requests received."), &s.CMDisconnects},
		{desc("rdma_responder_cm_reject_service_total", "CM REJ invalid service ID sent."), &s.CMRejectService},
		{desc("rdma_responder_cm_reject_resources_total", "CM REJ no resources (QP table full) sent."), &s.CMRejectResources},
		{desc("rdma_responder_cm_reject_invalid_total", "CM REJ for another bad REQ field (MTU, transport) sent."), &s.CMRejectInvalid},
		{desc("rdma_responder_cm_dropped_total", "MADs ignored: not CM, bad Q_Key, unknown connection."), &s.CMDropped},
		{desc("rdma_responder_qps_reclaimed_total", "Idle QPs dropped for a new REQ, or replaced by a REQ from the same address."), &s.QPsReclaimed},
		{desc("rdma_responder_qps_timed_out_total", "Half-open QPs and unanswered advertisements given up."), &s.QPsTimedOut},
		{desc("rdma_responder_advertisement_retransmits_total", "Store advertisement packets resent."), &s.AdvertisementRetransmits},
		{desc("rdma_responder_send_errors_total", "Datagrams the kernel refused to send."), &s.SendErrors},
		{desc("rdma_responder_read_errors_total", "Failed receive calls."), &s.ReadErrors},
	}
}

// Describe implements prometheus.Collector.
func (c Responder) Describe(ch chan<- *prometheus.Desc) {
	c.list().describe(ch)
	ch <- rdmaQPs
	ch <- rdmaQPCount
	ch <- rdmaLoops
	ch <- rdmaLoopPackets
}

var (
	rdmaQPs         = desc("rdma_responder_qp_expected_psn", "Next request PSN each responder QP expects.", "qpn", "peer")
	rdmaQPCount     = desc("rdma_responder_qps", "QPs in the responder's table now, half-open included.")
	rdmaLoops       = desc("rdma_responder_read_loops", "Read loops (sockets of the SO_REUSEPORT group, goroutines) serving the responder's QPs (collector.read_loops).")
	rdmaLoopPackets = desc("rdma_responder_loop_packets_total", "RoCEv2 packets each read loop received: how the socket group spreads the requesters.", "loop")
)

// Collect implements prometheus.Collector.
func (c Responder) Collect(ch chan<- prometheus.Metric) {
	c.list().collect(ch)
	gauge(ch, rdmaLoops, float64(c.R.ReadLoops()))
	gauge(ch, rdmaQPCount, float64(c.R.Stats().QPs.Load()))
	for i, n := range c.R.ReadLoopPackets() {
		counter(ch, rdmaLoopPackets, n, strconv.Itoa(i))
	}
	for _, qp := range c.R.QPs() {
		gauge(ch, rdmaQPs, float64(qp.ExpectedPSN), strconv.FormatUint(uint64(qp.QPN), 10), qp.Peer.String())
	}
}

// Requester exports a RoCEv2 requester's (a remote translator's) counters.
type Requester struct{ R *rdma.Requester }

func (c Requester) list() counterList {
	s := c.R.Stats()
	return counterList{
		{desc("rdma_requester_writes_total", "RDMA WRITE ops sent."), &s.Writes},
		{desc("rdma_requester_fetch_adds_total", "FETCH_ADD ops sent."), &s.FetchAdds},
		{desc("rdma_requester_write_imms_total", "RDMA WRITE with immediate ops sent."), &s.WriteImms},
		{desc("rdma_requester_compare_swaps_total", "COMPARE_SWAP ops sent."), &s.CompareSwaps},
		{desc("rdma_requester_reads_total", "RDMA READ ops sent."), &s.Reads},
		{desc("rdma_requester_refused_total", "Ops refused before sending (unknown target, out of range, misaligned)."), &s.Refused},
		{desc("rdma_requester_packets_total", "RoCEv2 packets sent (first transmission)."), &s.Packets},
		{desc("rdma_requester_bytes_total", "RoCEv2 bytes sent (first transmission)."), &s.Bytes},
		{desc("rdma_requester_retransmits_total", "Packets resent (go-back-N)."), &s.Retransmits},
		{desc("rdma_requester_timeouts_total", "ACK timeouts."), &s.Timeouts},
		{desc("rdma_requester_window_full_total", "Times Apply waited for the send window or the limit of atomics in flight."), &s.WindowFull},
		{desc("rdma_requester_rate_waits_total", "Times Apply waited for the rate limiter."), &s.RateWaits},
		{desc("rdma_requester_acks_total", "ACKs received."), &s.ACKs},
		{desc("rdma_requester_atomic_acks_total", "ATOMIC ACKs received."), &s.AtomicACKs},
		{desc("rdma_requester_atomics_lost_total", "Atomics resent to fetch a result whose ATOMIC ACK was missing (lost or reordered ATOMIC ACKs)."), &s.AtomicsLost},
		{desc("rdma_requester_read_responses_total", "READ Response packets accepted."), &s.ReadResponses},
		{desc("rdma_requester_read_bytes_total", "Bytes of completed READs."), &s.ReadBytes},
		{desc("rdma_requester_read_duplicates_total", "READ Response packets already received (replays of a resent READ), ignored."), &s.ReadDuplicates},
		{desc("rdma_requester_reads_lost_total", "READs resent because a response was missing."), &s.ReadsLost},
		{desc("rdma_requester_nak_sequence_total", "NAK PSN sequence error received."), &s.NAKSequence},
		{desc("rdma_requester_nak_invalid_request_total", "NAK invalid request received."), &s.NAKInvalidRequest},
		{desc("rdma_requester_nak_remote_access_total", "NAK remote access error received."), &s.NAKRemoteAccess},
		{desc("rdma_requester_nak_remote_operational_total", "NAK remote operational error received."), &s.NAKRemoteOperational},
		{desc("rdma_requester_rnr_naks_total", "RNR NAKs received."), &s.RNRNAKs},
		{desc("rdma_requester_ops_failed_total", "Ops the responder refused, dropped."), &s.OpsFailed},
		{desc("rdma_requester_ops_lost_total", "Packets unacknowledged when a connection went down."), &s.OpsLost},
		{desc("rdma_requester_connects_total", "Connections established."), &s.Connects},
		{desc("rdma_requester_reconnects_total", "Connections lost (timeouts, DREQ, REJ), each followed by reconnect attempts."), &s.Reconnect},
		{desc("rdma_requester_keepalives_total", "Zero-length WRITEs sent on an idle connection to find a collector that went away (RoCEv2 keep-alive)."), &s.KeepAlives},
		{desc("rdma_requester_bad_icrc_total", "Received packets with a wrong ICRC."), &s.BadICRC},
		{desc("rdma_requester_foreign_ip_id_total", "Received packets whose ICRC matched with an IPv4 ID and DF bit recovered from it (an RDMA NIC's responses)."), &s.ForeignIPID},
		{desc("rdma_requester_stray_total", "Received packets from another address, for another QP, or undecodable."), &s.Stray},
		{desc("rdma_requester_send_errors_total", "Datagrams the kernel refused to send."), &s.SendErrors},
		{desc("rdma_requester_read_errors_total", "Failed receive calls."), &s.ReadErrors},
	}
}

// Describe implements prometheus.Collector.
func (c Requester) Describe(ch chan<- *prometheus.Desc) { c.list().describe(ch) }

// Collect implements prometheus.Collector.
func (c Requester) Collect(ch chan<- prometheus.Metric) { c.list().collect(ch) }
