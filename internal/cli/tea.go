package cli

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/internal/tea"
)

func newTeaCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tea",
		Short: "TEA remote table lookups: plan, load and look up tables, run NFs, reproduce the paper's figures",
		Long: `tea works with TEA-TABLE (Kim et al., SIGCOMM 2020), a key-value table kept
in servers' DRAM that a switch looks up with one remote read per lookup: a
bucket and a shadow copy of the next one (bounded linear probing), with an
SRAM stash for what does not fit and a popularity cache in front.

  dta tea plan     memory for N entries of a given key and value size
  dta tea bench    the paper's figures that need no RDMA, over this code
  dta tea load     insert entries into a table (in memory, a table file, or
                   a collector's teatable store over RDMA WRITEs)
  dta tea lookup   look keys up in a table file or a collector's teatable
                   store (one RDMA READ each), saying where each was found
  dta tea nf       run a NAT or an L4 load balancer on TUN devices, its
                   table in local memory or over RDMA

A collector hosts a table as a store of primitive teatable (its geometry in
the stores: list), registered for remote reads and writes and advertised
like any store; --collector IP:4791 [--store NAME] reaches it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newTeaPlanCmd(), newTeaBenchCmd(), newTeaLoadCmd(), newTeaLookupCmd(), newTeaNFCmd())
	return cmd
}

// errTeaNotPrimitive refuses teatable where a report primitive is meant.
var errTeaNotPrimitive = errors.New("teatable is a store kind that no report feeds (see dta tea plan)")

// teaOutput checks an -o value.
func teaOutput(o string) error {
	if o != "table" && o != "json" {
		return usageError("-o %q: want table or json", o)
	}
	return nil
}

// teaJSON prints v as indented JSON.
func teaJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// teaCount parses a count: digits with an optional K, M or G suffix
// (powers of 1000; 1.5M allowed when whole) or 2^k.
func teaCount(flag, s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if base, exp, ok := strings.Cut(t, "^"); ok {
		k, err := strconv.ParseUint(exp, 10, 8)
		if base != "2" || err != nil || k > 62 {
			return 0, usageError("%s %q: want 2^k with k ≤ 62", flag, s)
		}
		return 1 << k, nil
	}
	mult := uint64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K', 'k':
			mult = 1e3
		case 'M':
			mult = 1e6
		case 'G':
			mult = 1e9
		}
		if mult != 1 {
			t = t[:n-1]
		}
	}
	if n, err := strconv.ParseUint(t, 10, 64); err == nil {
		if hi, lo := bits.Mul64(n, mult); hi == 0 {
			return lo, nil
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if v := f * float64(mult); err == nil && mult != 1 && f >= 0 && v == math.Trunc(v) && v < 1<<63 {
		return uint64(v), nil
	}
	return 0, usageError("%s %q: want a whole number with an optional K, M or G suffix, or 2^k", flag, s)
}

// teaMiB formats bytes in MiB, as the paper's Table 2 counts "MB".
func teaMiB(n uint64) string { return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) }

// teaPct formats a share as a percentage.
func teaPct(p float64, digits int) string {
	return strconv.FormatFloat(100*p, 'f', digits, 64) + " %"
}

// teaFloats parses a comma-separated list of floats; an empty list is a
// usage error naming flag.
func teaFloats(flag string, in []string) ([]float64, error) {
	if len(in) == 0 {
		return nil, usageError("%s: none given", flag)
	}
	out := make([]float64, 0, len(in))
	for _, s := range in {
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, usageError("%s %q: not a number", flag, s)
		}
		out = append(out, f)
	}
	return out, nil
}

// teaFlagSpec is the table geometry flags shared by load.
type teaFlagSpec struct {
	keySize, valueSize, cells, scratchpad int
	loadFactor                            float64
	buckets                               string
}

func (f *teaFlagSpec) add(cmd *cobra.Command, keySize, valueSize int) {
	fl := cmd.Flags()
	fl.IntVar(&f.keySize, "key-size", keySize, "bytes of a key (13: an IPv4 5-tuple, 37: IPv6)")
	fl.IntVar(&f.valueSize, "value-size", valueSize, "bytes of a value")
	fl.IntVar(&f.cells, "cells", 8, "cells per bucket")
	fl.IntVar(&f.scratchpad, "scratchpad", 0, "bytes of packet each row's scratchpad holds (an MTU, e.g. 1500); 0: none")
	fl.Float64Var(&f.loadFactor, "load-factor", 0.7, "entries / cells, to size the table from the entries (ignored with --buckets)")
	fl.StringVar(&f.buckets, "buckets", "", "buckets, instead of sizing the table from --load-factor")
}

// check refuses a geometry flag out of its range, naming the flag, before
// any table is sized from them.
func (f *teaFlagSpec) check() error {
	return teaCheckGeometry(f.keySize, f.valueSize, f.cells, f.scratchpad, f.loadFactor)
}

// teaCheckGeometry checks the flags --key-size, --value-size, --cells,
// --scratchpad and --load-factor against the limits of a tea.Spec.
func teaCheckGeometry(keySize, valueSize, cells, scratchpad int, loadFactor float64) error {
	if err := checkInt("key-size", keySize, 1, tea.MaxKeySize); err != nil {
		return err
	}
	if err := checkInt("value-size", valueSize, 0, tea.MaxValueSize); err != nil {
		return err
	}
	if err := checkInt("cells", cells, 1, tea.MaxCells); err != nil {
		return err
	}
	if err := checkInt("scratchpad", scratchpad, 0, tea.MaxScratchpad); err != nil {
		return err
	}
	if err := checkFloat("load-factor", loadFactor, 0, 1); err != nil || loadFactor == 0 {
		return usageError("--load-factor: %v out of range (0, 1]", loadFactor)
	}
	return nil
}

// teaMaxTries is the most victims one insert may displace (--max-tries):
// more only makes an insert into a full table take longer.
const teaMaxTries = 1 << 16

// teaCheckMaxTries checks --max-tries; 0 would mean the library's default,
// so it is refused rather than replaced.
func teaCheckMaxTries(v int) error { return checkInt("max-tries", v, 1, teaMaxTries) }

// teaKeySetBytes is about the bytes per key, beyond the key itself, that
// teabench.FiveTuples spends on the set keeping its keys distinct.
const teaKeySetBytes = 48

// teaMul is a × b, or math.MaxUint64 when that overflows: a byte count
// that large is refused all the same.
func teaMul(a, b uint64) uint64 {
	if hi, lo := bits.Mul64(a, b); hi == 0 {
		return lo
	}
	return math.MaxUint64
}

// teaMemoryLimit is the most bytes a tea command allocates for a table in
// this process (and for the keys it inserts): half the machine's memory
// (MemTotal of /proc/meminfo), or 4 GiB where that is not known. A table
// above it is refused before it is allocated rather than crash the process.
var teaMemoryLimit = sync.OnceValue(func() uint64 {
	if m, ok := machineMemory(); ok {
		return m / 2
	}
	return 4 << 30
})

// teaCheckMemory refuses what needs more than teaMemoryLimit bytes, naming
// the flags that sized it.
func teaCheckMemory(flags, what string, need uint64) error {
	if lim := teaMemoryLimit(); need > lim {
		return usageError("%s: %s needs %d bytes (%s), more than the %d (%s) a tea command allocates here (half this machine's memory)",
			flags, what, need, planBytesTea(need), lim, planBytesTea(lim))
	}
	return nil
}
