package cli

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/analysis/sim"
	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/wire/dta"
)

type simulateOptions struct {
	figure       string
	primitive    string
	slots        string
	keys         string
	n            []int
	checksumBits []int
	valueSize    int
	threshold    int
	ifEmpty      bool
	hops         int
	values       string
	hash         string
	ages         []string
	bins         int
	perBin       int
	maxMemory    string
	seed         uint64
	workers      int
	hugePages    string
	output       string
	plot         string
	progress     string
}

func newSimulateCmd() *cobra.Command {
	var o simulateOptions
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Measure query success by Monte Carlo over the real Key-Write and Postcarding code",
		Long: `simulate writes a stream of distinct keys into a real memory region through
the primitives' own translation (Key-Write: keywrite.Spec.Translate;
Postcarding: the translator's postcard cache, one chunk per complete path),
then queries a sample of the keys with the primitives' own query, and counts
correct, empty, conflicting and wrong answers by age: the number of keys
written after the queried one. The load factor α is the age divided by the
slots (Postcarding: chunks), as in the paper's bounds, which are printed
beside the simulated rates.

With --figure it runs the set of runs reproducing one figure:

  12        paper Fig. 12: Key-Write success vs α for N = 1..4, best N per interval
  13        paper Fig. 13 / DART Fig. 4: 5-hop path tracing (20-byte values, N = 2)
            vs flows since, for 3, 6, 12 and 30 GiB with 100 M flows; a store above
            --max-memory runs at 1/k of its slots and flows (same ratio)
  dart5     DART Fig. 5: wrong answers vs checksum bits, every key queried
  postcard  Postcarding success vs α for N = 1..4 (B = 5, |V| = 2^20)
  cas       DART §7: further copies only into empty slots (compare-and-swap)
            against every copy written, at three keys/slots ratios
  scale     the same keys/slots ratio at three store sizes: success depends on
            the ratio alone

Without --figure it runs one store for each --n and --checksum-bits given.

Short checksums (--checksum-bits b < 32) use the real 32-bit code with keys
whose checksums share their top 32 − b bits (all ones), so that only the low
b bits tell keys apart: the last four key bytes are solved for.

Runs are deterministic for a --seed, whatever --workers. Regions use
transparent huge pages and are pre-faulted; the largest region of a run must
fit in memory. A progress bar goes to stderr when it is a terminal (--progress).`,
		Example: `  # Paper Fig. 12 with its plot
  dta simulate --figure 12 --plot docs/figures/fig12.svg

  # Paper Fig. 13: 3 and 6 GiB at full scale, 12 and 30 GiB scaled to fit 8 GiB
  dta simulate --figure 13 --max-memory 8GiB --plot docs/figures/fig13.svg

  # One store: 2^23 slots, 6.25 M keys, N = 2, 8-bit checksums, as CSV
  dta simulate --slots 2^23 --keys 6.25M --n 2 --checksum-bits 8 -o csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSimulate(cmd, &o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.figure, "figure", "", "figure to reproduce: "+strings.Join(sim.FigureNames, ", ")+" (default: one run from the flags)")
	fl.StringVar(&o.primitive, "primitive", "keywrite", "without --figure: keywrite or postcard")
	fl.StringVar(&o.slots, "slots", "", "slots (Postcarding: chunks) per store, e.g. 2^23 (figures: their default)")
	fl.StringVar(&o.keys, "keys", "", "keys (flows) written per run, e.g. 10M (figure 13: flows at the paper's scale)")
	fl.IntSliceVar(&o.n, "n", nil, "redundancies N, e.g. 1,2,3,4 (default: the figure's, or 2)")
	fl.IntSliceVar(&o.checksumBits, "checksum-bits", nil, "Key-Write checksum bits b, 1..32 (dart5: the widths swept)")
	fl.IntVar(&o.valueSize, "value-size", sim.DefaultValueSize, "without --figure: Key-Write value bytes")
	fl.IntVar(&o.threshold, "threshold", 0, "without --figure: Key-Write consensus threshold (0: plurality)")
	fl.BoolVar(&o.ifEmpty, "if-empty", false, "without --figure: write Key-Write copies after the first only into empty slots")
	fl.StringVar(&o.hash, "hash", "crc32c", "without --figure: slot hash, crc32c or crc32 (the prototype's; power-of-two slots)")
	fl.IntVar(&o.hops, "hops", sim.DefaultHops, "without --figure: Postcarding hops per path B")
	fl.StringVar(&o.values, "values", "2^20", "without --figure: Postcarding value set size |V|")
	fl.StringSliceVar(&o.ages, "ages", nil, "without --figure: extra ages to probe, e.g. 1M,5M (±5 % windows)")
	fl.IntVar(&o.bins, "bins", 0, "equal-width age bins (default: the figure's, or 20)")
	fl.IntVar(&o.perBin, "per-bin", 0, "queries per bin (default: the figure's, or 50000)")
	fl.StringVar(&o.maxMemory, "max-memory", "3GiB", "figure 13: largest region, from 1MiB to the machine's memory; bigger stores run scaled down by the ratio")
	fl.Uint64Var(&o.seed, "seed", sim.DefaultSeed, "random seed: keys, values and the query sample")
	fl.IntVar(&o.workers, "workers", 0, fmt.Sprintf("goroutines per run, up to %d (0: GOMAXPROCS)", sim.MaxWorkers))
	fl.StringVar(&o.hugePages, "huge-pages", "madvise", "region backing: madvise, off or hugetlb")
	fl.StringVarP(&o.output, "output", "o", "table", "output `format`: table, json or csv (one row per age bin)")
	fl.StringVar(&o.plot, "plot", "", "also draw the figure to this file (.svg, .png or .pdf)")
	fl.StringVar(&o.progress, "progress", "auto", "progress bar on stderr: auto (when a terminal), always or never")
	return cmd
}

func runSimulate(cmd *cobra.Command, o *simulateOptions) error {
	switch o.output {
	case "table", "json", "csv":
	default:
		return usageError("-o: %q is not table, json or csv", o.output)
	}
	hp, err := region.ParseHugePages(o.hugePages)
	if err != nil {
		return usageError("--huge-pages: %v", err)
	}
	if err := checkInt("workers", o.workers, 0, sim.MaxWorkers); err != nil {
		return err
	}
	if o.bins < 0 {
		return usageError("--bins: %d is negative", o.bins)
	}
	if o.perBin < 0 {
		return usageError("--per-bin: %d is negative", o.perBin)
	}
	switch o.progress {
	case "auto", "always", "never":
	default:
		return usageError("--progress: %q is not auto, always or never", o.progress)
	}
	if o.plot != "" {
		if err := checkPlotPath(o.plot); err != nil {
			return err
		}
	}
	slots, err := simCount(o.slots)
	if err != nil {
		return usageError("--slots: %v", err)
	}
	keys, err := simCount(o.keys)
	if err != nil {
		return usageError("--keys: %v", err)
	}
	var f *sim.Figure
	if o.figure != "" {
		f, err = simFigure(cmd, o, slots, keys, hp)
	} else {
		f, err = simCustom(cmd, o, slots, keys, hp)
	}
	if err != nil {
		return err
	}
	if err := checkRegionsFit(f); err != nil {
		return err
	}

	var p sim.Progress
	stop := simProgress(cmd.ErrOrStderr(), o.progress, f, &p)
	start := time.Now()
	fr, err := sim.RunFigure(cmd.Context(), f, &p, stop.started)
	stop.done()
	if err != nil {
		return err
	}
	rep := simReport{FigureResult: fr, Command: simCommand(cmd), Machine: simMachine(), Seconds: time.Since(start).Seconds()}
	if o.plot != "" {
		if err := fr.Plot(o.plot); err != nil {
			return fmt.Errorf("--plot: %s: %w", o.plot, err)
		}
	}
	w := cmd.OutOrStdout()
	switch o.output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	case "csv":
		return simCSV(w, fr)
	}
	return simTable(w, &rep)
}

// simFigure builds a figure's runs from the flags that apply to figures.
func simFigure(cmd *cobra.Command, o *simulateOptions, slots, keys uint64, hp region.HugePages) (*sim.Figure, error) {
	for _, name := range []string{"primitive", "value-size", "threshold", "if-empty", "hash", "hops", "values", "ages"} {
		if cmd.Flags().Changed(name) {
			return nil, usageError("--%s: applies without --figure only", name)
		}
	}
	if cmd.Flags().Changed("max-memory") && o.figure != sim.FigurePaths {
		return nil, usageError("--max-memory: applies to figure 13 only")
	}
	mem, err := store.ParseByteSize(o.maxMemory)
	if err != nil {
		return nil, usageError("--max-memory: %v", err)
	}
	if o.figure == sim.FigurePaths {
		if err := checkMaxMemory(uint64(mem)); err != nil {
			return nil, err
		}
	}
	f, err := sim.NewFigure(o.figure, sim.FigureOptions{
		Slots: slots, Keys: keys, N: o.n, ChecksumBits: o.checksumBits,
		Bins: o.bins, PerBin: o.perBin, Seed: o.seed, Workers: o.workers,
		MaxMemory: uint64(mem), HugePages: hp,
	})
	if err != nil {
		return nil, fieldFlagError(err, simFieldFlags)
	}
	return f, nil
}

// simCustom builds one run per --n and --checksum-bits from the flags.
func simCustom(cmd *cobra.Command, o *simulateOptions, slots, keys uint64, hp region.HugePages) (*sim.Figure, error) {
	if cmd.Flags().Changed("max-memory") {
		return nil, usageError("--max-memory: applies to figure 13 only")
	}
	if slots == 0 || keys == 0 {
		return nil, usageError("--slots, --keys: both are needed without --figure")
	}
	prim, err := dta.ParsePrimitive(o.primitive)
	if err == nil && prim == dta.TeaTable {
		err = errTeaNotPrimitive
	}
	if err != nil {
		return nil, usageError("--primitive: %v", err)
	}
	values, err := simCount(o.values)
	if err != nil || values == 0 || values > uint64(postcard.End) {
		return nil, usageError("--values: want 1..%d (below the reserved encodings), got %q", postcard.End, o.values)
	}
	hash, err := hashing.ParseAlgorithm(o.hash)
	if err != nil {
		return nil, usageError("--hash: %v", err)
	}
	base := sim.DefaultConfig()
	base.Primitive, base.Slots, base.Keys, base.Hash = prim, slots, keys, hash
	base.ValueSize, base.Threshold, base.IfEmpty = o.valueSize, o.threshold, o.ifEmpty
	base.Hops, base.Values = o.hops, uint32(values)
	base.Bins = cmp.Or(o.bins, base.Bins)
	base.PerBin = cmp.Or(o.perBin, base.PerBin)
	base.Seed, base.Workers, base.HugePages = o.seed, o.workers, hp
	if prim == dta.Postcard {
		base.ChecksumBits = 0
	}
	for _, a := range o.ages {
		age, err := simCount(a)
		if err != nil {
			return nil, usageError("--ages: %v", err)
		}
		base.Probes = append(base.Probes, sim.Probe{Age: age, HalfWidth: age / 20})
	}
	ns, bs := o.n, o.checksumBits
	if len(ns) == 0 {
		ns = []int{base.N}
	}
	if len(bs) == 0 {
		bs = []int{base.ChecksumBits}
	}
	f := &sim.Figure{Name: "custom", Title: fmt.Sprintf("%v: success vs load factor α, %d slots, %d keys", prim, slots, keys)}
	for _, n := range ns {
		for _, b := range bs {
			c := base
			c.N, c.ChecksumBits = n, b
			if err := c.Validate(); err != nil {
				return nil, fieldFlagError(err, simFieldFlags)
			}
			label := fmt.Sprintf("N = %d", n)
			if hash != hashing.CRC32C {
				label += ", " + hash.String()
			}
			if prim == dta.KeyWrite {
				label += fmt.Sprintf(", b = %d", b)
			}
			f.Runs = append(f.Runs, sim.FigureRun{Label: label, Group: label, Scale: 1, Config: c})
		}
	}
	return f, nil
}

// simFieldFlags names the flag of each field sim names in its errors
// (analysis.FieldError).
var simFieldFlags = map[string]string{
	"primitive": "primitive", "keys": "keys", "bins": "bins", "per-bin queries": "per-bin",
	"slots": "slots", "n": "n", "hash": "hash", "workers": "workers", "probes": "ages",
	"if-empty": "if-empty", "threshold": "threshold", "checksum bits": "checksum-bits",
	"values": "values", "hops": "hops", "value size": "value-size", "figure": "figure",
}

// minMaxMemory is the smallest --max-memory: below it figure 13's stores
// would be scaled down to a few slots.
const minMaxMemory = 1 << 20

// checkMaxMemory refuses a --max-memory that is no memory (0), too small to
// scale figure 13's stores into, or more than the machine has.
func checkMaxMemory(mem uint64) error {
	if mem < minMaxMemory {
		return usageError("--max-memory: %d bytes is below the %s a scaled store needs", mem, planBytes(minMaxMemory))
	}
	if phys, ok := machineMemory(); ok && mem > phys {
		return usageError("--max-memory: %s is more than this machine's %s of memory", planBytes(mem), planBytes(phys))
	}
	return nil
}

// checkRegionsFit refuses a run whose region (pre-faulted) is larger than
// the machine's memory, naming the flag that sizes it.
func checkRegionsFit(f *sim.Figure) error {
	phys, ok := machineMemory()
	if !ok {
		return nil
	}
	flag := "--slots"
	if f.Name == sim.FigurePaths {
		flag = "--max-memory"
	}
	for i := range f.Runs {
		r := &f.Runs[i]
		if size := r.Config.RegionSize(); size > phys {
			return usageError("%s: run %q needs a region of %s, more than this machine's %s of memory", flag, r.Label, planBytes(size), planBytes(phys))
		}
	}
	return nil
}

// checkPlotPath refuses a --plot whose format sim cannot draw, or that
// could not be created (checkOutputFile), before any run.
func checkPlotPath(path string) error {
	if err := sim.CheckPlotPath(path); err != nil {
		return usageError("--plot: %v", err)
	}
	return checkOutputFile("plot", path)
}

// simCount parses an optional count ("" is 0) as dta plan does: 10M, 2^23.
func simCount(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	return planCount(s)
}

// simReport is what dta simulate prints as JSON.
type simReport struct {
	*sim.FigureResult
	Command string  `json:"command"`
	Machine string  `json:"machine"`
	Seconds float64 `json:"seconds"` // wall time of all runs
}

// simCommand is the command line that reproduces the run: the command and
// the flags given, by name.
func simCommand(cmd *cobra.Command) string {
	parts := []string{cmd.CommandPath()}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		v := f.Value.String()
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ",")
		}
		parts = append(parts, "--"+f.Name+"="+v)
	})
	return strings.Join(parts, " ")
}

// simMachine describes the host: CPUs and memory.
func simMachine() string {
	s := fmt.Sprintf("%d CPUs (GOMAXPROCS %d), %s/%s", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
	if phys, ok := machineMemory(); ok {
		s += ", " + planBytes(phys) + " RAM"
	}
	return s
}

func simTable(w io.Writer, rep *simReport) error {
	fmt.Fprintf(w, "figure %s: %s\n", rep.Name, rep.Title)
	fmt.Fprintf(w, "command: %s\nmachine: %s; %.1f s in all\n", rep.Command, rep.Machine, rep.Seconds)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSLOTS\tKEYS\tREGION\tPEAK RSS\tWRITE\tQUERY\tQUERIES\tSUCCESS\tTHEORY\tEMPTY\tCONFLICT\tWRONG")
	for _, r := range rep.Runs {
		th := "-"
		if r.AllTheory != nil {
			th = simPercent(r.AllTheory.Success)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s %s\t%s\t%.1f s\t%.1f s\t%s\t%s\t%s\t%d\t%d\t%d\n",
			r.Label, planGroup(r.Config.Slots), planGroup(r.Config.Keys), planBytes(r.RegionBytes), r.Backing,
			planBytes(r.PeakRSS), r.WriteSeconds, r.QuerySeconds, planGroup(r.All.Queries),
			simPercent(r.All.Success()), th, r.All.Empty, r.All.Conflict, r.All.Wrong)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "SUCCESS is the average over every key written (equal-width age bins); THEORY the paper's bound there.")
	for _, n := range rep.Notes {
		fmt.Fprintln(w, "- "+n)
	}
	return nil
}

func simPercent(p float64) string { return strconv.FormatFloat(100*p, 'f', 3, 64) + " %" }

// simCSV writes one row per run and age bin.
func simCSV(w io.Writer, fr *sim.FigureResult) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"figure", "run", "primitive", "slots", "keys", "n", "checksum_bits", "if_empty", "scale",
		"probe", "age_lo", "age_hi", "mean_age", "alpha", "queries", "correct", "empty", "conflict", "wrong",
		"success", "theory_success", "theory_no_answer", "theory_wrong"})
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, r := range fr.Runs {
		c := &r.Config
		for _, b := range r.Bins {
			row := []string{fr.Name, r.Label, c.Primitive.String(), u(c.Slots), u(c.Keys), strconv.Itoa(c.N),
				strconv.Itoa(c.ChecksumBits), strconv.FormatBool(c.IfEmpty), g(r.Scale),
				strconv.FormatBool(b.Probe), u(b.Lo), u(b.Hi), g(b.MeanAge), g(b.Alpha),
				u(b.Queries), u(b.Correct), u(b.Empty), u(b.Conflict), u(b.Wrong), g(b.Success()), "", "", ""}
			if b.Theory != nil {
				row[len(row)-3], row[len(row)-2], row[len(row)-1] = g(b.Theory.Success), g(b.Theory.NoAnswer), g(b.Theory.Wrong)
			}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// progressBar draws the runs' progress on a terminal.
type progressBar struct {
	w      io.Writer
	f      *sim.Figure
	p      *sim.Progress
	run    chan int
	stop   chan struct{}
	exited chan struct{}
}

// simProgress starts a progress bar on w (stderr) if mode asks for one:
// "always", or "auto" when w is a terminal.
func simProgress(w io.Writer, mode string, f *sim.Figure, p *sim.Progress) *progressBar {
	b := &progressBar{w: w, f: f, p: p}
	on := mode == "always"
	if mode == "auto" {
		if file, ok := w.(*os.File); ok {
			if st, err := file.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				on = true
			}
		}
	}
	if !on {
		return b
	}
	b.run, b.stop, b.exited = make(chan int, 1), make(chan struct{}), make(chan struct{})
	go b.loop()
	return b
}

func (b *progressBar) started(i int, _ *sim.FigureRun) {
	if b.run != nil {
		b.run <- i
	}
}

func (b *progressBar) done() {
	if b.stop == nil {
		return
	}
	close(b.stop)
	<-b.exited
}

func (b *progressBar) loop() {
	defer close(b.exited)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	run, start := -1, time.Now()
	for {
		select {
		case run = <-b.run:
			start = time.Now()
		case <-b.stop:
			fmt.Fprint(b.w, "\r\033[K")
			return
		case <-t.C:
		}
		if run < 0 {
			continue
		}
		phase, done, total := b.p.Phase.Load(), b.p.Done.Load(), b.p.Total.Load()
		name := [...]string{"setup", "write", "query", "done"}[min(int(phase), 3)]
		frac := 0.0
		if total > 0 {
			frac = min(1, float64(done)/float64(total))
		}
		const width = 30
		fill := int(frac * width)
		fmt.Fprintf(b.w, "\r\033[Krun %d/%d %s: %-5s [%s%s] %3.0f %% %s/%s %s",
			run+1, len(b.f.Runs), b.f.Runs[run].Label, name,
			strings.Repeat("=", fill), strings.Repeat(" ", width-fill), 100*frac,
			simShort(done), simShort(total), time.Since(start).Round(time.Second))
	}
}

// simShort formats a count with a K or M suffix.
func simShort(n uint64) string {
	switch {
	case n >= 1e6:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "M"
	case n >= 1e3:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + "K"
	}
	return strconv.FormatUint(n, 10)
}
