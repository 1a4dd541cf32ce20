package hawkeye_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/dta-go/dta/internal/hawkeye"
	"github.com/dta-go/dta/internal/hawkeye/netsim"
)

func TestConfigsFromOutsideAreValidatedNamingTheField(t *testing.T) {
	good := hawkeye.Setting{EpochBits: hawkeye.DefaultRunEpochBits, Threshold: 500}
	run := hawkeye.RunConfig{Kind: netsim.Incast, Seed: 1, Setting: good}
	eval := hawkeye.EvalConfig{Kinds: []netsim.Kind{netsim.Incast}, Traces: 1, Settings: []hawkeye.Setting{good}, Methods: []hawkeye.Method{hawkeye.MethodHawkeye}}
	if err := run.Validate(); err != nil {
		t.Fatalf("a good RunConfig: %v", err)
	}
	if err := eval.Validate(); err != nil {
		t.Fatalf("a good EvalConfig: %v", err)
	}
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"a NaN threshold", (hawkeye.Setting{EpochBits: 17, Threshold: math.NaN()}).Validate(), "Threshold"},
		{"an infinite threshold", (hawkeye.Setting{EpochBits: 17, Threshold: math.Inf(1)}).Validate(), "Threshold"},
		{"a run with a NaN threshold", func() error { c := run; c.Setting.Threshold = math.NaN(); return c.Validate() }(), "Threshold"},
		{"a run with a NaN load", func() error { c := run; c.Load = math.NaN(); return c.Validate() }(), "Load"},
		{"a simulation with a NaN load", (hawkeye.SimConfig{Kind: netsim.Incast, Load: math.NaN(), Settings: []hawkeye.Setting{good}}).Validate(), "Load"},
		{"a simulation with no settings", (hawkeye.SimConfig{Kind: netsim.Incast}).Validate(), "Settings"},
		{"an eval with a NaN threshold", func() error {
			c := eval
			c.Settings = []hawkeye.Setting{{EpochBits: 17, Threshold: math.NaN()}}
			return c.Validate()
		}(), "Threshold"},
		{"an eval with too many workers", func() error { c := eval; c.Workers = 99999999999; return c.Validate() }(), "Workers"},
		{"an eval with negative workers", func() error { c := eval; c.Workers = -1; return c.Validate() }(), "Workers"},
		{"an eval with no settings", func() error { c := eval; c.Settings = nil; return c.Validate() }(), "Settings"},
		{"an eval with no methods", func() error { c := eval; c.Methods = nil; return c.Validate() }(), "Methods"},
		{"an eval with no kinds", func() error { c := eval; c.Kinds = nil; return c.Validate() }(), "Kinds"},
	} {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("%s: %v; want an error naming %s", tt.name, tt.err, tt.want)
		}
	}
}

func TestRunAndEvalRefuseBadConfigsBeforeAnyWork(t *testing.T) {
	// No session: a refused config never reaches it.
	c := hawkeye.RunConfig{Kind: netsim.Incast, Seed: 1, Setting: hawkeye.Setting{EpochBits: 17, Threshold: math.NaN()}}
	if _, err := hawkeye.Run(context.Background(), nil, c); err == nil || !strings.Contains(err.Error(), "Threshold") {
		t.Errorf("Run with a NaN threshold: %v; want an error naming Threshold", err)
	}
	e := hawkeye.EvalConfig{Kinds: netsim.Kinds, Traces: 1, Workers: 99999999999,
		Settings: []hawkeye.Setting{{EpochBits: 17, Threshold: 500}}, Methods: hawkeye.Methods}
	if _, err := hawkeye.Eval(context.Background(), nil, e); err == nil || !strings.Contains(err.Error(), "Workers") {
		t.Errorf("Eval with 99999999999 workers: %v; want an error naming Workers", err)
	}
	if _, err := hawkeye.Simulate(hawkeye.SimConfig{Kind: netsim.Incast, Load: math.NaN(), Settings: []hawkeye.Setting{{EpochBits: 17, Threshold: 500}}}); err == nil {
		t.Error("Simulate with a NaN load: no error")
	}
}
