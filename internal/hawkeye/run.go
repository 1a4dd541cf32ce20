package hawkeye

import (
	"context"
	"fmt"

	"github.com/dta-go/dta/internal/hawkeye/netsim"
	"github.com/dta-go/dta/internal/hawkeye/telemetry"
)

// DefaultRunEpochBits is the default epoch of one run: 2^17 ns = 131 µs,
// the paper's smallest (Fig. 7's best for transient bursts).
const DefaultRunEpochBits = 17

// DefaultThreshold returns the detection threshold a single run uses when
// none is given: 200 % of base RTT for contention (with 64 KiB Xoff a queue
// cannot delay an intra-rack flow much more without PFC), 500 % otherwise
// (late enough for a deadlock's loop to close). These are the settings
// where the evaluation finds HAWKEYE right (docs/REPRODUCTION.md).
func DefaultThreshold(k netsim.Kind) float64 {
	if k == netsim.Contention {
		return 200
	}
	return 500
}

// RunConfig configures Run.
type RunConfig struct {
	Kind      netsim.Kind
	Seed      uint64
	Load      float64
	Setting   Setting
	Methods   []Method
	Net       netsim.Config
	Telemetry telemetry.Config
}

// RunResult is one scenario diagnosed end to end.
type RunResult struct {
	Trace    *Trace
	Setting  Setting
	Verdicts []Verdict
}

// Run simulates one scenario and diagnoses its first trigger with every
// method through s. It refuses a cfg that does not Validate.
func Run(ctx context.Context, s *Session, cfg RunConfig) (*RunResult, error) {
	if len(cfg.Methods) == 0 {
		cfg.Methods = []Method{MethodHawkeye}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	strats := map[telemetry.Strategy]bool{}
	var ss []telemetry.Strategy
	for _, m := range cfg.Methods {
		if !strats[m.strategy()] {
			strats[m.strategy()] = true
			ss = append(ss, m.strategy())
		}
	}
	tr, err := Simulate(SimConfig{Kind: cfg.Kind, Seed: cfg.Seed, Load: cfg.Load, Settings: []Setting{cfg.Setting},
		Strategies: ss, Telemetry: cfg.Telemetry, Net: cfg.Net})
	if err != nil {
		return nil, err
	}
	if sp := tr.Polls[cfg.Setting]; sp == nil || sp.Trigger == nil {
		return &RunResult{Trace: tr, Setting: cfg.Setting}, fmt.Errorf("hawkeye: %s seed %d: no agent fired at %s", cfg.Kind, cfg.Seed, cfg.Setting)
	}
	vs, err := s.Diagnose(ctx, tr, cfg.Setting, cfg.Methods)
	if err != nil {
		return nil, err
	}
	return &RunResult{Trace: tr, Setting: cfg.Setting, Verdicts: vs}, nil
}
