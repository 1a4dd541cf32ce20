package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dta-go/dta/internal/admit"
	"github.com/dta-go/dta/internal/httpguard"
)

// HTTPGuard exports an HTTP server guard's counters.
type HTTPGuard struct{ G *httpguard.Guard }

var (
	hgRequests = desc("http_requests_total", "HTTP requests received (before authentication and limits).")
	hgRefused  = desc("http_refused_total", "HTTP requests refused before reaching the API, by reason (400, 401, 403, 404, 405, 408, 413, 503).", "reason")
	hgInFlight = desc("http_in_flight_requests", "HTTP requests being served now (streams aside).")
	hgStreams  = desc("http_open_streams", "Long polls and notification streams open now.")
	hgBodies   = desc("http_receiving_bodies", "Request bodies being received now (before their request is served).")
	hgLimits   = desc("http_limit", "The HTTP server's bounds: max_requests, max_streams.", "limit")
	hgAuth     = desc("http_auth_tokens", "Bearer tokens accepted now (0: authentication off).")
	hgCertEnd  = desc("http_tls_certificate_expiry_seconds", "Expiry of the TLS certificate in force, Unix time (absent without TLS).")
)

// Describe implements prometheus.Collector.
func (c HTTPGuard) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{hgRequests, hgRefused, hgInFlight, hgStreams, hgBodies, hgLimits, hgAuth, hgCertEnd} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c HTTPGuard) Collect(ch chan<- prometheus.Metric) {
	s := c.G.Stats()
	counter(ch, hgRequests, s.Requests.Load())
	for r := range httpguard.NumReasons {
		counter(ch, hgRefused, s.Refused[r].Load(), r.String())
	}
	gauge(ch, hgInFlight, float64(s.InFlight.Load()))
	gauge(ch, hgStreams, float64(s.Streams.Load()))
	gauge(ch, hgBodies, float64(s.Bodies.Load()))
	l := c.G.Limits()
	gauge(ch, hgLimits, float64(l.MaxRequests), "max_requests")
	gauge(ch, hgLimits, float64(l.MaxStreams), "max_streams")
	gauge(ch, hgAuth, float64(c.G.Access().Tokens.Len()))
	if cert := c.G.Certificate(); cert != nil {
		gauge(ch, hgCertEnd, float64(cert.Leaf().NotAfter.Unix()))
	}
}

// SourceGate exports the translator's source gate: its rate table. (What
// it refused is counted in dta_translator_drops_total, reasons not_allowed
// and rate_limited.)
type SourceGate struct{ G *admit.Gate }

var (
	sgSources   = desc("translator_rate_table_sources", "Source addresses tracked for per-source rate limits now.")
	sgSize      = desc("translator_rate_table_size", "Most source addresses the rate table tracks (translator.source_table).")
	sgEvictions = desc("translator_rate_table_evictions_total", "Sources forgotten for another while their rate bucket was not full.")
	sgRules     = desc("translator_allow_sources", "Entries of translator.allow_sources in force (0: every source).")
	sgRate      = desc("translator_source_rate", "translator.source_rate in force (datagrams/s per source; 0: no limit).")
)

// Describe implements prometheus.Collector.
func (c SourceGate) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{sgSources, sgSize, sgEvictions, sgRules, sgRate} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c SourceGate) Collect(ch chan<- prometheus.Metric) {
	s := c.G.Stats()
	gauge(ch, sgSources, float64(s.Sources.Load()))
	gauge(ch, sgSize, float64(c.G.TableSize()))
	counter(ch, sgEvictions, s.Evictions.Load())
	p := c.G.Policy()
	gauge(ch, sgRules, float64(p.Allow.Len()))
	gauge(ch, sgRate, float64(p.Rate))
}

// Reloads exports the outcome of configuration reloads (SIGHUP).
type Reloads struct {
	OK, Failed *atomic.Uint64
	// LastOK is the Unix time of the last reload that took effect (or of
	// the start).
	LastOK *atomic.Int64
}

var (
	rlTotal = desc("config_reloads_total", "Configuration reloads (SIGHUP), by result: ok, or failed (the old configuration stays).", "result")
	rlLast  = desc("config_last_reload_success_timestamp_seconds", "Unix time the configuration in force was loaded.")
)

// Describe implements prometheus.Collector.
func (c Reloads) Describe(ch chan<- *prometheus.Desc) {
	ch <- rlTotal
	ch <- rlLast
}

// Collect implements prometheus.Collector.
func (c Reloads) Collect(ch chan<- prometheus.Metric) {
	counter(ch, rlTotal, c.OK.Load(), "ok")
	counter(ch, rlTotal, c.Failed.Load(), "failed")
	gauge(ch, rlLast, float64(c.LastOK.Load()))
}
