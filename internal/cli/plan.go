package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/analysis"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/wire/dta"
)

type planOptions struct {
	primitive    string
	keys         string
	ages         []string
	valueSize    int
	target       float64
	n            []int
	checksumBits int
	hops         int
	values       string
	memory       string
	hash         string
	output       string
	simulate     bool
	simSlots     string
	seed         uint64
	sketch       sketchPlanOptions
}

func newPlanCmd() *cobra.Command {
	var o planOptions
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Size a store from the paper's error bounds, or rate a given memory",
		Long: `plan answers two questions with the error bounds of the DTA paper (Key-Write
§4/A.5, Postcarding A.6) and count-min analysis (Key-Increment), for every
redundancy N in --n:

  without --memory: how much memory does a store need so that a query for a
    key followed by --age other keys succeeds with probability --target? The
    best N is the one needing the least memory.
  with --memory:    what are the no-answer, wrong-answer and success rates of
    the largest store fitting in that memory, at each --age?

The load factor α is the age divided by the store's slots (Postcarding: its
chunks). Memory is counted in the primitives' real sizes: Key-Write slots of
4 + value-size bytes rounded up to 4, Postcarding chunks of 4 × hops bytes,
Key-Increment counters of 8 bytes. No answer and wrong are the paper's upper
bounds; success is 1 − no answer − wrong, a lower bound. For keyincrement,
success is the exact probability that a key's count is not overestimated when
--keys keys share the counters (--age does not apply).

Counts take K, M, G, T suffixes (powers of 1000) or 2^k; memory takes KiB,
MiB, GiB, TiB (K, M, G, T are binary here) or plain bytes.`,
		Example: `  # Paper §4 worked example: Key-Write, b = 32, α = 0.1 (1,000,000 slots of 8 bytes,
  # 100,000 later keys): no answer 9.5 % (N=1), < 3.3 % (N=2), 1.2 % (N=4);
  # wrong ≤ 1.6e-11 (N=2)
  dta plan --primitive keywrite --memory 8000000 --value-size 4 --age 100K --n 1,2,4

  # Paper A.6 worked example: Postcarding, |V| = 2^18, B = 5, N = 2, b = 32,
  # α = 0.1 (1,000,000 chunks of 20 bytes): no output ≤ 3.3 %, wrong < 1e-22
  dta plan --primitive postcard --memory 20000000 --hops 5 --values 2^18 --age 100K --n 2

  # Memory for 100 M flows of 5-hop paths (20-byte values), 99 % at the oldest flow
  dta plan --primitive keywrite --keys 100M --value-size 20 --target 0.99

  # What 3 GiB gives those flows 10 M and 100 M flows later
  dta plan --primitive keywrite --memory 3GiB --value-size 20 --n 2 --age 10M,100M

  # Key-Increment counters for 1 M keys per epoch, 99 % of counts exact, as JSON
  dta plan --primitive keyincrement --keys 1M --target 0.99 -o json

  # Sketch-Merge: the error bounds of a 4 × 65536 count-min, checked by simulation
  dta plan --primitive sketchmerge --rows 4 --columns 65536 --simulate
  # the smallest count-sketch with error ≤ 0.1 % of L2 with probability 99 %
  dta plan --primitive sketchmerge --kind countsketch --epsilon 0.001 --delta 0.01`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPlan(cmd, &o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.primitive, "primitive", "keywrite", "primitive: keywrite, postcard, keyincrement or sketchmerge")
	fl.StringVar(&o.keys, "keys", "", "distinct keys (flows) per epoch or in total, e.g. 100M (keyincrement: keys sharing the counters)")
	fl.StringSliceVar(&o.ages, "age", nil, "keys written after the queried one, e.g. 10M (default --keys); with --memory a list, e.g. 10M,100M")
	fl.IntVar(&o.valueSize, "value-size", analysis.DefaultValueSize, "keywrite value size in bytes")
	fl.Float64Var(&o.target, "target", analysis.DefaultTarget, "wanted success rate at --age, in (0, 1)")
	fl.IntSliceVar(&o.n, "n", analysis.DefaultN, "redundancies N to compare")
	fl.IntVar(&o.checksumBits, "checksum-bits", analysis.DefaultChecksumBits, "checksum bits b (keywrite) or slot bits (postcard)")
	fl.IntVar(&o.hops, "hops", analysis.DefaultHops, "postcard hops per path B")
	fl.StringVar(&o.values, "values", strconv.Itoa(analysis.DefaultValues), "postcard value set size |V|, e.g. 2^18")
	fl.StringVar(&o.memory, "memory", "", "rate this memory instead of planning one, e.g. 3GiB")
	fl.StringVar(&o.hash, "hash", "crc32c", "slot hash: crc32c (any slot count) or crc32 (power-of-two slots)")
	fl.StringVarP(&o.output, "output", "o", "table", "output `format`: table or json")
	fl.BoolVar(&o.simulate, "simulate", false, "confirm each answer with a quick simulation over the production code (keywrite, postcard)")
	fl.StringVar(&o.simSlots, "simulate-slots", "2^20", "largest store --simulate runs; larger stores are scaled down to it at the same load factor")
	fl.Uint64Var(&o.seed, "seed", 1, "--simulate: random seed")
	o.sketch.add(fl)
	return cmd
}

// planReport is what dta plan prints as JSON: the question, then the rows.
type planReport struct {
	Mode         string    `json:"mode"` // "plan" or "capacity"
	Primitive    string    `json:"primitive"`
	Hash         string    `json:"hash"`
	Keys         uint64    `json:"keys,omitempty"`
	Memory       uint64    `json:"memory_bytes,omitempty"` // capacity: the memory given
	Target       float64   `json:"target,omitempty"`       // plan
	ValueSize    int       `json:"value_size,omitempty"`
	ChecksumBits int       `json:"checksum_bits,omitempty"`
	Hops         int       `json:"hops,omitempty"`
	Values       uint64    `json:"values,omitempty"`
	Rows         any       `json:"rows"`
	BestN        *int      `json:"best_n,omitempty"`    // plan: 0 if no N meets the target
	Simulated    []planSim `json:"simulated,omitempty"` // --simulate
}

func runPlan(cmd *cobra.Command, o *planOptions) error {
	changed := cmd.Flags().Changed
	if o.output != "table" && o.output != "json" {
		return usageError("-o: %q is not table or json", o.output)
	}
	prim, err := dta.ParsePrimitive(o.primitive)
	if err == nil && prim == dta.TeaTable {
		err = errTeaNotPrimitive
	}
	if err != nil {
		return usageError("--primitive: %v", err)
	}
	hash, err := hashing.ParseAlgorithm(o.hash)
	if err != nil {
		return usageError("--hash: %v", err)
	}
	if prim == dta.SketchMerge {
		if err := onlyWith(cmd, "--primitive sketchmerge", false, "keys", "age", "value-size", "target", "n",
			"checksum-bits", "hops", "values", "memory", "hash", "simulate-slots"); err != nil {
			return err
		}
		return runSketchPlan(cmd, o)
	}
	if err := onlyWith(cmd, "--primitive sketchmerge", true, sketchPlanFlags...); err != nil {
		return err
	}
	d := analysis.Design{Primitive: prim, N: o.n, Hash: hash}
	// A flag that does not apply is passed on only if given, so that the
	// analysis can reject it.
	if prim == dta.KeyWrite || changed("value-size") {
		d.ValueSize = o.valueSize
		if d.ValueSize == 0 {
			return usageError("--value-size: must be at least 1")
		}
	}
	if prim != dta.KeyIncrement || changed("checksum-bits") {
		d.ChecksumBits = o.checksumBits
		if d.ChecksumBits == 0 {
			return usageError("--checksum-bits: must be at least 1")
		}
	}
	if prim == dta.Postcard || changed("hops") || changed("values") {
		d.Hops = o.hops
		if d.Values, err = planCount(o.values); err != nil {
			return usageError("--values: %v", err)
		}
		if d.Hops == 0 || d.Values == 0 {
			return usageError("--hops, --values: must be at least 1")
		}
	}
	var keys uint64
	if o.keys != "" {
		if keys, err = planCount(o.keys); err != nil {
			return usageError("--keys: %v", err)
		}
		if keys == 0 {
			return usageError("--keys: must be at least 1")
		}
	}
	var ages []uint64
	for _, a := range o.ages {
		v, err := planCount(a)
		if err != nil {
			return usageError("--age: %v", err)
		}
		ages = append(ages, v)
	}
	rep := planReport{
		Primitive: prim.String(), Hash: hash.String(), Keys: keys,
		ValueSize: d.ValueSize, ChecksumBits: d.ChecksumBits, Hops: d.Hops, Values: d.Values,
	}
	if o.memory == "" {
		if len(ages) > 1 {
			return usageError("--age: planning takes one age; give --memory to rate several")
		}
		if keys == 0 {
			return usageError("--keys: required to plan a store (or give --memory to rate one)")
		}
		if !(o.target > 0 && o.target < 1) {
			return usageError("--target: %v out of range (0, 1)", o.target)
		}
		req := analysis.PlanRequest{Design: d, Keys: keys, Target: o.target}
		if len(ages) == 1 {
			if ages[0] == 0 {
				return usageError("--age: must be at least 1 to plan")
			}
			req.Age = ages[0]
		}
		res, err := analysis.Plan(req)
		if err != nil {
			return fieldFlagError(err, planFieldFlags)
		}
		rep.Mode, rep.Target, rep.Rows, rep.BestN = "plan", o.target, res.Rows, &res.BestN
		if o.simulate {
			var rows []planRowRates
			for _, r := range res.Rows {
				if r.MeetsTarget {
					rows = append(rows, planRowRates{n: r.N, slots: r.Slots, rates: r.Rates})
				}
			}
			if rep.Simulated, err = runPlanSims(cmd, o, d, rows); err != nil {
				return err
			}
		}
		if o.output == "json" {
			return planJSON(cmd.OutOrStdout(), rep)
		}
		if err := planTable(cmd.OutOrStdout(), rep, res); err != nil {
			return err
		}
		if o.simulate {
			return planSimTable(cmd.OutOrStdout(), rep.Simulated)
		}
		return nil
	}
	if changed("target") {
		return usageError("--target: applies when planning, not with --memory")
	}
	mem, err := store.ParseByteSize(o.memory)
	if err != nil {
		return usageError("--memory: %v", err)
	}
	res, err := analysis.Capacity(analysis.CapacityRequest{Design: d, Memory: uint64(mem), Keys: keys, Ages: ages})
	if err != nil {
		return fieldFlagError(err, planFieldFlags)
	}
	rep.Mode, rep.Memory, rep.Rows = "capacity", uint64(mem), res.Rows
	if o.simulate {
		var rows []planRowRates
		for _, row := range res.Rows {
			for _, r := range row.Ages {
				rows = append(rows, planRowRates{n: row.N, slots: row.Slots, rates: r})
			}
		}
		if rep.Simulated, err = runPlanSims(cmd, o, d, rows); err != nil {
			return err
		}
	}
	if o.output == "json" {
		return planJSON(cmd.OutOrStdout(), rep)
	}
	if err := capacityTable(cmd.OutOrStdout(), rep, res); err != nil {
		return err
	}
	if o.simulate {
		return planSimTable(cmd.OutOrStdout(), rep.Simulated)
	}
	return nil
}

// planFieldFlags names the flag of each field the analysis package names in
// its errors (analysis.FieldError).
var planFieldFlags = map[string]string{
	"primitive": "primitive", "n": "n", "hash": "hash", "value size": "value-size",
	"checksum bits": "checksum-bits", "hops": "hops", "values": "values",
	"keys": "keys", "age": "age", "target": "target", "memory": "memory",
	"rows": "rows", "columns": "columns", "kind": "kind", "epochs": "epochs",
	"epsilon": "epsilon", "delta": "delta",
}

// fieldFlagError turns a library error naming a field (analysis.FieldError)
// into a usage error naming the field's flag in flags. An error naming no
// field of flags stays as it is, a usage error still.
func fieldFlagError(err error, flags map[string]string) error {
	var fe *analysis.FieldError
	if !errors.As(err, &fe) {
		return usageError("%v", err)
	}
	var names []string
	for f := range strings.SplitSeq(fe.Field, ", ") {
		name, ok := flags[f]
		if !ok {
			return usageError("%v", err)
		}
		names = append(names, "--"+name)
	}
	return usageError("%s: %v", strings.Join(names, ", "), fe.Err)
}

// onlyWith refuses the flags given that do not apply: those of names when
// in is false (they apply to the others), or those of names when in is
// true (they apply only with what).
func onlyWith(cmd *cobra.Command, what string, in bool, names ...string) error {
	for _, n := range names {
		if cmd.Flags().Changed(n) {
			if in {
				return usageError("--%s: applies with %s only", n, what)
			}
			return usageError("--%s: does not apply with %s", n, what)
		}
	}
	return nil
}

func planJSON(w io.Writer, rep planReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// planHeader describes the question in one line.
func planHeader(rep planReport) string {
	var b strings.Builder
	b.WriteString(rep.Primitive)
	switch rep.Primitive {
	case "keywrite":
		fmt.Fprintf(&b, ", %d-byte values, %d-bit checksums", rep.ValueSize, rep.ChecksumBits)
	case "postcard":
		fmt.Fprintf(&b, ", %d hops, |V| = %s, %d-bit slots", rep.Hops, planGroup(rep.Values), rep.ChecksumBits)
	}
	fmt.Fprintf(&b, ", hash %s", rep.Hash)
	if rep.Keys != 0 {
		fmt.Fprintf(&b, ", %s keys", planGroup(rep.Keys))
	}
	if rep.Memory != 0 {
		fmt.Fprintf(&b, ", memory %s bytes (%s)", planGroup(rep.Memory), planBytes(rep.Memory))
	}
	if rep.Target != 0 {
		fmt.Fprintf(&b, ", target %s", planPercent(rep.Target))
	}
	return b.String()
}

// planColumns names the table's columns for a primitive: what the store
// counts, the age, the first and second error, and success. Key-Increment
// always answers, so its first error column is the mean overestimate.
func planColumns(prim string) string {
	switch prim {
	case "postcard":
		return "N\tCHUNKS\tMEMORY\tAGE\tALPHA\tNO OUTPUT\tWRONG\tSUCCESS"
	case "keyincrement":
		return "N\tCOUNTERS\tMEMORY\tOTHER KEYS\tALPHA\tMEAN ERROR/TOTAL\tOVERESTIMATED\tEXACT"
	}
	return "N\tSLOTS\tMEMORY\tAGE\tALPHA\tNO ANSWER\tWRONG\tSUCCESS"
}

// planCells formats one row's cells after N, in planColumns' order.
func planCells(slots, memory uint64, r analysis.Rates) string {
	first := r.NoAnswer
	if r.MeanError != 0 {
		first = r.MeanError
	}
	return fmt.Sprintf("%s\t%s\t%s\t%.4g\t%.3g\t%.3g\t%s", planGroup(slots), planBytes(memory),
		planGroup(r.Age), r.Alpha, first, r.Wrong, planPercent(r.Success))
}

func planTable(w io.Writer, rep planReport, res analysis.PlanResult) error {
	fmt.Fprintln(w, planHeader(rep))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, planColumns(rep.Primitive)+"\tNOTE")
	for _, r := range res.Rows {
		if !r.MeetsTarget {
			fmt.Fprintf(tw, "%d\t-\t-\t%s\t-\t-\t-\t-\t%s\n", r.N, planGroup(r.Age), r.Note)
			continue
		}
		note := ""
		if r.N == res.BestN {
			note = "best: least memory"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\n", r.N, planCells(r.Slots, r.Memory, r.Rates), note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.BestN == 0 {
		_, err := fmt.Fprintln(w, "no N meets the target")
		return err
	}
	return nil
}

func capacityTable(w io.Writer, rep planReport, res analysis.CapacityResult) error {
	fmt.Fprintln(w, planHeader(rep))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, planColumns(rep.Primitive))
	for _, row := range res.Rows {
		for _, r := range row.Ages {
			fmt.Fprintf(tw, "%d\t%s\n", row.N, planCells(row.Slots, row.Memory, r))
		}
	}
	return tw.Flush()
}

// planCount parses a count: digits with an optional K, M, G or T suffix
// (powers of 1000, a fraction allowed when the result is whole, e.g. 1.5M),
// or a power of two written 2^k.
func planCount(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if base, exp, ok := strings.Cut(t, "^"); ok {
		if base != "2" {
			return 0, fmt.Errorf("count %q: only powers of two (2^k) are supported", s)
		}
		k, err := strconv.ParseUint(exp, 10, 8)
		if err != nil || k > 63 {
			return 0, fmt.Errorf("count %q: exponent must be 0..63", s)
		}
		return 1 << k, nil
	}
	mult := uint64(1)
	if t != "" {
		switch t[len(t)-1] {
		case 'K', 'k':
			mult = 1e3
		case 'M':
			mult = 1e6
		case 'G':
			mult = 1e9
		case 'T':
			mult = 1e12
		}
		if mult != 1 {
			t = t[:len(t)-1]
		}
	}
	if n, err := strconv.ParseUint(t, 10, 64); err == nil {
		hi, lo := bits.Mul64(n, mult)
		if hi != 0 {
			return 0, fmt.Errorf("count %q: too large", s)
		}
		return lo, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || mult == 1 || f < 0 {
		return 0, fmt.Errorf("count %q: want a whole number with an optional K, M, G or T suffix, or 2^k", s)
	}
	v := f * float64(mult)
	if v != math.Trunc(v) || v >= math.MaxUint64 {
		return 0, fmt.Errorf("count %q: not a whole number", s)
	}
	return uint64(v), nil
}

// planGroup formats n with thousands separators.
func planGroup(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// planBytes formats a size in the largest binary unit it reaches.
func planBytes(n uint64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatUint(n, 10) + " B"
	}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.2f %ciB", v, units[i])
}

// planPercent formats a probability as a percentage with enough digits to
// tell 99.99 % from 99.999 %.
func planPercent(p float64) string {
	return strconv.FormatFloat(100*p, 'g', 6, 64) + " %"
}
