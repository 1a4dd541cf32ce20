package cli

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/internal/tea"
	"github.com/dta-go/dta/internal/tea/teabench"
	"github.com/dta-go/dta/wire/dta"
)

type teaLoadOptions struct {
	spec     teaFlagSpec
	in       string
	gen      string
	out      string
	maxTries int
	seed     uint64
	output   string

	collector string // load the table in this collector's store
	store     string
	file      string // --file, another name of --in
	clear     bool
}

func newTeaLoadCmd() *cobra.Command {
	var o teaLoadOptions
	cmd := &cobra.Command{
		Use:   "load (--in FILE | --gen N) [--out TABLE | --collector IP:4791 [--store NAME]]",
		Short: "Insert entries into a TEA table in memory, a table file, or a collector's teatable store",
		Long: `load builds a TEA table in this process's memory with the control plane's
Algorithm 1 (at most --max-tries victims displaced per insert; what does not
fit stays in the SRAM stash) and reports where the entries went. With --out
it writes the table (buckets and stash) to a table file that dta tea lookup
reads.

--in FILE reads one entry per line, KEY VALUE ('#' starts a comment; - is
standard input). Keys are written as on every dta command line (decimal:
4 bytes; 0x hex; a 5-tuple tcp,10.0.0.1:5000,10.0.0.2:80 is 13 bytes, 37 for
IPv6) and must have --key-size bytes; values are 0x hex of --value-size
bytes or a decimal number (big-endian in --value-size bytes).
--gen N inserts N random IPv4 5-tuples (the paper's workload keys) with
the entry's index as value.

The table is sized from the entries and --load-factor unless --buckets is
given.

With --collector the table is a collector's teatable store (its geometry
from the collector's store advertisement; --store names it, default: the
default teatable store): every write of the control plane is an RDMA WRITE
into the collector's memory. The store must be empty (--clear zeroes it
first). Entries that do not fit stay in the stash, which is SRAM on a switch
and lives in this process here: they are lost when it exits, and a lookup
from another process (dta tea lookup --collector) does not find them. The
output says how many went there.`,
		Example: `  dta tea load --gen 1M --out flows.tea
  dta tea load --in nat.txt --key-size 13 --value-size 6 --out nat.tea
  printf 'tcp,10.0.0.1:5000,10.0.0.2:80 0x0a0000630050\n' | dta tea load --in - --key-size 13 --value-size 6
  dta tea load --collector 192.0.2.10:4791 --store flows --gen 100K`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTeaLoad(cmd, &o) },
	}
	o.spec.add(cmd, 13, 6)
	fl := cmd.Flags()
	fl.StringVar(&o.in, "in", "", "entries to insert, one KEY VALUE per line (- for standard input)")
	fl.StringVar(&o.gen, "gen", "", "insert this many random IPv4 5-tuples instead, e.g. 1M")
	fl.StringVar(&o.out, "out", "", "write the table to this table file")
	fl.IntVar(&o.maxTries, "max-tries", tea.DefaultMaxTries, "Algorithm 1's MaxTries, 1 to 65536")
	fl.Uint64Var(&o.seed, "seed", 1, "seed of the victims (and of --gen's keys)")
	fl.StringVarP(&o.output, "output", "o", "table", "output `format`: table or json")
	fl.StringVar(&o.collector, "collector", "", "load the table in this collector's teatable store, at its RoCEv2 address `IP:PORT` (port 4791 if absent)")
	fl.StringVar(&o.store, "store", "", "with --collector: the teatable store (default: the collector's default teatable store)")
	fl.StringVar(&o.file, "file", "", "another name of --in")
	fl.BoolVar(&o.clear, "clear", false, "with --collector: zero the store's table before loading it")
	return cmd
}

// teaLoadReport is dta tea load's JSON.
type teaLoadReport struct {
	Spec       tea.Spec       `json:"spec"`
	Inserted   uint64         `json:"inserted"`
	Duplicates uint64         `json:"duplicates"`
	InMemory   uint64         `json:"in_memory"`
	Stashed    int            `json:"stashed"`
	LoadFactor float64        `json:"load_factor"`
	Stats      tea.TableStats `json:"stats"`
	Seconds    float64        `json:"seconds"`
	File       string         `json:"file,omitempty"`
	Collector  string         `json:"collector,omitempty"`
	Store      string         `json:"store,omitempty"`
	FileBytes  int64          `json:"file_bytes,omitempty"`
	SampleKey  string         `json:"sample_key,omitempty"`
}

func runTeaLoad(cmd *cobra.Command, o *teaLoadOptions) error {
	if err := teaOutput(o.output); err != nil {
		return err
	}
	if o.file != "" {
		if o.in != "" {
			return usageError("--file is another name of --in: give one")
		}
		o.in = o.file
	}
	if (o.in == "") == (o.gen == "") {
		return usageError("give one of --in FILE (--file) or --gen N")
	}
	if o.collector == "" && (o.store != "" || o.clear) {
		return usageError("--store, --clear: only with --collector")
	}
	if err := o.spec.check(); err != nil {
		return err
	}
	if err := teaCheckMaxTries(o.maxTries); err != nil {
		return err
	}
	if err := checkOutputFile("out", o.out); err != nil {
		return err
	}
	if o.out != "" {
		if fi, err := os.Stat(o.out); err == nil && !fi.Mode().IsRegular() {
			return usageError("--out: %s exists and is not a regular file", o.out)
		}
	}
	var buckets uint64
	if o.spec.buckets != "" {
		var err error
		if buckets, err = teaCount("--buckets", o.spec.buckets); err != nil {
			return err
		}
		if err := checkInt("buckets", buckets, 2, tea.MaxBuckets); err != nil {
			return err
		}
	}
	var rt *teaRemote
	var tab *tea.Table
	if o.collector != "" {
		var err error
		if rt, tab, err = teaRemoteLoad(cmd, o); err != nil {
			return err
		}
		defer rt.q.Close()
		o.spec.keySize, o.spec.valueSize = rt.spec.KeySize, rt.spec.ValueSize
	}
	ks, vs := o.spec.keySize, o.spec.valueSize
	if ks < 1 || ks > tea.MaxKeySize || vs < 0 || vs > tea.MaxValueSize {
		return usageError("--key-size %d, --value-size %d: want 1..%d and 0..%d", ks, vs, tea.MaxKeySize, tea.MaxValueSize)
	}
	var keys, values []byte // flat
	if o.gen != "" {
		n, err := teaCount("--gen", o.gen)
		if err != nil {
			return err
		}
		if ks < 13 {
			return usageError("--gen makes 13-byte 5-tuples: --key-size %d is too small", ks)
		}
		// The keys, the values and the set that keeps the keys distinct.
		if err := teaCheckMemory("--gen", fmt.Sprintf("%d random keys", n), teaMul(n, uint64(ks+vs+teaKeySetBytes))); err != nil {
			return err
		}
		if err := checkInt("gen", n, 1, math.MaxInt32); err != nil {
			return err
		}
		keys = teabench.FiveTuples(int(n), ks, o.seed)
		values = make([]byte, int(n)*vs)
		for i := range int(n) {
			teaPutIndex(values[i*vs:(i+1)*vs], uint64(i))
		}
	} else {
		var err error
		if keys, values, err = teaReadEntries(cmd, o.in, ks, vs); err != nil {
			return err
		}
	}
	n := uint64(len(keys) / ks)
	if n == 0 {
		return usageError("no entries to insert")
	}
	var spec tea.Spec
	if rt != nil {
		spec = rt.spec
	} else {
		flags := "--buckets"
		if buckets != 0 {
			spec = tea.Spec{Buckets: buckets, Cells: o.spec.cells, KeySize: ks, ValueSize: vs, Scratchpad: o.spec.scratchpad, Hash: tea.CRC64}
		} else {
			flags = "--load-factor"
			p, err := tea.PlanTable(n, ks, vs, o.spec.cells, o.spec.loadFactor, o.spec.scratchpad)
			if err != nil { // the flags are checked: the entries need too many buckets
				return usageError("--load-factor %v: %d entries need more than 2^40 buckets of %d cells", o.spec.loadFactor, n, o.spec.cells)
			}
			spec = p.Spec
		}
		if err := spec.Validate(); err != nil {
			return usageError("%v", err) // the flags are checked: not reached
		}
		// The table, and the entries held while it is filled.
		if err := teaCheckMemory(flags, fmt.Sprintf("a table of %d buckets of %d-byte rows and %d entries", spec.Buckets, spec.RowSize(), n),
			spec.TableSize()+uint64(len(keys)+len(values))); err != nil {
			return err
		}
	}
	if tab == nil {
		var err error
		if tab, err = tea.NewTable(spec, tea.NewLocalMemory(spec.TableSize()), tea.TableConfig{MaxTries: o.maxTries, Seed: o.seed}); err != nil {
			return usageError("%v", err)
		}
	}
	rep := teaLoadReport{Spec: spec}
	if rt != nil {
		rep.Collector, rep.Store = rt.addr, rt.store.Name
	}
	start := time.Now()
	for i := range n {
		err := tab.Insert(keys[i*uint64(ks):(i+1)*uint64(ks)], values[i*uint64(vs):(i+1)*uint64(vs)])
		switch {
		case errors.Is(err, tea.ErrExists):
			rep.Duplicates++
		case err != nil:
			return fmt.Errorf("entry %d: %w", i, err)
		default:
			rep.Inserted++
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	rep.Stashed = tab.Stash().Len()
	rep.InMemory = tab.Len() - uint64(rep.Stashed)
	rep.LoadFactor = tab.LoadFactor()
	rep.Stats = tab.Stats()
	rep.SampleKey = dta.Key{Bytes: keys[:ks]}.String()
	if o.out != "" {
		if err := teaWriteTable(o.out, tab); err != nil {
			return err
		}
		rep.File = o.out
		if st, err := os.Stat(o.out); err == nil {
			rep.FileBytes = st.Size()
		}
	}
	out := cmd.OutOrStdout()
	if o.output == "json" {
		return teaJSON(out, rep)
	}
	if rt != nil {
		fmt.Fprintf(out, "collector %s, store %s: ", rt.addr, rt.store.Name)
	}
	fmt.Fprintf(out, "table: %d buckets × %d cells of %d-byte keys and %d-byte values; %s of memory with shadows%s\n",
		spec.Buckets, spec.Cells, ks, vs, planBytesTea(spec.TableSize()), map[bool]string{true: " and scratchpads", false: ""}[spec.Scratchpad > 0])
	fmt.Fprintf(out, "inserted %d entries in %.2f s (%d duplicates skipped): %d in memory (load factor %.3f), %d in the SRAM stash (%s); %d victims displaced\n",
		rep.Inserted, rep.Seconds, rep.Duplicates, rep.InMemory, rep.LoadFactor, rep.Stashed,
		teaPct(float64(rep.Stashed)/float64(max(rep.Inserted, 1)), 3), rep.Stats.Kicks)
	if rt != nil {
		fmt.Fprintf(out, "%d entries in the collector's memory, written with RDMA WRITEs; the %d in the stash stay in this process (a switch's SRAM) and are lost when it exits; look a key up with:\n  dta tea lookup --collector %s --store %s --key %s\n",
			rep.InMemory, rep.Stashed, rt.addr, rt.store.Name, rep.SampleKey)
	}
	if o.out != "" {
		fmt.Fprintf(out, "wrote %s (%d bytes); look a key up with:\n  dta tea lookup --table %s --key %s\n", o.out, rep.FileBytes, o.out, rep.SampleKey)
	}
	return nil
}

// planBytesTea formats a size in binary units.
func planBytesTea(n uint64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.2f %ciB", v, units[i])
}

// teaPutIndex writes i big-endian into b, keeping its low bytes.
func teaPutIndex(b []byte, i uint64) {
	var w [8]byte
	binary.BigEndian.PutUint64(w[:], i)
	if len(b) >= 8 {
		copy(b[len(b)-8:], w[:])
	} else {
		copy(b, w[8-len(b):])
	}
}

// teaReadEntries reads KEY VALUE lines from a regular file of at most an
// eighth of teaMemoryLimit (the entries parsed take up to about four
// times its bytes), or from standard input for -. Errors name --in.
func teaReadEntries(cmd *cobra.Command, path string, ks, vs int) (keys, values []byte, err error) {
	if path == "-" {
		keys, values, err = teaParseEntries(cmd.InOrStdin(), path, ks, vs)
	} else {
		f, ferr := openFlagFile("in", path, int64(min(teaMemoryLimit()/8, math.MaxInt64)))
		if ferr != nil {
			return nil, nil, ferr
		}
		defer f.Close()
		keys, values, err = teaParseEntries(f, path, ks, vs)
	}
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return nil, nil, usageError("--in: %v", err)
	case err != nil:
		return nil, nil, fmt.Errorf("--in: %w", err)
	}
	return keys, values, nil
}

// teaParseEntries parses KEY VALUE lines ('#' starts a comment) into flat
// keys of ks bytes and values of vs bytes; errors name the line.
func teaParseEntries(r io.Reader, name string, ks, vs int) (keys, values []byte, err error) {
	sc := bufio.NewScanner(r)
	line := 1
	for ; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		if len(fields) > 2 || len(fields) == 1 && vs > 0 {
			return nil, nil, usageError("%s:%d: want KEY VALUE", name, line)
		}
		k, err := dta.ParseKey(fields[0])
		if err != nil {
			return nil, nil, usageError("%s:%d: %v", name, line, err)
		}
		if len(k.Bytes) != ks {
			return nil, nil, usageError("%s:%d: key %s has %d bytes, the table's keys %d (--key-size)", name, line, fields[0], len(k.Bytes), ks)
		}
		v := []byte{}
		if len(fields) == 2 {
			if v, err = teaParseValue(fields[1], vs); err != nil {
				return nil, nil, usageError("%s:%d: %v", name, line, err)
			}
		}
		keys = append(keys, k.Bytes...)
		values = append(values, v...)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, nil, usageError("%s:%d: a line longer than %d bytes", name, line, bufio.MaxScanTokenSize)
	} else if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return keys, values, nil
}

// teaParseValue parses 0x hex of exactly n bytes, or a decimal number that
// fits n bytes (big-endian).
func teaParseValue(s string, n int) ([]byte, error) {
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		b, err := hex.DecodeString(s[2:])
		if err != nil || len(b) != n {
			return nil, fmt.Errorf("value %q: want %d bytes of hex (--value-size)", s, n)
		}
		return b, nil
	}
	v, ok := new(big.Int).SetString(s, 10)
	if !ok || v.Sign() < 0 || v.BitLen() > 8*n {
		return nil, fmt.Errorf("value %q: want 0x hex or a decimal number that fits %d bytes", s, n)
	}
	return v.FillBytes(make([]byte, n)), nil
}

// teaWriteTable writes a table file, atomically: on any error the
// temporary file is removed and the error names --out.
func teaWriteTable(path string, tab *tea.Table) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	err = tea.WriteFile(f, tab)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("--out: write %s: %w", path, err)
	}
	return nil
}

type teaLookupOptions struct {
	table     string
	keys      []string
	servers   int
	replicas  int
	output    string
	collector string
	store     string
}

func newTeaLookupCmd() *cobra.Command {
	var o teaLookupOptions
	cmd := &cobra.Command{
		Use:   "lookup (--table TABLE | --collector IP:4791 [--store NAME]) --key KEY...",
		Short: "Look keys up in a TEA table file or a collector's teatable store, as the switch would, and say where each was found",
		Long: `lookup restores a table file (written by dta tea load) into this process's
memory, placed over --servers servers with --replicas copies of each bucket
range, and looks each --key up with the lookup engine: the SRAM stash
first, otherwise one read of the key's home row (its bucket and the shadow
copy of the next one) on the first server holding it. It prints where each
key was found: the stash, or the server, bucket and cell, and the reads it
took (never more than one).

With --table the reads go to local memory. With --collector each lookup is
one RDMA READ of the key's row in the collector's teatable store (--store
names it; default: the default teatable store), as the switch's would be;
the stash is the loading process's and is empty here.`,
		Example: `  dta tea lookup --table flows.tea --key tcp,10.0.0.1:5000,10.0.0.2:80
  dta tea lookup --table flows.tea --servers 4 --replicas 2 --key 0x0a0000010a0000021f9000500600 -o json
  dta tea lookup --collector 192.0.2.10:4791 --store flows --key tcp,10.0.0.1:5000,10.0.0.2:80`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTeaLookup(cmd, &o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.table, "table", "", "the table file")
	fl.StringArrayVar(&o.keys, "key", nil, "a `KEY` to look up (decimal, 0x hex, or a 5-tuple); repeat for more")
	fl.IntVar(&o.servers, "servers", 1, "servers to place the table over")
	fl.IntVar(&o.replicas, "replicas", 1, "servers holding each bucket range")
	fl.StringVarP(&o.output, "output", "o", "table", "output `format`: table or json")
	fl.StringVar(&o.collector, "collector", "", "look up in this collector's teatable store, at its RoCEv2 address `IP:PORT` (port 4791 if absent)")
	fl.StringVar(&o.store, "store", "", "with --collector: the teatable store (default: the collector's default teatable store)")
	return cmd
}

// teaLookupRow is one lookup, as JSON.
type teaLookupRow struct {
	Key    string `json:"key"`
	Found  bool   `json:"found"`
	Value  string `json:"value,omitempty"`
	Source string `json:"source"`
	Server string `json:"server,omitempty"`
	Bucket uint64 `json:"bucket"`
	Cell   int    `json:"cell"`
	Home   uint64 `json:"home"`
	Reads  int    `json:"reads"`
	Error  string `json:"error,omitempty"`
}

func runTeaLookup(cmd *cobra.Command, o *teaLookupOptions) error {
	if err := teaOutput(o.output); err != nil {
		return err
	}
	switch {
	case o.table != "" && o.collector != "":
		return usageError("--table and --collector are mutually exclusive: give exactly one")
	case o.table == "" && o.collector == "":
		return usageError("give one of --table FILE or --collector IP:PORT")
	case len(o.keys) == 0:
		return usageError("--key: at least one is required")
	}
	if o.collector != "" {
		return runTeaRemoteLookup(cmd, o)
	}
	if o.store != "" {
		return usageError("--store: only with --collector")
	}
	if err := checkInt("servers", o.servers, 1, tea.MaxServers); err != nil {
		return err
	}
	if err := checkInt("replicas", o.replicas, 1, min(tea.MaxReplicas, o.servers)); err != nil {
		return err
	}
	// The file, and the copies of its table the servers hold.
	lim := teaMemoryLimit()
	b, err := readFlagFile("table", o.table, int64(min(lim, math.MaxInt64)))
	if err != nil {
		return err
	}
	f, err := tea.DecodeFile(b)
	if err != nil {
		return fmt.Errorf("--table: %s: %w", o.table, err)
	}
	if uint64(o.servers) > f.Spec.Buckets {
		return usageError("--servers: %d, more than the %d buckets of %s", o.servers, f.Spec.Buckets, o.table)
	}
	if err := teaCheckMemory("--table, --replicas", fmt.Sprintf("%s and %d copies of its table of %d bytes", o.table, o.replicas, f.Spec.TableSize()),
		uint64(len(b))+teaMul(f.Spec.TableSize(), uint64(o.replicas))); err != nil {
		return err
	}
	p, err := tea.PlaceEqual(f.Spec, o.servers, o.replicas)
	if err != nil {
		return err // the flags are checked: not reached
	}
	mems := make([]tea.Memory, o.servers)
	readers := make([]tea.Reader, o.servers)
	for i := range mems {
		mems[i] = tea.NewLocalMemory(p.Used(i))
		readers[i] = tea.MemoryReader{Mem: mems[i]}
	}
	cm, err := tea.NewClusterMemory(p, mems)
	if err != nil {
		return err
	}
	tab, err := tea.Restore(f, cm, tea.TableConfig{MaxTries: tea.DefaultMaxTries})
	if err != nil {
		return fmt.Errorf("--table: %s: %w", o.table, err)
	}
	var row teaLookupRow
	eng, err := tea.New(tea.Config{Placement: p, Readers: readers, Stash: tab.Stash(), InFlight: 1,
		Now: func() time.Time { return time.Unix(0, 0) }, // local reads: no deadline to miss
		Done: func(r *tea.Result) {
			row.Found, row.Source, row.Reads = r.Found, r.Source.String(), r.Reads
			if r.Found {
				row.Value = "0x" + hex.EncodeToString(r.Value)
			}
			if r.Server >= 0 {
				row.Server = p.Servers()[r.Server].Name
				row.Bucket, row.Cell = r.Bucket, r.Cell
			}
			if r.Err != nil {
				row.Error = r.Err.Error()
			}
		}})
	if err != nil {
		return err
	}
	var rows []teaLookupRow
	for _, s := range o.keys {
		k, err := dta.ParseKey(s)
		if err != nil {
			return usageError("--key: %v", err)
		}
		if len(k.Bytes) != f.Spec.KeySize {
			return usageError("--key %s: %d bytes, the table's keys have %d", s, len(k.Bytes), f.Spec.KeySize)
		}
		row = teaLookupRow{Key: s, Home: f.Spec.HomeOf(k.Bytes), Cell: -1}
		if err := eng.Lookup(k.Bytes, 0); err != nil {
			return err
		}
		rows = append(rows, row)
	}
	out := cmd.OutOrStdout()
	if o.output == "json" {
		return teaJSON(out, rows)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "key\tfound\tvalue\tfrom\tserver\thome\tbucket\tcell\treads")
	for _, r := range rows {
		where := []string{"-", "-", "-"}
		if r.Source == "memory" {
			where = []string{r.Server, fmt.Sprint(r.Bucket), fmt.Sprint(r.Cell)}
			if !r.Found {
				where[1], where[2] = "-", "-"
			}
		}
		val := r.Value
		if val == "" {
			val = "-"
		}
		fmt.Fprintf(tw, "%s\t%v\t%s\t%s\t%s\t%d\t%s\t%s\t%d\n", r.Key, r.Found, val, r.Source, where[0], r.Home, where[1], where[2], r.Reads)
	}
	return tw.Flush()
}
