package hawkeye

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/dta-go/dta/internal/hawkeye/netsim"
	"github.com/dta-go/dta/internal/hawkeye/telemetry"
)

// EvalConfig configures Eval.
type EvalConfig struct {
	Kinds    []netsim.Kind
	Traces   int    // per kind
	SeedBase uint64 // trace i of a kind has seed SeedBase+i+1
	Load     float64
	Settings []Setting
	Methods  []Method
	Net      netsim.Config
	// Workers simulate traces in parallel, 0 (GOMAXPROCS) to MaxWorkers.
	Workers int
	// Progress, when set, is called after each trace.
	Progress func(done, total int)
}

// DefaultEpochBits are the epoch sizes of the paper's Fig. 7 (100 µs to
// 2 ms) as powers of two: 131 µs, 262 µs, 524 µs, 1.05 ms, 2.1 ms.
var DefaultEpochBits = []uint{17, 18, 19, 20, 21}

// DefaultThresholds are the paper's detection thresholds, % of base RTT.
var DefaultThresholds = []float64{200, 300, 400, 500}

// Grid returns every combination of epochs and thresholds.
func Grid(epochBits []uint, thresholds []float64) []Setting {
	var s []Setting
	for _, e := range epochBits {
		for _, t := range thresholds {
			s = append(s, Setting{EpochBits: e, Threshold: t})
		}
	}
	return s
}

// Row aggregates one method's verdicts on one kind at one setting.
type Row struct {
	Kind   netsim.Kind `json:"kind"`
	Epoch  string      `json:"epoch"`
	Bits   uint        `json:"epoch_bits"`
	Thresh float64     `json:"threshold_pct"`
	Method Method      `json:"method"`
	Traces int         `json:"traces"`
	// Early counts the traces left out at this setting because the agent
	// fired before the anomaly had taken hold (Trace.Judgeable).
	Early   int     `json:"early,omitempty"`
	TP      int     `json:"tp"`
	FP      int     `json:"fp"`
	FN      int     `json:"fn"`
	Prec    float64 `json:"precision"` // TP/(TP+FP); 0 when nothing was reported
	Recall  float64 `json:"recall"`    // TP/(TP+FN)
	Switch  float64 `json:"switches"`  // mean switches polled per diagnosis
	Bytes   float64 `json:"bytes"`     // mean telemetry bytes per diagnosis
	Cover   float64 `json:"coverage"`  // mean share of causal switches polled
	Packets float64 `json:"polling_packets"`
	// Wrong counts the reasons of false positives.
	Wrong map[string]int `json:"wrong,omitempty"`
}

// EvalResult is the outcome of Eval.
type EvalResult struct {
	Rows         []Row         `json:"rows"`
	Traces       int           `json:"traces"`
	Polls        int           `json:"polls"`
	SimEvents    uint64        `json:"sim_events"`
	SimWall      time.Duration `json:"sim_wall_ns"`
	EventsPerSec float64       `json:"sim_events_per_sec"`
	Wall         time.Duration `json:"wall_ns"`
	ReportBytes  uint64        `json:"report_bytes"` // UDP payload the reporter sent
	// Unformed counts, per kind, the traces left out because the injected
	// anomaly did not take hold (a deadlock whose loop never closed).
	Unformed map[netsim.Kind]int `json:"unformed,omitempty"`
}

type rowKey struct {
	kind netsim.Kind
	st   Setting
	m    Method
}

// Eval simulates cfg.Traces traces of every kind and diagnoses each at every
// setting with every method, through s. It refuses a cfg that does not
// Validate.
func Eval(ctx context.Context, s *Session, cfg EvalConfig) (*EvalResult, error) {
	start := time.Now()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Workers == 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	strategies := map[telemetry.Strategy]bool{}
	for _, m := range cfg.Methods {
		strategies[m.strategy()] = true
	}
	var strats []telemetry.Strategy
	for st := range strategies {
		strats = append(strats, st)
	}
	sort.Slice(strats, func(i, j int) bool { return strats[i] < strats[j] })
	type job struct {
		i    int
		kind netsim.Kind
		seed uint64
	}
	type done struct {
		i   int
		tr  *Trace
		err error
	}
	var jobs []job
	for _, k := range cfg.Kinds {
		for t := range cfg.Traces {
			jobs = append(jobs, job{len(jobs), k, cfg.SeedBase + uint64(t) + 1})
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	in := make(chan job)
	out := make(chan done, cfg.Workers)
	var wg sync.WaitGroup
	for range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range in {
				tr, err := Simulate(SimConfig{Kind: j.kind, Seed: j.seed, Load: cfg.Load, Settings: cfg.Settings, Strategies: strats, Net: cfg.Net})
				select {
				case out <- done{j.i, tr, err}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		defer close(in)
		for _, j := range jobs {
			select {
			case in <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(out) }()

	res := &EvalResult{Traces: len(jobs), Unformed: map[netsim.Kind]int{}}
	acc := map[rowKey]*Row{}
	before := s.ReporterStats().Bytes.Load()
	n := 0
	for d := range out {
		if d.err != nil {
			return nil, d.err
		}
		n++
		tr := d.tr
		res.SimEvents += tr.Stats.Events
		res.SimWall += tr.Stats.Wall
		if !tr.Formed {
			res.Unformed[tr.Kind]++
			if cfg.Progress != nil {
				cfg.Progress(n, len(jobs))
			}
			continue
		}
		for _, st := range cfg.Settings {
			early := tr.Polls[st] != nil && tr.Polls[st].Trigger != nil && !tr.Judgeable(st)
			var vs []Verdict
			if !early {
				var err error
				if vs, err = s.Diagnose(ctx, tr, st, cfg.Methods); err != nil {
					return nil, err
				}
			}
			for _, m := range cfg.Methods {
				k := rowKey{tr.Kind, st, m}
				r := acc[k]
				if r == nil {
					r = &Row{Kind: tr.Kind, Epoch: (time.Duration(1) << st.EpochBits).String(), Bits: st.EpochBits, Thresh: st.Threshold, Method: m, Wrong: map[string]int{}}
					acc[k] = r
				}
				if early {
					r.Early++
					continue
				}
				r.Traces++
				var v *Verdict
				for i := range vs {
					if vs[i].Method == m {
						v = &vs[i]
					}
				}
				if v == nil || v.Diagnosis.Kind == "none" {
					r.FN++
					continue
				}
				res.Polls++
				if v.Correct {
					r.TP++
				} else {
					r.FP++
					r.Wrong[string(v.Diagnosis.Kind)]++
				}
				r.Switch += float64(v.Cost.Switches)
				r.Bytes += float64(v.Cost.Bytes)
				r.Cover += v.Coverage
				if c := tr.Polls[st].Collections[m.strategy()]; c != nil {
					r.Packets += float64(c.PollingPackets)
				}
			}
		}
		if cfg.Progress != nil {
			cfg.Progress(n, len(jobs))
		}
	}
	for _, r := range acc {
		if rep := r.TP + r.FP; rep > 0 {
			r.Prec = float64(r.TP) / float64(rep)
			r.Switch /= float64(rep)
			r.Bytes /= float64(rep)
			r.Cover /= float64(rep)
			r.Packets /= float64(rep)
		}
		if r.TP+r.FN > 0 {
			r.Recall = float64(r.TP) / float64(r.TP+r.FN)
		}
		if len(r.Wrong) == 0 {
			r.Wrong = nil
		}
		res.Rows = append(res.Rows, *r)
	}
	sort.Slice(res.Rows, func(i, j int) bool {
		a, b := res.Rows[i], res.Rows[j]
		if a.Kind != b.Kind {
			return kindIndex(a.Kind) < kindIndex(b.Kind)
		}
		if a.Method != b.Method {
			return methodIndex(a.Method) < methodIndex(b.Method)
		}
		if a.Bits != b.Bits {
			return a.Bits < b.Bits
		}
		return a.Thresh < b.Thresh
	})
	res.ReportBytes = s.ReporterStats().Bytes.Load() - before
	if res.SimWall > 0 {
		res.EventsPerSec = float64(res.SimEvents) / res.SimWall.Seconds()
	}
	res.Wall = time.Since(start)
	return res, nil
}

func kindIndex(k netsim.Kind) int {
	for i, x := range netsim.Kinds {
		if x == k {
			return i
		}
	}
	return len(netsim.Kinds)
}

func methodIndex(m Method) int {
	for i, x := range Methods {
		if x == m {
			return i
		}
	}
	return len(Methods)
}

// Best returns, for kind k and method m, the row of the setting with the
// most true positives (then the highest precision, then the smallest
// epoch): the method's upper bound with its best parameters (Fig. 8).
func (r *EvalResult) Best(k netsim.Kind, m Method) (Row, bool) {
	var best Row
	found := false
	for _, x := range r.Rows {
		if x.Kind != k || x.Method != m {
			continue
		}
		if !found || x.TP > best.TP || x.TP == best.TP && x.Prec > best.Prec {
			best, found = x, true
		}
	}
	return best, found
}

// Mixed sums method m's rows over every kind at one setting.
func (r *EvalResult) Mixed(m Method, st Setting) Row {
	out := Row{Kind: "mixed", Method: m, Bits: st.EpochBits, Thresh: st.Threshold, Epoch: (time.Duration(1) << st.EpochBits).String()}
	for _, x := range r.Rows {
		if x.Method == m && x.Bits == st.EpochBits && x.Thresh == st.Threshold {
			out.Traces += x.Traces
			out.TP += x.TP
			out.FP += x.FP
			out.FN += x.FN
		}
	}
	if out.TP+out.FP > 0 {
		out.Prec = float64(out.TP) / float64(out.TP+out.FP)
	}
	if out.TP+out.FN > 0 {
		out.Recall = float64(out.TP) / float64(out.TP+out.FN)
	}
	return out
}

// PR formats precision and recall as "100/100".
func (x Row) PR() string {
	if x.TP+x.FP == 0 {
		return fmt.Sprintf("–/%.0f", 100*x.Recall)
	}
	return fmt.Sprintf("%.0f/%.0f", 100*x.Prec, 100*x.Recall)
}
