package hawkeye

import (
	"fmt"
	"math"
	"slices"

	"github.com/dta-go/dta/internal/hawkeye/netsim"
)

// Limits of the configurations, checked by their Validate methods.
const (
	// MinThreshold and MaxThreshold bound Setting.Threshold, % of base RTT:
	// below 100 the agent would fire on a flow's base RTT.
	MinThreshold = 100
	MaxThreshold = 100000
	// MaxWorkers bounds EvalConfig.Workers: each worker holds a whole
	// simulation, so more than this costs memory without speed.
	MaxWorkers = 1024
)

// Validate reports what is wrong with s, naming the field.
func (s Setting) Validate() error {
	if math.IsNaN(s.Threshold) || s.Threshold < MinThreshold || s.Threshold > MaxThreshold {
		return fmt.Errorf("hawkeye: Setting.Threshold = %v, want %d..%d %% of base RTT", s.Threshold, MinThreshold, MaxThreshold)
	}
	if s.EpochBits < 10 || s.EpochBits > 30 {
		return fmt.Errorf("hawkeye: Setting.EpochBits = %d, want 10..30", s.EpochBits)
	}
	return nil
}

// validLoad checks a background load: at most 1, not NaN (negative: none).
func validLoad(load float64) error {
	if math.IsNaN(load) || load > 1 || math.IsInf(load, -1) {
		return fmt.Errorf("hawkeye: Load = %v, want at most 1 (negative: no background traffic)", load)
	}
	return nil
}

func validKind(k netsim.Kind) error {
	if !slices.Contains(netsim.Kinds, k) {
		return fmt.Errorf("hawkeye: Kind = %q, want one of %v", k, netsim.Kinds)
	}
	return nil
}

func validMethods(ms []Method) error {
	for _, m := range ms {
		if !slices.Contains(Methods, m) {
			return fmt.Errorf("hawkeye: Methods: unknown method %q", m)
		}
	}
	return nil
}

// Validate reports what is wrong with c, naming the field.
func (c SimConfig) Validate() error {
	if err := validKind(c.Kind); err != nil {
		return err
	}
	if err := validLoad(c.Load); err != nil {
		return err
	}
	if len(c.Settings) == 0 {
		return fmt.Errorf("hawkeye: SimConfig.Settings: none given")
	}
	for _, st := range c.Settings {
		if err := st.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Validate reports what is wrong with c, naming the field. Empty Methods
// means MethodHawkeye.
func (c RunConfig) Validate() error {
	if err := validKind(c.Kind); err != nil {
		return err
	}
	if err := validLoad(c.Load); err != nil {
		return err
	}
	if err := c.Setting.Validate(); err != nil {
		return err
	}
	return validMethods(c.Methods)
}

// Validate reports what is wrong with c, naming the field.
func (c EvalConfig) Validate() error {
	switch {
	case len(c.Kinds) == 0:
		return fmt.Errorf("hawkeye: EvalConfig.Kinds: none given")
	case c.Traces < 1:
		return fmt.Errorf("hawkeye: EvalConfig.Traces = %d, want at least 1", c.Traces)
	case len(c.Settings) == 0:
		return fmt.Errorf("hawkeye: EvalConfig.Settings: none given")
	case len(c.Methods) == 0:
		return fmt.Errorf("hawkeye: EvalConfig.Methods: none given")
	case c.Workers < 0 || c.Workers > MaxWorkers:
		return fmt.Errorf("hawkeye: EvalConfig.Workers = %d, want 0 (GOMAXPROCS) to %d", c.Workers, MaxWorkers)
	}
	for _, k := range c.Kinds {
		if err := validKind(k); err != nil {
			return err
		}
	}
	if err := validLoad(c.Load); err != nil {
		return err
	}
	for _, st := range c.Settings {
		if err := st.Validate(); err != nil {
			return err
		}
	}
	return validMethods(c.Methods)
}
