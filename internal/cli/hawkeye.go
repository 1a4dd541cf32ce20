package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/internal/hawkeye"
	"github.com/dta-go/dta/internal/hawkeye/diagnose"
	"github.com/dta-go/dta/internal/hawkeye/netsim"
	"github.com/dta-go/dta/internal/hawkeye/record"
	"github.com/dta-go/dta/internal/hawkeye/telemetry"
)

// hawkeyeDTA are the flags that choose the DTA system HAWKEYE reports to.
type hawkeyeDTA struct {
	to     string
	server string
	keep   bool
}

func (o *hawkeyeDTA) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&o.to, "to", "", "translator to report to (UDP host:port) of a running `dta up --config` with the stores of `dta hawkeye config`; default: start dta up in this process")
	fl.StringVar(&o.server, "server", "", "that system's query API (http://host:port); needed with --to")
}

var hawkeyeUpReady = regexp.MustCompile(`reports on udp (\S+), queries on (http://\S+) `)

// session connects to the DTA system of the flags, or starts dta up in
// this process with HAWKEYE's stores; stop ends what was started.
func (o *hawkeyeDTA) session(ctx context.Context, stderr io.Writer) (s *hawkeye.Session, base string, stop func(), err error) {
	if (o.to == "") != (o.server == "") {
		return nil, "", nil, usageError("--to and --server go together")
	}
	stop = func() {}
	udp := o.to
	base = o.server
	if o.to == "" {
		udp, base, stop, err = startHawkeyeUp(ctx)
		if err != nil {
			return nil, "", nil, err
		}
	}
	s, err = hawkeye.Open(ctx, udp, base)
	if err != nil {
		stop()
		return nil, "", nil, err
	}
	old := stop
	stop = func() { s.Close(); old() }
	return s, base, stop, nil
}

// startHawkeyeUp runs `dta up` with record.ConfigYAML on loopback ports the
// kernel picks and returns its addresses and a function stopping it.
func startHawkeyeUp(ctx context.Context) (udp, base string, stop func(), err error) {
	dir, err := os.MkdirTemp("", "dta-hawkeye-")
	if err != nil {
		return "", "", nil, err
	}
	path := filepath.Join(dir, "hawkeye.yaml")
	if err := os.WriteFile(path, []byte(record.ConfigYAML()), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", "", nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"up", "--config", path, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"}, nil, pw, io.Discard)
		pw.Close()
	}()
	ready := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := hawkeyeUpReady.FindStringSubmatch(sc.Text()); m != nil {
				ready <- m
				break
			}
		}
		io.Copy(io.Discard, pr)
	}()
	stop = func() {
		cancel()
		<-done
		os.RemoveAll(dir)
	}
	select {
	case m := <-ready:
		return m[1], m[2], stop, nil
	case code := <-done:
		cancel()
		os.RemoveAll(dir)
		return "", "", nil, fmt.Errorf("hawkeye: dta up exited with %d before it was ready", code)
	case <-time.After(20 * time.Second):
		stop()
		return "", "", nil, fmt.Errorf("hawkeye: dta up printed no ready line in 20 s")
	}
}

func newHawkeyeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hawkeye",
		Short: "HAWKEYE: diagnose RDMA network anomalies from PFC-aware telemetry collected through DTA",
		Long: `hawkeye reproduces HAWKEYE (SIGCOMM 2025) on this system: a packet-level
simulator of an RDMA fabric (fat-tree k=4, 100 Gbps, PFC, ECMP, DCQCN) with
an injected anomaly; switch telemetry with PFC visibility; a host agent that
fires on RTT; polling that follows PFC causality; every polled switch's
records sent as DTA reports to a translator and read back from the
collector through the public client; and the provenance-graph diagnosis.

Without --to/--server each command starts dta up in this process with the
stores of 'dta hawkeye config'.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newHawkeyeSimCmd(), newHawkeyeEvalCmd(), newHawkeyeGraphCmd(), newHawkeyeConfigCmd())
	return cmd
}

func newHawkeyeConfigCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "config",
		Short: "Print the dta up configuration HAWKEYE reports into",
		Long: `config prints a dta configuration holding HAWKEYE's stores (hk-flows,
hk-ports: Append; hk-meters: Key-Write; hk-polls: Append). Start a system
with it, run scenarios against it with --to and --server, and look at the
telemetry with dta query.`,
		Example: `  dta hawkeye config > hawkeye.yaml
  dta up --config hawkeye.yaml &
  dta hawkeye sim --scenario incast --to 127.0.0.1:40040 --server http://127.0.0.1:8040
  dta query append --store hk-polls --list 0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := io.WriteString(cmd.OutOrStdout(), record.ConfigYAML())
			return err
		},
	}
}

// hawkeyeRunOptions are the flags of one scenario run.
type hawkeyeRunOptions struct {
	scenario  string
	seed      uint64
	load      float64
	epoch     time.Duration
	threshold float64
	methods   []string
	output    string
	svg       string
	dta       hawkeyeDTA
}

func (o *hawkeyeRunOptions) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&o.scenario, "scenario", "", "anomaly to inject: incast, storm, deadlock-in, deadlock-out or contention")
	fl.Uint64Var(&o.seed, "seed", 1, "random seed of the scenario (hosts, times, sizes, workload)")
	fl.Float64Var(&o.load, "load", netsim.DefaultLoad, "background load, fraction of the hosts' line rate, -1..1 (negative: none)")
	fl.DurationVar(&o.epoch, "epoch", 131*time.Microsecond, "telemetry epoch, rounded to a power of two nanoseconds (100µs → 131µs)")
	fl.Float64Var(&o.threshold, "threshold", 0, "agent threshold, % of a flow's base RTT (0: 200 for contention, 500 otherwise)")
	o.dta.add(cmd)
}

func (o *hawkeyeRunOptions) config() (hawkeye.RunConfig, error) {
	k, err := netsim.ParseKind(o.scenario)
	if err != nil {
		return hawkeye.RunConfig{}, usageError("--scenario: %v", err)
	}
	if err := checkHawkeyeLoad(o.load); err != nil {
		return hawkeye.RunConfig{}, err
	}
	if o.epoch < time.Microsecond || o.epoch > time.Second {
		return hawkeye.RunConfig{}, usageError("--epoch: %v out of range [1µs, 1s]", o.epoch)
	}
	thr := o.threshold
	if thr == 0 {
		thr = hawkeye.DefaultThreshold(k)
	}
	if err := checkFloat("threshold", thr, hawkeye.MinThreshold, hawkeye.MaxThreshold); err != nil {
		return hawkeye.RunConfig{}, err
	}
	ms, err := parseMethods(o.methods)
	if err != nil {
		return hawkeye.RunConfig{}, err
	}
	return hawkeye.RunConfig{Kind: k, Seed: o.seed, Load: o.load, Methods: ms,
		Setting: hawkeye.Setting{EpochBits: telemetry.EpochBitsFor(o.epoch), Threshold: thr}}, nil
}

// checkHawkeyeLoad refuses a --load above 1, NaN or infinite (negative, down
// to -1: no background traffic).
func checkHawkeyeLoad(load float64) error {
	return checkFloat("load", load, -1, 1)
}

func parseMethods(names []string) ([]hawkeye.Method, error) {
	if len(names) == 0 {
		return nil, usageError("--methods: none given (want hawkeye, full, victim-only, port-only, flow-only)")
	}
	var ms []hawkeye.Method
	for _, n := range names {
		ok := false
		for _, m := range hawkeye.Methods {
			if string(m) == n {
				ms, ok = append(ms, m), true
			}
		}
		if !ok {
			return nil, usageError("--methods: unknown method %q (want hawkeye, full, victim-only, port-only, flow-only)", n)
		}
	}
	return ms, nil
}

func newHawkeyeSimCmd() *cobra.Command {
	var o hawkeyeRunOptions
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run one scenario end to end through DTA and print the diagnosis",
		Long: `sim simulates one scenario on a k=4 fat-tree with background traffic,
injects the anomaly, lets the host agents fire (the first firing at or after
the anomaly's start is diagnosed), polls the switches, sends their telemetry
as DTA reports through dta up, reads it back through the query API and prints
HAWKEYE's diagnosis beside the scenario's ground truth.

--methods adds the baselines on the same telemetry: full (every switch),
victim-only (the victim's path), port-only and flow-only (HAWKEYE's polling,
one kind of record). --keep leaves dta up running afterwards so that dta query
can read the stores (Ctrl-C ends it).`,
		Example: `  dta hawkeye sim --scenario incast
  dta hawkeye sim --scenario deadlock-out --seed 7 --methods hawkeye,victim-only
  dta hawkeye sim --scenario storm --load 0.5 -o json
  dta hawkeye sim --scenario deadlock-in --keep     # then: dta query append --store hk-polls --list 0 --server URL`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runHawkeyeSim(cmd, &o)
		},
	}
	o.add(cmd)
	fl := cmd.Flags()
	fl.StringSliceVar(&o.methods, "methods", []string{"hawkeye"}, "diagnosis methods: hawkeye, full, victim-only, port-only, flow-only")
	fl.StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	fl.StringVar(&o.svg, "svg", "", "also write HAWKEYE's provenance graph to this SVG file")
	fl.BoolVar(&o.dta.keep, "keep", false, "keep the in-process dta up running after the diagnosis, until Ctrl-C")
	return cmd
}

func runHawkeyeSim(cmd *cobra.Command, o *hawkeyeRunOptions) error {
	if o.output != "table" && o.output != "json" {
		return usageError("-o: %q is not table or json", o.output)
	}
	if err := checkOutputFile("svg", o.svg); err != nil {
		return err
	}
	cfg, err := o.config()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	s, base, stop, err := o.dta.session(ctx, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer stop()
	res, err := hawkeye.Run(ctx, s, cfg)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if o.svg != "" {
		if err := writeHawkeyeSVG(o.svg, res); err != nil {
			return fmt.Errorf("--svg: %w", err)
		}
	}
	if o.output == "json" {
		if err := writeHawkeyeJSON(out, res); err != nil {
			return err
		}
	} else {
		server := base
		if o.dta.to == "" && !o.dta.keep {
			server = "" // the in-process dta up ends with this command
		}
		printHawkeyeRun(out, res, server)
	}
	if o.dta.keep && o.dta.to == "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "dta up keeps running at %s (Ctrl-C ends it)\n", base)
		<-ctx.Done()
	}
	return nil
}

// printHawkeyeRun prints sim's table output. base is the query API that
// holds the run's records after the command, "" when there is none (the
// in-process dta up without --keep).
func printHawkeyeRun(w io.Writer, res *hawkeye.RunResult, base string) {
	tr := res.Trace
	topo := tr.Topology
	names := hawkeye.Names(topo)
	flowName := func(t record.Tuple) string {
		for _, f := range tr.Flows {
			if f.Tuple == t {
				return fmt.Sprintf("%s (%s→%s, %s)", t, topo.Name(f.Src), topo.Name(f.Dst), f.Tag)
			}
		}
		return t.String()
	}
	st := tr.Stats
	fmt.Fprintf(w, "scenario %s, seed %d: %d switches, %d hosts, %d flows; %v simulated in %v (%.1f M events/s)\n",
		tr.Kind, tr.Seed, len(topo.Switches()), len(topo.Hosts()), len(tr.Flows), st.Simulated, st.Wall.Round(time.Millisecond), st.EventsPerSec/1e6)
	fmt.Fprintf(w, "  %d packets delivered, %d PFC frames, %d injected PAUSE frames, %d ECN marks, %d drops\n",
		st.Packets, st.PFCFrames, st.Injected, st.ECNMarks, st.Drops)
	sp := tr.Polls[res.Setting]
	// The truth the verdict judges: as it stood when the poll read the
	// initial port's switch, as the victim meets it.
	t := tr.TruthAt(sp.Trigger.At)
	if c := sp.Collections[telemetry.Hawkeye]; c != nil {
		t = tr.TruthFor(sp, c)
	}
	fmt.Fprintf(w, "truth:     %s at %s from %v", t.Kind, topo.PortName(t.Initial), t.Start)
	if t.Kind != tr.Truth.Kind {
		fmt.Fprintf(w, " (injected as %s; PFC from %v)", tr.Truth.Kind, tr.PFCAt)
	}
	if t.RootHost != netsim.None {
		fmt.Fprintf(w, ", PAUSE frames injected by %s", topo.Name(t.RootHost))
	} else {
		fmt.Fprintf(w, ", %d root flows", len(t.RootFlows))
	}
	if len(t.Loop) > 0 {
		var l []string
		for _, p := range t.Loop {
			l = append(l, topo.PortName(p))
		}
		fmt.Fprintf(w, ", loop %s", strings.Join(l, " → "))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "agent:     %s fired at %v (RTT %.1f× base, threshold %.0f%%); telemetry epoch %v\n",
		flowName(record.Tuple(sp.Trigger.Flow.Tuple)), sp.Trigger.At, float64(sp.Trigger.RTT)/float64(sp.Trigger.Flow.BaseRTT()),
		res.Setting.Threshold, time.Duration(1)<<res.Setting.EpochBits)
	for _, v := range res.Verdicts {
		d := v.Diagnosis
		fmt.Fprintf(w, "%-10s poll %d: %d switches, %d flow, %d port, %d meter records (%d bytes) through DTA; %d meter lookups\n",
			string(v.Method)+":", v.Poll, v.Cost.Switches, v.Cost.Flows, v.Cost.Ports, v.Cost.Meters, v.Cost.Bytes, v.Lookups)
		fmt.Fprintf(w, "  diagnosis: %s\n", d.Summary(names))
		pj := func(ps []diagnose.Port) string {
			var s []string
			for _, p := range ps {
				s = append(s, hawkeye.PortName(names, p.Switch, p.Port))
			}
			return strings.Join(s, " → ")
		}
		if len(d.Loop) > 0 {
			fmt.Fprintf(w, "  loop:      %s\n", pj(d.Loop))
		}
		if len(d.Path) > 0 {
			fmt.Fprintf(w, "  PFC path:  %s\n", pj(d.Path))
		}
		for _, c := range d.RootFlows {
			fmt.Fprintf(w, "  root flow: %s, contribution %+.1f\n", flowName(c.Tuple), c.Weight)
		}
		for _, f := range d.LoopFlows {
			fmt.Fprintf(w, "  loop flow: %s\n", flowName(f))
		}
		switch {
		case !tr.Judgeable(res.Setting):
			// Left out of the evaluation by the runner's blind rules
			// (hawkeye.Trace.Judgeable): the agent never fired, the anomaly
			// never formed, a deadlock's loop closed only after the firing, or
			// a contention's victim never crossed the contended port or was
			// paused by PFC the contention did not send.
			fmt.Fprintf(w, "  verdict:   not judged (%s); scored against the injected anomaly anyway, the diagnosis would count as %s\n", hawkeyeWhyNotJudged(tr, res.Setting), rightOrWrong(v.Correct))
		case v.Correct:
			fmt.Fprintf(w, "  verdict:   right\n")
		default:
			fmt.Fprintf(w, "  verdict:   wrong: %s\n", v.Why)
		}
	}
	if len(res.Verdicts) > 0 && base == "" {
		fmt.Fprintf(w, "in the collector: its records went with this command's dta up; rerun with --keep to query them (then: dta query append --store %s --list 0 --server URL)\n", record.PollStore)
	} else if len(res.Verdicts) > 0 {
		v := res.Verdicts[0]
		fmt.Fprintf(w, "in the collector: dta query append --store %s --list 0 --server %s   (manifests of poll %d)\n", record.PollStore, base, v.Poll)
		if len(sp.Collections) > 0 {
			for _, sn := range sp.Collections[telemetry.Hawkeye].Snapshots {
				fmt.Fprintf(w, "                  dta query append --store %s --list %d --server %s   (%s's flow records)\n",
					record.FlowStore, record.List(uint16(sn.Switch)), base, topo.Name(sn.Switch))
				break
			}
		}
	}
}

// hawkeyeJSON is sim's JSON output.
type hawkeyeJSON struct {
	Scenario string           `json:"scenario"`
	Seed     uint64           `json:"seed"`
	Truth    hawkeyeTruthJSON `json:"truth"`
	Trigger  struct {
		Flow string  `json:"flow"`
		AtNs int64   `json:"at_ns"`
		RTTx float64 `json:"rtt_over_base"`
	} `json:"trigger"`
	EpochNs     int64               `json:"epoch_ns"`
	Threshold   float64             `json:"threshold_pct"`
	Sim         netsim.Stats        `json:"sim"`
	Diagnoses   []hawkeyeVerdictOut `json:"diagnoses"`
	QueryServer string              `json:"-"`
}

type hawkeyeTruthJSON struct {
	Kind      string   `json:"kind"`
	Initial   string   `json:"initial_port"`
	RootFlows []string `json:"root_flows,omitempty"`
	RootHost  string   `json:"root_host,omitempty"`
	Loop      []string `json:"loop,omitempty"`
	StartNs   int64    `json:"start_ns"`
}

type hawkeyeVerdictOut struct {
	Method    string         `json:"method"`
	Poll      uint32         `json:"poll"`
	Kind      string         `json:"kind"`
	Cause     string         `json:"cause,omitempty"`
	Initial   string         `json:"initial_port,omitempty"`
	Path      []string       `json:"pfc_path,omitempty"`
	Loop      []string       `json:"loop,omitempty"`
	RootFlows []string       `json:"root_flows,omitempty"`
	RootHost  string         `json:"root_host,omitempty"`
	LoopFlows []string       `json:"loop_flows,omitempty"`
	Correct   bool           `json:"correct"`
	Judged    bool           `json:"judged"` // false: left out by the runner's rules (hawkeye.Trace.Judgeable)
	Why       string         `json:"why,omitempty"`
	Cost      telemetry.Cost `json:"cost"`
}

func writeHawkeyeJSON(w io.Writer, res *hawkeye.RunResult) error {
	tr := res.Trace
	topo := tr.Topology
	names := hawkeye.Names(topo)
	var out hawkeyeJSON
	out.Scenario, out.Seed = string(tr.Kind), tr.Seed
	sp := tr.Polls[res.Setting]
	// The truth the verdict judges: as it stood when the poll read the
	// initial port's switch, as the victim meets it.
	t := tr.TruthAt(sp.Trigger.At)
	if c := sp.Collections[telemetry.Hawkeye]; c != nil {
		t = tr.TruthFor(sp, c)
	}
	out.Truth = hawkeyeTruthJSON{Kind: string(t.Kind), Initial: topo.PortName(t.Initial), StartNs: int64(t.Start)}
	for _, f := range t.RootFlows {
		out.Truth.RootFlows = append(out.Truth.RootFlows, f.String())
	}
	if t.RootHost != netsim.None {
		out.Truth.RootHost = topo.Name(t.RootHost)
	}
	for _, p := range t.Loop {
		out.Truth.Loop = append(out.Truth.Loop, topo.PortName(p))
	}
	out.Trigger.Flow = sp.Trigger.Flow.Tuple.String()
	out.Trigger.AtNs = int64(sp.Trigger.At)
	out.Trigger.RTTx = float64(sp.Trigger.RTT) / float64(sp.Trigger.Flow.BaseRTT())
	out.EpochNs = int64(time.Duration(1) << res.Setting.EpochBits)
	out.Threshold = res.Setting.Threshold
	out.Sim = tr.Stats
	ports := func(ps []diagnose.Port) []string {
		var s []string
		for _, p := range ps {
			s = append(s, hawkeye.PortName(names, p.Switch, p.Port))
		}
		return s
	}
	for _, v := range res.Verdicts {
		d := v.Diagnosis
		o := hawkeyeVerdictOut{Method: string(v.Method), Poll: v.Poll, Kind: string(d.Kind), Cause: d.Cause, Path: ports(d.Path),
			Loop: ports(d.Loop), Correct: v.Correct, Judged: res.Trace.Judgeable(res.Setting), Why: v.Why, Cost: v.Cost}
		if d.Kind != diagnose.None {
			o.Initial = hawkeye.PortName(names, d.Initial.Switch, d.Initial.Port)
		}
		for _, c := range d.RootFlows {
			o.RootFlows = append(o.RootFlows, c.Tuple.String())
		}
		for _, f := range d.LoopFlows {
			o.LoopFlows = append(o.LoopFlows, f.String())
		}
		if d.Cause == diagnose.CauseInjection {
			o.RootHost = names(d.RootHost)
		}
		out.Diagnoses = append(out.Diagnoses, o)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func writeHawkeyeSVG(path string, res *hawkeye.RunResult) error {
	for _, v := range res.Verdicts {
		if v.Method != hawkeye.MethodHawkeye && len(res.Verdicts) > 1 {
			continue
		}
		tr := res.Trace
		topo := tr.Topology
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		err = diagnose.WriteSVG(f, v.Graph, v.Diagnosis, diagnose.SVGOptions{
			SwitchName: hawkeye.Names(topo),
			FlowName: func(t record.Tuple) string {
				for _, fl := range tr.Flows {
					if fl.Tuple == t {
						return fmt.Sprintf("%s %s→%s :%d", fl.Tag, topo.Name(fl.Src), topo.Name(fl.Dst), t.SrcPort)
					}
				}
				return t.String()
			},
		})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return nil
}

func newHawkeyeGraphCmd() *cobra.Command {
	var o hawkeyeRunOptions
	var file string
	cmd := &cobra.Command{
		Use:   "graph",
		Short: "Run one scenario and draw HAWKEYE's provenance graph as SVG",
		Long: `graph runs one scenario as sim does and writes the provenance graph the
diagnosis rests on as an SVG image: the flows paused at each port (dashed),
the port-level wait-for edges of PFC (solid; the loop in orange), the
initially congested port (red) and the flows contributing to its queue.`,
		Example: `  dta hawkeye graph --scenario deadlock-in --svg deadlock-in.svg
  dta hawkeye graph --scenario incast --seed 3 --svg -     # to stdout`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usageError("--svg: a file name (or - for stdout) is required")
			}
			if file != "-" {
				if err := checkOutputFile("svg", file); err != nil {
					return err
				}
			}
			o.methods = []string{"hawkeye"}
			cfg, err := o.config()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			s, _, stop, err := o.dta.session(ctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer stop()
			res, err := hawkeye.Run(ctx, s, cfg)
			if err != nil {
				return err
			}
			if file == "-" {
				tmp, err := os.CreateTemp("", "hawkeye-*.svg")
				if err != nil {
					return err
				}
				tmp.Close()
				defer os.Remove(tmp.Name())
				if err := writeHawkeyeSVG(tmp.Name(), res); err != nil {
					return err
				}
				b, err := os.ReadFile(tmp.Name())
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			if err := writeHawkeyeSVG(file, res); err != nil {
				return fmt.Errorf("--svg: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", file, res.Verdicts[0].Diagnosis.Summary(hawkeye.Names(res.Trace.Topology)))
			return nil
		},
	}
	o.add(cmd)
	cmd.Flags().StringVar(&file, "svg", "", "SVG file to write (- for stdout)")
	return cmd
}

type hawkeyeEvalOptions struct {
	traces     int
	scenarios  []string
	epochs     []string
	thresholds []float64
	methods    []string
	load       float64
	seedBase   uint64
	workers    int
	output     string
	quiet      bool
	dta        hawkeyeDTA
}

func newHawkeyeEvalCmd() *cobra.Command {
	var o hawkeyeEvalOptions
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Precision and recall over anomalies, epochs, thresholds and baselines (the paper's Figs. 7–11)",
		Long: `eval simulates --traces traces of every scenario (seeds --seed-base+1, ...),
each with one telemetry instance per --epochs and one agent per --thresholds,
and diagnoses every first firing with every method: HAWKEYE, full polling,
victim-only polling, port-only and flow-only telemetry. Every poll travels
through DTA. It prints Fig. 7 (HAWKEYE's precision/recall per anomaly over
epochs and thresholds), Fig. 8 (each polling method at its best setting),
Fig. 10 (telemetry granularity, mixed anomalies) and Figs. 9/11 (switches and
bytes collected, causal switches covered).

A diagnosis is right when it names the anomaly, the initially congested port
and the root cause (the injecting host, or flows that are mostly true root
flows). Precision = right / reported; recall = right / (right + unreported).
Progress goes to stderr (-q silences it).`,
		Example: `  dta hawkeye eval
  dta hawkeye eval --traces 20 -o json > hawkeye.json
  dta hawkeye eval --scenarios deadlock-in,deadlock-out --epochs 131us --thresholds 300,500`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runHawkeyeEval(cmd, &o)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&o.traces, "traces", 4, "traces per scenario")
	fl.StringSliceVar(&o.scenarios, "scenarios", nil, "scenarios (default: all five)")
	fl.StringSliceVar(&o.epochs, "epochs", []string{"131us", "262us", "524us", "1ms", "2ms"}, "telemetry epochs (each rounded to a power of two ns)")
	fl.Float64SliceVar(&o.thresholds, "thresholds", hawkeye.DefaultThresholds, "agent thresholds, % of base RTT")
	fl.StringSliceVar(&o.methods, "methods", []string{"hawkeye", "full", "victim-only", "port-only", "flow-only"}, "methods compared")
	fl.Float64Var(&o.load, "load", netsim.DefaultLoad, "background load, fraction of line rate, -1..1 (negative: none)")
	fl.Uint64Var(&o.seedBase, "seed-base", 1000, "trace i of a scenario has seed seed-base+i")
	fl.IntVar(&o.workers, "workers", 0, fmt.Sprintf("simulations in parallel, up to %d (0: GOMAXPROCS)", hawkeye.MaxWorkers))
	fl.StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	fl.BoolVarP(&o.quiet, "quiet", "q", false, "no progress on stderr")
	o.dta.add(cmd)
	return cmd
}

func runHawkeyeEval(cmd *cobra.Command, o *hawkeyeEvalOptions) error {
	if o.output != "table" && o.output != "json" {
		return usageError("-o: %q is not table or json", o.output)
	}
	if o.traces < 1 || o.traces > 10000 {
		return usageError("--traces: %d out of range [1, 10000]", o.traces)
	}
	if err := checkInt("workers", o.workers, 0, hawkeye.MaxWorkers); err != nil {
		return err
	}
	if err := checkHawkeyeLoad(o.load); err != nil {
		return err
	}
	if cmd.Flags().Changed("scenarios") && len(o.scenarios) == 0 {
		return usageError("--scenarios: none given (leave the flag out for all five)")
	}
	if len(o.epochs) == 0 {
		return usageError("--epochs: none given")
	}
	if len(o.thresholds) == 0 {
		return usageError("--thresholds: none given")
	}
	kinds := netsim.Kinds
	if len(o.scenarios) > 0 {
		kinds = nil
		for _, s := range o.scenarios {
			k, err := netsim.ParseKind(s)
			if err != nil {
				return usageError("--scenarios: %v", err)
			}
			kinds = append(kinds, k)
		}
	}
	var bits []uint
	for _, e := range o.epochs {
		d, err := time.ParseDuration(e)
		if err != nil || d < time.Microsecond || d > time.Second {
			return usageError("--epochs: %q is not a duration in [1µs, 1s]", e)
		}
		bits = append(bits, telemetry.EpochBitsFor(d))
	}
	for _, t := range o.thresholds {
		if err := checkFloat("thresholds", t, hawkeye.MinThreshold, hawkeye.MaxThreshold); err != nil {
			return err
		}
	}
	ms, err := parseMethods(o.methods)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	s, _, stop, err := o.dta.session(ctx, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer stop()
	settings := hawkeye.Grid(bits, o.thresholds)
	cfg := hawkeye.EvalConfig{Kinds: kinds, Traces: o.traces, SeedBase: o.seedBase, Load: o.load, Settings: settings,
		Methods: ms, Workers: o.workers}
	errw := cmd.ErrOrStderr()
	if !o.quiet {
		start := time.Now()
		cfg.Progress = func(done, total int) {
			fmt.Fprintf(errw, "hawkeye eval: %d/%d traces, %v\n", done, total, time.Since(start).Round(time.Second))
		}
	}
	res, err := hawkeye.Eval(ctx, s, cfg)
	if err != nil {
		return err
	}
	if o.output == "json" {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Settings []hawkeye.Setting   `json:"settings"`
			Result   *hawkeye.EvalResult `json:"result"`
			Command  string              `json:"command"`
		}{settings, res, "dta hawkeye eval --traces " + strconv.Itoa(o.traces)})
	}
	return res.WriteTables(cmd.OutOrStdout(), settings)
}

// rightOrWrong names a verdict.
func rightOrWrong(ok bool) string {
	if ok {
		return "right"
	}
	return "wrong"
}

// hawkeyeWhyNotJudged says which of the runner's rules leaves the trace out.
func hawkeyeWhyNotJudged(tr *hawkeye.Trace, st hawkeye.Setting) string {
	return tr.WhyNotJudged(st)
}
