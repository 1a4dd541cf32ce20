package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dta-go/dta/internal/fanout"
	"github.com/dta-go/dta/internal/translator"
	"github.com/dta-go/dta/internal/transport/udp"
)

// RegisterWith registers c with constant labels added to every series it
// exports (e.g. collector="c1" for one of several collectors' translators).
func (r *Registry) RegisterWith(labels map[string]string, c prometheus.Collector) error {
	return prometheus.WrapRegistererWith(labels, r.reg).Register(c)
}

// collectUDP exports a report socket set's counters.
func collectUDP(ch chan<- prometheus.Metric, l *udp.Listener) {
	u := l.Stats()
	counter(ch, udpDesc["datagrams"], u.Datagrams.Load())
	counter(ch, udpDesc["bytes"], u.Bytes.Load())
	counter(ch, udpDesc["batches"], u.Batches.Load())
	counter(ch, udpDesc["truncated"], u.Truncated.Load())
	counter(ch, udpDesc["read_errors"], u.ReadErrors.Load())
	counter(ch, udpDesc["reply_errors"], u.ReplyErrors.Load())
	counter(ch, udpDesc["kernel_drops"], l.KernelDrops())
}

// Fanout exports a translator front end spread over several collectors:
// the report sockets' counters and the router's (each collector's
// translator and requester are registered with a collector label).
type Fanout struct {
	R        *fanout.Router
	Listener *udp.Listener
	// Connected reports whether collector i's RoCEv2 connection is up.
	Connected func(i int) bool
}

var (
	foDatagrams = desc("fanout_datagrams_total", "Report datagrams the front end received (those it refused included; dta_fanout_drops_total says which).")
	foReports   = desc("fanout_reports_total", "Reports routed (each once, whatever the replicas).")
	foCopies    = desc("fanout_copies_total", "Reports handed to collectors' translators (replicas per report), by collector.", "collector")
	foMalformed = desc("fanout_malformed_total", "Datagrams or reports the front end could not decode (also in dta_fanout_drops_total, by reason).")
	foDrops     = desc("fanout_drops_total", "Datagrams and reports the front end refused before any collector's translator saw them (decoding, sequence, source allowlist and rate limits), by reason; what a collector's translator refuses is in its dta_translator_drops_total.", "reason")
	foAcks      = desc("fanout_acks_total", "ACKs the front end answered retransmittable datagrams with (with several collectors the sequence is the front end's).")
	foNacks     = desc("fanout_nacks_total", "NACKs the front end answered retransmittable datagrams with, after a gap in a reporter's sequence.")
	foUp        = desc("fanout_collector_up", "1 while the RoCEv2 connection to the collector is up, 0 while it is down and reconnecting.", "collector")
	foReplicas  = desc("fanout_replicas", "translator.replicas: collectors holding each key.")
)

// Describe implements prometheus.Collector.
func (c Fanout) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{foDatagrams, foReports, foCopies, foMalformed, foDrops, foAcks, foNacks, foUp, foReplicas} {
		ch <- d
	}
	if c.Listener != nil {
		for _, d := range udpDesc {
			ch <- d
		}
	}
}

// Collect implements prometheus.Collector.
func (c Fanout) Collect(ch chan<- prometheus.Metric) {
	s := c.R.Stats()
	counter(ch, foDatagrams, s.Datagrams.Load())
	counter(ch, foReports, s.Reports.Load())
	counter(ch, foMalformed, s.Malformed.Load())
	counter(ch, foAcks, s.Acks.Load())
	counter(ch, foNacks, s.Nacks.Load())
	for r := range translator.NumReasons {
		counter(ch, foDrops, s.Drops[r].Load(), r.String())
	}
	for i, m := range c.R.Members() {
		counter(ch, foCopies, c.R.CopiesTo(i), m.Name)
		up := 0.0
		if c.Connected != nil && c.Connected(i) {
			up = 1
		}
		gauge(ch, foUp, up, m.Name)
	}
	gauge(ch, foReplicas, float64(c.R.Replicas()))
	if c.Listener != nil {
		collectUDP(ch, c.Listener)
	}
}
