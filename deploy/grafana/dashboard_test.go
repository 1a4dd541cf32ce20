// Package grafana holds the Grafana dashboard of dta (dta.json) and the test
// that keeps it true: every PromQL expression parses, and every metric it
// names is exported by a running dta.
package grafana_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/dta-go/dta/internal/cli/clitest"
	"github.com/dta-go/dta/internal/export"
	"github.com/dta-go/dta/internal/httpguard"
	"github.com/dta-go/dta/internal/query"
	"github.com/dta-go/dta/internal/translator"
	"github.com/dta-go/dta/internal/transport/xdp"
	"github.com/dta-go/dta/wire/dta"
	"github.com/dta-go/dta/wire/intreport"
)

// dashboard is the part of a Grafana dashboard model the test reads.
type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's panels
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile("dta.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dta.json: %v", err)
	}
	return d
}

// allPanels flattens rows.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// expression is one PromQL expression of the dashboard and where it is.
type expression struct {
	where, expr string
}

var labelValues = regexp.MustCompile(`^label_values\((.*),\s*\w+\)$`)

// expressions returns every PromQL expression of d: the panels' queries and
// the series selectors of the template variables' label_values().
func expressions(t *testing.T, d dashboard) []expression {
	t.Helper()
	var out []expression
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			out = append(out, expression{fmt.Sprintf("panel %d %q query %s", p.ID, p.Title, tg.RefID), tg.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, ok := v.Query.(string)
		m := labelValues.FindStringSubmatch(q)
		if !ok || m == nil {
			t.Errorf("variable %s: query %v is not label_values(SELECTOR, LABEL)", v.Name, v.Query)
			continue
		}
		out = append(out, expression{"variable " + v.Name, m[1]})
	}
	return out
}

var (
	grafanaInterval = regexp.MustCompile(`\$__(rate_interval|interval|range)\b`)
	grafanaVariable = regexp.MustCompile(`\$\{?\w+\}?`)
)

// promQL replaces Grafana's variables by what Prometheus would receive: a
// duration for the interval variables, a match-all regular expression for
// the template variables (which only occur in label matchers).
func promQL(expr string) string {
	return grafanaVariable.ReplaceAllString(grafanaInterval.ReplaceAllString(expr, "1m"), ".*")
}

// metricNames parses expr and returns the metric names it selects: selector
// names and __name__ matchers (an equality, or an alternation of names).
func metricNames(expr string) ([]string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(promQL(expr))
	if err != nil {
		return nil, err
	}
	var names []string
	var bad error
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		if vs.Name != "" {
			names = append(names, vs.Name)
		}
		for _, m := range vs.LabelMatchers {
			if m.Name != labels.MetricName || m.Value == vs.Name {
				continue
			}
			switch m.Type {
			case labels.MatchEqual:
				names = append(names, m.Value)
			case labels.MatchRegexp:
				for _, alt := range strings.Split(m.Value, "|") {
					if !regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`).MatchString(alt) {
						bad = fmt.Errorf("__name__=~%q: only an alternation of metric names can be checked", m.Value)
					}
					names = append(names, alt)
				}
			default:
				bad = fmt.Errorf("__name__ matcher %s cannot be checked", m)
			}
		}
		return nil
	})
	return names, bad
}

// exported is what a /metrics scrape declares: family name → type.
type exported map[string]string

// has reports whether name is a series of an exported family: the family
// itself, or a histogram's (or summary's) _bucket, _sum or _count.
func (x exported) has(name string) bool {
	if _, ok := x[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, found := strings.CutSuffix(name, suffix)
		if !found {
			continue
		}
		switch x[base] {
		case "histogram":
			return true
		case "summary":
			return suffix != "_bucket"
		}
	}
	return false
}

// missing returns the names exprs use that x does not export, each with the
// first place it is used.
func missing(t *testing.T, exprs []expression, x exported) []string {
	t.Helper()
	var out []string
	seen := map[string]bool{}
	for _, e := range exprs {
		names, err := metricNames(e.expr)
		if err != nil {
			t.Errorf("%s: %v\n\t%s", e.where, err, e.expr)
			continue
		}
		if len(names) == 0 {
			t.Errorf("%s selects no metric: %s", e.where, e.expr)
		}
		for _, n := range names {
			if !x.has(n) && !seen[n] && onlyWhenConfigured[n] == "" {
				seen[n] = true
				out = append(out, fmt.Sprintf("%s (%s)", n, e.where))
			}
		}
	}
	return out
}

func TestTheCheckerFindsMetricsThatDoNotExist(t *testing.T) {
	x := exported{"dta_a_total": "counter", "dta_h_seconds": "histogram", "dta_g": "gauge", "dta_s": "summary"}
	for _, tt := range []struct {
		name, expr string
		missing    int
	}{
		{"a counter in rate() exists", `sum by (k) (rate(dta_a_total{job=~"$job"}[$__rate_interval]))`, 0},
		{"a misspelt metric is missing", `rate(dta_a_totl[5m])`, 1},
		{"a histogram's buckets, sum and count exist", `histogram_quantile(0.9, sum by (le) (rate(dta_h_seconds_bucket[1m]))) + dta_h_seconds_sum / dta_h_seconds_count`, 0},
		{"a gauge has no buckets", `dta_g_bucket`, 1},
		{"a summary has no buckets", `dta_s_bucket + dta_s_count`, 1},
		{"names in a __name__ alternation are checked", `{__name__=~"dta_g|dta_nope", instance=~"$instance"}`, 1},
		{"both sides of a binary operation are checked", `dta_g - dta_other`, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := missing(t, []expression{{tt.name, tt.expr}}, x); len(got) != tt.missing {
				t.Errorf("missing %v, want %d names", got, tt.missing)
			}
		})
	}
	if _, err := metricNames(`sum(rate(dta_a_total[5m])`); err == nil {
		t.Error("an unbalanced parenthesis parsed")
	}
}

func TestDashboardIsAWellFormedGrafanaDashboard(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("uid %q, title %q, schemaVersion %d: want a uid, a title and Grafana 10+'s schema (≥ 36)", d.UID, d.Title, d.SchemaVersion)
	}
	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name)
	}
	if !slices.Equal(vars, []string{"datasource", "job", "instance"}) {
		t.Errorf("template variables %v, want datasource, job, instance", vars)
	}
	ids := map[int]bool{}
	panels := allPanels(d.Panels)
	for _, p := range panels {
		where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		if ids[p.ID] || p.ID == 0 {
			t.Errorf("%s: id missing or used twice", where)
		}
		ids[p.ID] = true
		if g := p.GridPos; g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("%s: gridPos %+v outside Grafana's 24 columns", where, g)
		}
		if p.Title == "" {
			t.Errorf("%s has no title", where)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || p.Datasource.Type != "prometheus" {
			t.Errorf("%s: data source %+v, want the $datasource variable", where, p.Datasource)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("%s: a query without expression or with a missing or repeated refId %q", where, tg.RefID)
			}
			refs[tg.RefID] = true
			if strings.Contains(tg.Expr, "dta_") && !strings.Contains(tg.Expr, `instance=~"$instance"`) {
				t.Errorf("%s: query %s ignores the instance variable", where, tg.RefID)
			}
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s has no query", where)
		}
	}
	if len(panels) < 20 {
		t.Errorf("%d panels", len(panels))
	}
}

// scrapeUp runs `dta up --sink roce --demo` in this process (every
// component that exports metrics: translator, report sockets, RoCEv2
// requester and responder, stores, query API), makes a failing query so that
// the error counters exist, and returns what /metrics declares.
func scrapeUp(t *testing.T) exported {
	t.Helper()
	// A Kafka-protocol broker in this process, for the export metrics.
	kafka, err := kfake.NewCluster(kfake.SeedTopics(1, "dta.append", "dta.paths", "dta.changes"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kafka.Close)
	_, url := clitest.Up(t, 4, "--sink", "roce", "--demo", "--data-dir", t.TempDir(), "--int-listen", "127.0.0.1:0",
		"--export-brokers", strings.Join(kafka.ListenAddrs(), ","))
	get := func(path string) string {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	get("/v1/stores/nope/keywrite?key=1") // a 404: dta_query_errors_total
	get("/v1/stores/keywrite/keywrite?key=1")
	// The responder's per-QP gauge exists once the translator connected, and
	// the requester's counters move once the demo's writes flow.
	deadline := time.Now().Add(20 * time.Second)
	for {
		text := get("/metrics")
		if strings.Contains(text, "dta_rdma_responder_qp_expected_psn{") && strings.Contains(text, `dta_translator_reports_total{primitive="append"}`) {
			x := exported{}
			for _, line := range strings.Split(text, "\n") {
				if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
					x[f[2]] = f[3]
				}
			}
			return x
		}
		if time.Now().After(deadline) {
			t.Fatalf("no queue pair in /metrics after 20s:\n%s", text)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// notOnDashboard lists the dta metrics the dashboard leaves out on purpose,
// with the reason.
var notOnDashboard = map[string]string{}

// onlyWhenConfigured lists the dta metrics a default dta up does not export,
// with the setting that makes them appear; the dashboard may use them.
var onlyWhenConfigured = map[string]string{
	"dta_http_tls_certificate_expiry_seconds": "http.tls_cert and http.tls_key",
	"dta_fanout_datagrams_total":              "dta translator --collector A,B,C (several collectors)",
	"dta_fanout_reports_total":                "dta translator --collector A,B,C (several collectors)",
	"dta_fanout_copies_total":                 "dta translator --collector A,B,C (several collectors)",
	"dta_fanout_malformed_total":              "dta translator --collector A,B,C (several collectors)",
	"dta_fanout_drops_total":                  "dta translator --collector A,B,C (several collectors)",
	"dta_fanout_acks_total":                   "dta translator --collector A,B,C (several collectors)",
	"dta_fanout_nacks_total":                  "dta translator --collector A,B,C (several collectors)",
	"dta_fanout_collector_up":                 "dta translator --collector A,B,C (several collectors)",
	"dta_fanout_replicas":                     "dta translator --collector A,B,C (several collectors)",
	"dta_xdp_packets_total":                   "translator.transport: xdp",
	"dta_xdp_bytes_total":                     "translator.transport: xdp",
	"dta_xdp_batches_total":                   "translator.transport: xdp",
	"dta_xdp_empty_polls_total":               "translator.transport: xdp",
	"dta_xdp_fill_starved_total":              "translator.transport: xdp",
	"dta_xdp_invalid_descs_total":             "translator.transport: xdp",
	"dta_xdp_reply_errors_total":              "translator.transport: xdp",
	"dta_xdp_malformed_total":                 "translator.transport: xdp",
	"dta_xdp_tx_frames_total":                 "collector.transport: xdp (collector.xdp.tx_frames)",
	"dta_xdp_tx_full_total":                   "collector.transport: xdp (collector.xdp.tx_frames)",
	"dta_xdp_tx_errors_total":                 "collector.transport: xdp (collector.xdp.tx_frames)",
	"dta_xdp_tx_kick_seconds_total":           "collector.transport: xdp (collector.xdp.tx_frames)",
	"dta_xdp_kernel_rx_dropped_total":         "translator.transport: xdp",
	"dta_xdp_kernel_rx_ring_full_total":       "translator.transport: xdp",
	"dta_xdp_kernel_rx_fill_ring_empty_total": "translator.transport: xdp",
	"dta_xdp_kernel_rx_invalid_descs_total":   "translator.transport: xdp",
}

func TestEveryMetricTheDashboardUsesIsExported(t *testing.T) {
	d := loadDashboard(t)
	exprs := expressions(t, d)
	x := scrapeUp(t)
	for _, m := range missing(t, exprs, x) {
		t.Errorf("the dashboard uses %s, which dta up --sink roce --data-dir --int-listen --export-brokers does not export", m)
	}
	// And the other way: every dta metric has a panel, so that a new metric
	// is not forgotten.
	used := map[string]bool{}
	for _, e := range exprs {
		names, _ := metricNames(e.expr)
		for _, n := range names {
			used[n] = true
		}
	}
	for name, typ := range x {
		if !strings.HasPrefix(name, "dta_") || notOnDashboard[name] != "" {
			continue
		}
		if !used[name] && !(typ == "histogram" && used[name+"_bucket"]) {
			t.Errorf("%s (%s) is exported but no panel shows it: add one to deploy/grafana/dta.json, or list it in notOnDashboard with the reason", name, typ)
		}
	}
	// The metrics only other settings export need a panel as much.
	for name, setting := range onlyWhenConfigured {
		if !used[name] && notOnDashboard[name] == "" {
			t.Errorf("%s (exported with %s) has no panel: add one to deploy/grafana/dta.json, or list it in notOnDashboard with the reason", name, setting)
		}
	}
}

// The metrics reference, docs/METRICS.md, names every family dta exports
// (in a code span: `dta_name`, or `dta_name{labels}` for an example with
// labels), lists the values of the labels whose set is fixed, and has a
// section of PromQL (a ```promql block, one expression a line, # comments).
const metricsReference = "../../docs/METRICS.md"

// reference is what a metrics reference says.
type reference struct {
	// named maps each dta_ name a code span holds to the first line (from
	// 1) that names it: families, and series such as a histogram's _bucket.
	named map[string]int
	// promql holds the expressions of the ```promql blocks.
	promql []expression
	lines  []string
	// section holds, for each line, the index of the heading above it (-1
	// before the first heading).
	section []int
}

// namedFamily is a code span that names a metric: the name alone, or with
// label matchers. `dta_rdma_responder_*` and `grep '^dta_int'` name none.
var namedFamily = regexp.MustCompile(`^(dta_[a-z0-9_]*[a-z0-9])(\{[^{}]*\})?$`)

// parseReference reads a metrics reference in Markdown. Only code spans
// outside fenced blocks name families; only ```promql blocks hold PromQL.
func parseReference(where, text string) reference {
	r := reference{named: map[string]int{}}
	fence, heading := "", -1
	for i, line := range strings.Split(text, "\n") {
		r.lines = append(r.lines, line)
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			if fence == "" {
				fence = strings.TrimSpace(strings.TrimPrefix(trimmed, "```")) + " " // an info string may be empty
			} else {
				fence = ""
			}
		case fence != "":
			if strings.HasPrefix(fence, "promql ") && trimmed != "" && !strings.HasPrefix(trimmed, "#") {
				r.promql = append(r.promql, expression{fmt.Sprintf("%s:%d", where, i+1), trimmed})
			}
		default:
			if strings.HasPrefix(line, "#") {
				heading = i
			}
			spans := strings.Split(line, "`")
			for j := 1; j < len(spans); j += 2 {
				if m := namedFamily.FindStringSubmatch(spans[j]); m != nil {
					if _, ok := r.named[m[1]]; !ok {
						r.named[m[1]] = i + 1
					}
				}
			}
		}
		r.section = append(r.section, heading)
	}
	return r
}

func loadReference(t *testing.T) reference {
	t.Helper()
	b, err := os.ReadFile(metricsReference)
	if err != nil {
		t.Fatal(err)
	}
	return parseReference("docs/METRICS.md", string(b))
}

// docOf returns what the reference says of family: the lines that name it,
// and the sections whose heading names it (a table of its reasons).
func (r reference) docOf(family string) string {
	mentions := func(line string) bool {
		return strings.Contains(line, "`"+family+"`") || strings.Contains(line, "`"+family+"{")
	}
	var b strings.Builder
	for i, line := range r.lines {
		if mentions(line) || (r.section[i] >= 0 && mentions(r.lines[r.section[i]])) {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func TestTheReferenceParserFindsFamiliesReasonsAndPromQL(t *testing.T) {
	r := parseReference("test.md", strings.Join([]string{
		"# Metrics",
		"| `dta_a_total` | counter | `reason`: `x` | up | meaning, see `dta_h_seconds_bucket` |",
		"Every `dta_rdma_responder_*` family; `curl -s localhost:8040/metrics | grep '^# HELP dta_'`; `dta_b{reason=\"y\"}`.",
		"```promql",
		"# a comment",
		"sum by (reason) (rate(dta_a_total[5m]))",
		"",
		"```",
		"```sh",
		"curl -s localhost:8040/metrics | grep `dta_in_a_fence`",
		"```",
		"## Reasons of `dta_b`",
		"| `z` | what |",
		"## Other",
		"| `w` | what |",
	}, "\n"))
	var named []string
	for n := range r.named {
		named = append(named, n)
	}
	slices.Sort(named)
	if want := []string{"dta_a_total", "dta_b", "dta_h_seconds_bucket"}; !slices.Equal(named, want) {
		t.Errorf("named %v, want %v", named, want)
	}
	if len(r.promql) != 1 || r.promql[0].expr != "sum by (reason) (rate(dta_a_total[5m]))" || r.promql[0].where != "test.md:6" {
		t.Errorf("promql %+v, want the one expression of line 6", r.promql)
	}
	if d := r.docOf("dta_b"); !strings.Contains(d, `dta_b{reason="y"}`) || !strings.Contains(d, "`z`") || strings.Contains(d, "`w`") || strings.Contains(d, "`x`") {
		t.Errorf("docOf(dta_b) = %q: want its line and its section, nothing else", d)
	}
	if d := r.docOf("dta_a_total"); !strings.Contains(d, "`x`") || strings.Contains(d, "`z`") {
		t.Errorf("docOf(dta_a_total) = %q", d)
	}
}

// declaredFamilies returns the families internal/metrics declares: every
// desc("name", ...) there is the family dta_name.
func declaredFamilies(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../internal/metrics/*.go")
	if err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile(`\bdesc\(\s*"([a-z0-9_]+)"`)
	var names []string
	prefixed := false
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		prefixed = prefixed || strings.Contains(string(b), `prometheus.NewDesc("dta_"+name`)
		for _, m := range call.FindAllStringSubmatch(string(b), -1) {
			names = append(names, "dta_"+m[1])
		}
	}
	if !prefixed || len(names) < 150 {
		t.Fatalf("found %d desc(...) calls in internal/metrics (dta_ prefix found: %v): has desc changed?", len(names), prefixed)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func TestEveryExportedMetricIsInTheMetricsReference(t *testing.T) {
	ref := loadReference(t)
	x := scrapeUp(t)
	// Every family dta up exports, and every one only other settings
	// export, has its row.
	known := map[string]string{}
	for name := range x {
		if strings.HasPrefix(name, "dta_") {
			known[name] = "dta up --sink roce --data-dir --int-listen --export-brokers"
		}
	}
	for name, setting := range onlyWhenConfigured {
		known[name] = setting
	}
	for name, by := range known {
		if _, ok := ref.named[name]; !ok {
			t.Errorf("%s (exported by %s) is not in docs/METRICS.md: add a row naming it as `%s`", name, by, name)
		}
	}
	// Every name the reference gives is exported (or a histogram's series).
	for name, line := range ref.named {
		if !x.has(name) && onlyWhenConfigured[name] == "" {
			t.Errorf("docs/METRICS.md:%d names %s, which neither dta up exports nor onlyWhenConfigured lists: a stale row, or a misspelt name", line, name)
		}
	}
	// A family internal/metrics declares that neither is known: the
	// setting that exports it belongs in onlyWhenConfigured (and it in the
	// reference).
	for _, name := range declaredFamilies(t) {
		if known[name] == "" {
			t.Errorf("internal/metrics declares %s, which dta up does not export and onlyWhenConfigured does not list: add the setting that exports it to onlyWhenConfigured, and a row to docs/METRICS.md", name)
		}
	}
	// The reference's PromQL parses and uses exported metrics only.
	if len(ref.promql) < 10 {
		t.Errorf("docs/METRICS.md has %d PromQL expressions in ```promql blocks", len(ref.promql))
	}
	for _, m := range missing(t, ref.promql, x) {
		t.Errorf("the PromQL of docs/METRICS.md uses %s, which dta does not export", m)
	}
}

// valuesOf returns the metric label values of the first n values of a
// reason (or other) type.
func valuesOf[T ~uint8 | ~int](n T, name func(T) string) []string {
	var out []string
	for v := T(0); v < n; v++ {
		out = append(out, name(v))
	}
	return out
}

func TestEveryFixedLabelValueIsInTheMetricsReference(t *testing.T) {
	ref := loadReference(t)
	var primitives, xdpReasons []string
	for _, p := range dta.Primitives {
		primitives = append(primitives, p.String())
	}
	for _, r := range xdp.Reasons() {
		xdpReasons = append(xdpReasons, r.String())
	}
	for _, tt := range []struct {
		family, label string
		values        []string
	}{
		// The values as internal/metrics exports them.
		{"dta_query_errors_total", "reason", valuesOf(query.NumReasons, query.Reason.String)},
		{"dta_query_requests_total", "endpoint", valuesOf(query.NumEndpoints, query.Endpoint.String)},
		{"dta_translator_drops_total", "reason", valuesOf(translator.NumReasons, translator.Reason.String)},
		{"dta_translator_reports_total", "primitive", primitives},
		{"dta_int_malformed_total", "reason", valuesOf(intreport.NumReasons+1, intreport.Reason.String)},
		{"dta_http_refused_total", "reason", valuesOf(httpguard.NumReasons, httpguard.Reason.String)},
		{"dta_xdp_malformed_total", "reason", xdpReasons},
		{"dta_export_dropped_total", "reason", valuesOf(export.NumDropReasons, export.DropReason.String)},
		{"dta_export_records_total", "stream", valuesOf(export.NumStreams, export.Stream.String)},
	} {
		t.Run(tt.family+"/"+tt.label, func(t *testing.T) {
			doc := ref.docOf(tt.family)
			if doc == "" {
				t.Fatalf("docs/METRICS.md does not name %s", tt.family)
			}
			for _, v := range tt.values {
				if !strings.Contains(doc, "`"+v+"`") {
					t.Errorf("%s{%s=%q} is not in docs/METRICS.md: add `%s` to the row of %s, or to a table under a heading naming it", tt.family, tt.label, v, v, tt.family)
				}
			}
		})
	}
}
