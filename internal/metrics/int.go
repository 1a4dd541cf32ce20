package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dta-go/dta/internal/intmap"
	"github.com/dta-go/dta/internal/transport/udp"
	"github.com/dta-go/dta/wire/intreport"
)

var (
	intPackets   = desc("int_packets_total", "INT telemetry report packets received (translator.int_listen).")
	intReports   = desc("int_reports_total", "INT individual reports mapped onto stores.")
	intMalformed = desc("int_malformed_total", "INT telemetry report packets and individual reports refused, by reason (other: an error of no known kind); they change nothing.", "reason")
	intDerived   = desc("int_derived_reports_total", "DTA reports derived from INT reports, by part: path, postcard, counter, drop.", "part")
	intNoFlow    = desc("int_reports_without_flow_total", "INT reports whose inner contents hold no flow (no path, postcard or flow counters for them).")
	intTruncated = desc("int_paths_truncated_total", "INT paths longer than the path store's value holds, cut to it.")
	intOutOfTTL  = desc("int_postcards_out_of_range_total", "INT postcards whose TTL names no hop of the postcard store, or whose node id is outside its value set (min_value..max_value).")
	intKernel    = desc("int_udp_kernel_drops_total", "INT report datagrams the kernel dropped on the INT sockets (receive buffer overflow).")
	intTooLong   = desc("int_udp_truncated_total", "INT report datagrams longer than the largest the INT sockets take (9216 bytes), dropped unread.")
)

var intDescs = []*prometheus.Desc{intPackets, intReports, intMalformed, intDerived, intNoFlow, intTruncated, intOutOfTTL, intKernel, intTooLong}

// INT exports the INT telemetry report input on its own: a front end over
// several collectors registers it once, unlabelled, as the input is the
// front end's and not any collector's. A Translator with a Mapper exports
// the same families itself.
type INT struct {
	Listener *udp.Listener // the INT sockets; nil on AF_XDP
	Mapper   *intmap.Mapper
}

// Describe implements prometheus.Collector.
func (c INT) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range intDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c INT) Collect(ch chan<- prometheus.Metric) {
	Translator{INT: c.Listener, Mapper: c.Mapper}.collectINT(ch)
}

// collectINT exports the INT input of a translator (nothing without one).
func (c Translator) collectINT(ch chan<- prometheus.Metric) {
	if c.Mapper == nil {
		return
	}
	s := c.Mapper.Stats()
	counter(ch, intPackets, s.Packets.Load())
	counter(ch, intReports, s.Reports.Load())
	for r := range intreport.NumReasons + 1 {
		counter(ch, intMalformed, s.Malformed[r].Load(), r.String())
	}
	counter(ch, intDerived, s.Paths.Load(), "path")
	counter(ch, intDerived, s.Postcards.Load(), "postcard")
	counter(ch, intDerived, s.Counters.Load(), "counter")
	counter(ch, intDerived, s.Drops.Load(), "drop")
	counter(ch, intNoFlow, s.NoFlow.Load())
	counter(ch, intTruncated, s.Truncated.Load())
	counter(ch, intOutOfTTL, s.OutOfTTL.Load())
	if c.INT != nil {
		counter(ch, intKernel, c.INT.KernelDrops())
		counter(ch, intTooLong, c.INT.Stats().Truncated.Load())
	}
}
