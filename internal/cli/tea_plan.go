package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/internal/tea"
)

type teaPlanOptions struct {
	entries    string
	keySize    int
	valueSize  int
	cells      int
	loadFactor float64
	scratchpad int
	servers    int
	replicas   int
	nf         string
	output     string
}

func newTeaPlanCmd() *cobra.Command {
	var o teaPlanOptions
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Memory of a TEA table for N entries, part by part, and the paper's Table 2",
		Long: `plan sizes a TEA-TABLE: ⌈entries / (cells × load factor)⌉ buckets of cells
of 1 + key + value bytes, each bucket followed by a shadow copy of the next
one, and a scratchpad per row (--scratchpad, an MTU), rows rounded to 8
bytes. It prints the memory of each part, the total, and each server's share
over --servers with --replicas copies of each bucket range.

The paper's Table 2 counts only entries × (key + value) (its "MB" are MiB);
the raw column is that number. --nf table2 prints the paper's four network
functions beside our sizes for 10 M entries.

The load factor decides how many entries end in the switch's SRAM stash:
dta tea bench --figure stash measures it (8 cells: ≤ 0.1 % up to about 0.7).`,
		Example: `  # the paper's Table 2 beside ours (10 M entries, IPv6 keys)
  dta tea plan --nf table2
  # an IPv6 NAT of 10 M entries with 1500-byte scratchpads over 8 servers, 2 copies
  dta tea plan --nf nat --entries 10M --scratchpad 1500 --servers 8 --replicas 2
  # 80 M IPv4 5-tuples with 6-byte values, as JSON
  dta tea plan --entries 80M --key-size 13 --value-size 6 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTeaPlan(cmd, &o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.entries, "entries", "10M", "entries the table holds, e.g. 10M or 2^24")
	fl.IntVar(&o.keySize, "key-size", 37, "bytes of a key (37: an IPv6 5-tuple)")
	fl.IntVar(&o.valueSize, "value-size", 18, "bytes of a value (18: an IPv6 address and port)")
	fl.IntVar(&o.cells, "cells", tea.DefaultCells, "cells per bucket")
	fl.Float64Var(&o.loadFactor, "load-factor", 0.7, "entries / cells")
	fl.IntVar(&o.scratchpad, "scratchpad", 0, "bytes of packet per row's scratchpad (an MTU, e.g. 1500); 0: none")
	fl.IntVar(&o.servers, "servers", 1, "DRAM servers sharing the table")
	fl.IntVar(&o.replicas, "replicas", 1, "servers holding each bucket range")
	fl.StringVar(&o.nf, "nf", "", "take key and value sizes from a network function of the paper: nat, firewall, lb, vpn; table2: all four beside the paper")
	fl.StringVarP(&o.output, "output", "o", "table", "output `format`: table or json")
	return cmd
}

// teaPlanRow is one planned table, as JSON.
type teaPlanRow struct {
	NF              string   `json:"nf,omitempty"`
	PaperMiB        float64  `json:"paper_mib,omitempty"`
	Spec            tea.Spec `json:"spec"`
	Entries         uint64   `json:"entries"`
	LoadFactor      float64  `json:"load_factor"`
	RawBytes        uint64   `json:"raw_bytes"`
	BucketBytes     uint64   `json:"bucket_bytes"`
	ShadowBytes     uint64   `json:"shadow_bytes"`
	ScratchpadBytes uint64   `json:"scratchpad_bytes"`
	PadBytes        uint64   `json:"pad_bytes"`
	TableBytes      uint64   `json:"table_bytes"`
	ServerBytes     []uint64 `json:"server_bytes"`
	Servers         int      `json:"servers"`
	Replicas        int      `json:"replicas"`
}

func runTeaPlan(cmd *cobra.Command, o *teaPlanOptions) error {
	if err := teaOutput(o.output); err != nil {
		return err
	}
	entries, err := teaCount("--entries", o.entries)
	if err != nil {
		return err
	}
	if entries == 0 {
		return usageError("--entries: zero")
	}
	if o.nf != "" && (cmd.Flags().Changed("key-size") || cmd.Flags().Changed("value-size")) {
		return usageError("--key-size, --value-size: not with --nf, which gives the sizes")
	}
	if err := teaCheckGeometry(o.keySize, o.valueSize, o.cells, o.scratchpad, o.loadFactor); err != nil {
		return err
	}
	if err := checkInt("servers", o.servers, 1, tea.MaxServers); err != nil {
		return err
	}
	if err := checkInt("replicas", o.replicas, 1, min(tea.MaxReplicas, o.servers)); err != nil {
		return err
	}
	type want struct {
		nf       string
		paper    float64
		key, val int
	}
	var wants []want
	switch o.nf {
	case "":
		wants = []want{{key: o.keySize, val: o.valueSize}}
	case "table2":
		if !cmd.Flags().Changed("entries") {
			entries = 10_000_000
		}
		for _, nf := range tea.PaperTable2() {
			wants = append(wants, want{nf.Name, nf.PaperMiB, nf.KeySize, nf.ValueSize})
		}
	default:
		for _, nf := range tea.PaperTable2() {
			if nf.Name == o.nf {
				wants = []want{{nf.Name, nf.PaperMiB, nf.KeySize, nf.ValueSize}}
			}
		}
		if wants == nil {
			return usageError("--nf %q: want nat, firewall, lb, vpn or table2", o.nf)
		}
	}
	var rows []teaPlanRow
	for _, w := range wants {
		p, err := tea.PlanTable(entries, w.key, w.val, o.cells, o.loadFactor, o.scratchpad)
		if err != nil { // the flags are checked: the entries need too many buckets
			return usageError("--entries %d: more than 2^40 buckets of %d cells at --load-factor %v", entries, o.cells, o.loadFactor)
		}
		if uint64(o.servers) > p.Spec.Buckets {
			return usageError("--servers: %d, more than the table's %d buckets", o.servers, p.Spec.Buckets)
		}
		pl, err := tea.PlaceEqual(p.Spec, o.servers, o.replicas)
		if err != nil {
			return err // the flags are checked: not reached
		}
		row := teaPlanRow{NF: w.nf, Spec: p.Spec, Entries: p.Entries, LoadFactor: p.LoadFactor,
			RawBytes: p.RawBytes, BucketBytes: p.BucketBytes, ShadowBytes: p.ShadowBytes,
			ScratchpadBytes: p.ScratchpadBytes, PadBytes: p.PadBytes, TableBytes: p.TableBytes,
			Servers: o.servers, Replicas: o.replicas}
		if w.nf != "" && entries == 10_000_000 {
			row.PaperMiB = w.paper
		}
		for s := range o.servers {
			row.ServerBytes = append(row.ServerBytes, pl.Used(s))
		}
		rows = append(rows, row)
	}
	out := cmd.OutOrStdout()
	if o.output == "json" {
		return teaJSON(out, rows)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(out, "%d entries, %d cells per bucket, load factor %.3f, scratchpad %d B, %d server(s) × %d cop(ies); sizes in MiB\n",
		entries, o.cells, rows[0].LoadFactor, o.scratchpad, o.servers, o.replicas)
	fmt.Fprintln(tw, "nf\tkey\tvalue\tbuckets\tpaper (Table 2)\traw entries\tbuckets\tshadows\tscratchpads\ttotal\tper server\t")
	for _, r := range rows {
		paper := "-"
		if r.PaperMiB > 0 {
			paper = fmt.Sprintf("%.0f", r.PaperMiB)
		}
		nf := r.NF
		if nf == "" {
			nf = "-"
		}
		var most uint64
		for _, b := range r.ServerBytes {
			most = max(most, b)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", nf, r.Spec.KeySize, r.Spec.ValueSize, r.Spec.Buckets,
			paper, teaMiB(r.RawBytes), teaMiB(r.BucketBytes), teaMiB(r.ShadowBytes), teaMiB(r.ScratchpadBytes),
			teaMiB(r.TableBytes), teaMiB(most))
	}
	return tw.Flush()
}
