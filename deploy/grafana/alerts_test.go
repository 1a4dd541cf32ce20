package grafana_test

import (
	"bytes"
	"os"
	"testing"
	"text/template"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// alertRules is the Prometheus rules file shipped beside the dashboard.
const alertRules = "../prometheus/dta-alerts.yml"

// ruleFile is Prometheus's rule file format (the fields dta's file uses;
// any other field is refused, as Prometheus refuses it).
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// templateFuncs stands for the functions Prometheus gives alert templates,
// so that a template naming another fails to parse.
var templateFuncs = template.FuncMap{
	"humanize": func(any) string { return "" }, "humanizePercentage": func(any) string { return "" },
	"humanizeDuration": func(any) string { return "" }, "humanizeTimestamp": func(any) string { return "" },
}

// templateVars are the variables Prometheus defines ahead of every alert
// template.
const templateVars = "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"

// The alerting rules load as Prometheus would load them — strict YAML, every
// expression parses, every `for` is a duration, every label and annotation
// template parses — every rule is an alert with a summary, and every metric
// an expression names is one a dta process exports.
func TestTheAlertRulesAreValidAndNameOnlyExportedMetrics(t *testing.T) {
	b, err := os.ReadFile(alertRules)
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", alertRules, err)
	}
	var exprs []expression
	names := map[string]bool{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			where := "alert " + r.Alert
			switch {
			case r.Alert == "":
				t.Errorf("group %s: a rule that is not an alert (record %q)", g.Name, r.Record)
				continue
			case names[r.Alert]:
				t.Errorf("%s twice", where)
			case r.Annotations["summary"] == "":
				t.Errorf("%s has no summary", where)
			}
			names[r.Alert] = true
			if _, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr); err != nil {
				t.Errorf("%s: %v", where, err)
			}
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("%s: for: %v", where, err)
				}
			}
			for k, v := range r.Annotations {
				if _, err := template.New(k).Funcs(templateFuncs).Parse(templateVars + v); err != nil {
					t.Errorf("%s: annotation %s: %v", where, k, err)
				}
			}
			if r.Labels["severity"] == "" {
				t.Errorf("%s has no severity label", where)
			}
			exprs = append(exprs, expression{where: where, expr: r.Expr})
		}
	}
	if len(exprs) < 10 {
		t.Fatalf("only %d alerts in %s", len(exprs), alertRules)
	}
	x := scrapeUp(t)
	for _, m := range missing(t, exprs, x) {
		t.Errorf("an alert uses %s, which no dta configuration exports", m)
	}
}
