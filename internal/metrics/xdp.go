package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dta-go/dta/internal/transport/xdp"
)

// XDP exports an AF_XDP ingest's counters (translator.transport: xdp, or
// the collector's responder with collector.transport: xdp) and the kernel's
// counters of its sockets.
type XDP struct{ L *xdp.Listener }

var (
	xdpCounters = map[string]*prometheus.Desc{
		"packets":       desc("xdp_packets_total", "Datagrams received through AF_XDP and handed on: reports to the translator, or RoCEv2 requests to the collector's responder."),
		"bytes":         desc("xdp_bytes_total", "UDP payload bytes of those datagrams."),
		"batches":       desc("xdp_batches_total", "Non-empty reads of the AF_XDP RX rings."),
		"empty_polls":   desc("xdp_empty_polls_total", "Waits for frames after an RX ring was found empty."),
		"fill_starved":  desc("xdp_fill_starved_total", "Refills that found the kernel's fill ring empty."),
		"invalid_descs": desc("xdp_invalid_descs_total", "RX descriptors pointing outside the UMEM."),
		"reply_errors":  desc("xdp_reply_errors_total", "ACK/NACK send errors on the AF_XDP path."),
		"tx_frames":     desc("xdp_tx_frames_total", "Frames sent on the AF_XDP TX rings: the responder's responses (collector.xdp.tx_frames)."),
		"tx_full":       desc("xdp_tx_full_total", "Responses that found no free TX frame or ring slot and went through the UDP socket instead."),
		"tx_errors":     desc("xdp_tx_errors_total", "Failed kicks of an AF_XDP TX ring (sendto errors other than try again)."),
	}
	xdpKickSeconds = desc("xdp_tx_kick_seconds_total", "CPU time of the responder's threads in the kicks (sendto) of the AF_XDP TX rings: the kernel's work of sending the responses (over a veth, also the peer's receive path).")
	xdpMalformed   = desc("xdp_malformed_total", "Frames steered to AF_XDP but not handed on, by reason.", "reason")
	xdpKernel      = map[string]*prometheus.Desc{
		"rx_dropped":         desc("xdp_kernel_rx_dropped_total", "Frames the kernel dropped on the AF_XDP sockets (e.g. larger than a UMEM frame)."),
		"rx_ring_full":       desc("xdp_kernel_rx_ring_full_total", "Frames the kernel dropped because an RX ring was full (readers behind)."),
		"rx_fill_ring_empty": desc("xdp_kernel_rx_fill_ring_empty_total", "Frames the kernel dropped because a fill ring was empty."),
		"rx_invalid_descs":   desc("xdp_kernel_rx_invalid_descs_total", "Invalid fill ring descriptors the kernel saw."),
	}
)

// Describe implements prometheus.Collector.
func (c XDP) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range []map[string]*prometheus.Desc{xdpCounters, xdpKernel} {
		for _, d := range m {
			ch <- d
		}
	}
	ch <- xdpMalformed
	ch <- xdpKickSeconds
}

// Collect implements prometheus.Collector.
func (c XDP) Collect(ch chan<- prometheus.Metric) {
	s := c.L.Stats()
	counter(ch, xdpCounters["packets"], s.Packets.Load())
	counter(ch, xdpCounters["bytes"], s.Bytes.Load())
	counter(ch, xdpCounters["batches"], s.Batches.Load())
	counter(ch, xdpCounters["empty_polls"], s.EmptyPolls.Load())
	counter(ch, xdpCounters["fill_starved"], s.FillStarved.Load())
	counter(ch, xdpCounters["invalid_descs"], s.InvalidDescs.Load())
	counter(ch, xdpCounters["reply_errors"], s.ReplyErrors.Load())
	counter(ch, xdpCounters["tx_frames"], s.TXFrames.Load())
	counter(ch, xdpCounters["tx_full"], s.TXFull.Load())
	counter(ch, xdpCounters["tx_errors"], s.TXErrors.Load())
	ch <- prometheus.MustNewConstMetric(xdpKickSeconds, prometheus.CounterValue, float64(s.TXKickNanos.Load())/1e9)
	for _, r := range xdp.Reasons() {
		counter(ch, xdpMalformed, s.Malformed[r].Load(), r.String())
	}
	k := c.L.KernelStats()
	counter(ch, xdpKernel["rx_dropped"], k.RxDropped)
	counter(ch, xdpKernel["rx_ring_full"], k.RxRingFull)
	counter(ch, xdpKernel["rx_fill_ring_empty"], k.RxFillRingEmpty)
	counter(ch, xdpKernel["rx_invalid_descs"], k.RxInvalidDescs)
}
