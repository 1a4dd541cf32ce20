package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes one line per run, and after the runs of each primitive
// and mode lines of ratios of the accepted rate and of reports per CPU second:
// DTA / baseline, and DTA's and the baseline's fractions of the receive-only
// ceiling. Runs over a remote sink add columns: the responder's and the
// translator's CPU seconds per million reports, the ops the responder
// executed per second and the RDMA ops sent per report, and a line per
// primitive and mode with the responder's CPU per report against the
// baseline's and the packets it takes in per CPU second (goals beside).
func (r *Report) WriteTable(w io.Writer) error {
	m := r.Machine
	fmt.Fprintf(w, "# %d CPUs (%s), GOMAXPROCS %d, Linux %s, %s; %d sender(s), %d reader(s), %g s windows, %d keys, %s stores (%s, hash %s)\n",
		m.CPUs, m.CPUModel, m.GOMAXPROCS, m.Kernel, m.GoVersion, r.Config.Senders, r.Config.Readers,
		r.Config.DurationS, r.Config.Keys, mib(r.Config.Memory), r.Config.HugePages, r.Config.Hash)
	remote := false
	for _, x := range r.Results {
		remote = remote || x.Remote != nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, tableHeader(remote))
	ratios := map[string]Ratio{}
	for _, q := range r.Ratios {
		ratios[q.Primitive+" "+q.Mode] = q
	}
	var summaries []string   // responder lines, after the table
	ran := map[string]bool{} // "primitive mode collector"
	for _, x := range r.Results {
		ran[x.Primitive+" "+x.Mode+" "+x.Collector] = true
	}
	for i, x := range r.Results {
		ops := "-"
		if x.OpsPerReport != 0 {
			ops = fmt.Sprintf("%.3f", x.OpsPerReport)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.3f\t%.3f\t%.2f\t%.2f\t%.3f\t%.2f\t%s\t%.4f\t%.1f\t",
			x.Primitive, x.Mode, x.PerDatagram, x.Collector, x.Offered/1e6, x.Accepted/1e6,
			pct(x.KernelDrops, x.Sent), pct(x.AppDrops, x.Sent), x.CPUPerMillion, x.PerCore/1e6,
			ops, x.AllocsPerReport, float64(x.RSSBeyond)/(1<<20))
		if remote {
			if q := x.Remote; q != nil {
				fmt.Fprintf(tw, "%.3f\t%.3f\t%.3f\t%.3f\t", q.ResponderCPUPerMillion, q.TranslatorCPUPerMillion,
					q.ResponderOpsPerSec/1e6, q.OpsPerReport)
			} else {
				fmt.Fprint(tw, "-\t-\t-\t-\t")
			}
		}
		fmt.Fprintln(tw)
		last := i+1 == len(r.Results) || r.Results[i+1].Primitive != x.Primitive || r.Results[i+1].Mode != x.Mode
		if q, ok := ratios[x.Primitive+" "+x.Mode]; ok && last {
			f := func(v float64) string { return fmt.Sprintf("%.2fx", v) }
			writeRatios(tw, remote, f(q.Accepted), f(q.PerCore), f(q.DTAOfCeiling), f(q.DTAOfCeilingPerCore),
				f(q.BaseOfCeiling), f(q.BaseOfCeilingPerCore), ran[x.Primitive+" "+x.Mode+" "+Baseline], ran[x.Primitive+" "+x.Mode+" "+ReceiveOnly],
				f(q.DurableOfDTA), f(q.DurableOfDTAPerCore), ran[x.Primitive+" "+x.Mode+" "+DTADurable])
			if q.INTOfNative != 0 {
				fmt.Fprintf(tw, "\t\t\t%s\t\t%s\t\t\t\t%s\t\t\t\t%s\n", "INT/native", f(q.INTOfNative), f(q.INTOfNativePerCore), remoteGap(remote))
			}
		}
		if last {
			if l := responderSummary(r.Results, x.Primitive, x.Mode); l != "" {
				summaries = append(summaries, l)
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, l := range summaries {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}

// Goals of the software responder (issue 15): it takes in at least
// goalPacketsPerCPUSecond request packets per CPU second, and its CPU per
// report is at most goalOfBaseline of the baseline collector's.
const (
	goalPacketsPerCPUSecond = 1e6
	goalOfBaseline          = 1.0 / 3
)

// responderSummary returns, for a primitive and mode run over a remote
// sink, a line with the responder's figures from that run: its CPU per
// report against the baseline collector's and their ratio, and the request
// packets it takes in per CPU second, each beside its goal. It returns ""
// without a remote sink.
func responderSummary(results []Result, primitive, mode string) string {
	var dta, base *Result
	for i := range results {
		x := &results[i]
		if x.Primitive != primitive || x.Mode != mode {
			continue
		}
		switch x.Collector {
		case DTA:
			dta = x
		case Baseline:
			base = x
		}
	}
	if dta == nil || dta.Remote == nil {
		return ""
	}
	q := dta.Remote
	line := fmt.Sprintf("  %s %s responder: %.3f CPU s/M rep, %.2f M pkts/CPU s (goal >= %.0f), %.1f pkts per receive call",
		primitive, mode, q.ResponderCPUPerMillion, q.ResponderPacketsPerCPUSecond/1e6, goalPacketsPerCPUSecond/1e6, q.ResponderPacketsPerRead)
	if q.ResponderPacketsPerWait > 0 {
		line += fmt.Sprintf(", %.1f pkts per wake-up", q.ResponderPacketsPerWait)
		if q.ResponderWaitCost > 0 && q.ResponderCPUPerMillion > 0 {
			line += fmt.Sprintf(" (%.1f µs of CPU each here: %.3f CPU s/M rep, %.0f%%)", q.ResponderWaitCost,
				q.ResponderWaitCPUPerMillion, 100*q.ResponderWaitCPUPerMillion/q.ResponderCPUPerMillion)
		}
	}
	if q.ResponderSendCPUPerMillion > 0 && q.ResponderCPUPerMillion > 0 {
		line += fmt.Sprintf(", sending on its TX rings %.3f CPU s/M rep (%.0f%%)",
			q.ResponderSendCPUPerMillion, 100*q.ResponderSendCPUPerMillion/q.ResponderCPUPerMillion)
	}
	if q.ResponderRSS > 0 {
		line += fmt.Sprintf(", process RSS %.0f MiB", float64(q.ResponderRSS)/(1<<20))
	}
	line += fmt.Sprintf(", machine softirq %.3f CPU s/M rep", q.SoftirqCPUPerMillion)
	if base != nil && base.CPUPerMillion > 0 {
		rb := q.ResponderCPUPerMillion / base.CPUPerMillion
		verdict := "met"
		if rb > goalOfBaseline {
			verdict = "not met"
		}
		line += fmt.Sprintf("; baseline collector %.3f CPU s/M rep; responder/baseline %.2fx (goal <= %.2fx: %s)",
			base.CPUPerMillion, rb, goalOfBaseline, verdict)
	}
	return line
}

// writeRatios writes the ratio lines after a primitive and mode's runs:
// DTA/baseline if the baseline ran, and the fractions of the receive-only
// ceiling if it ran (the accepted rate and reports per CPU second of each).
func writeRatios(w io.Writer, remote bool, acc, core, dAcc, dCore, bAcc, bCore string, base, ceil bool, durAcc, durCore string, dur bool) {
	line := func(name, a, c string) {
		fmt.Fprintf(w, "\t\t\t%s\t\t%s\t\t\t\t%s\t\t\t\t%s\n", name, a, c, remoteGap(remote))
	}
	if base {
		line("DTA/baseline", acc, core)
	}
	if ceil {
		line("DTA/receive-only", dAcc, dCore)
		if base {
			line("baseline/receive-only", bAcc, bCore)
		}
	}
	if dur {
		line("DTA+durable/DTA", durAcc, durCore)
	}
}

// tableHeader is the header line of the tables, with the remote sink's
// columns if remote.
func tableHeader(remote bool) string {
	h := "primitive\tmode\tper dgram\tcollector\toffered M/s\taccepted M/s\tkernel drop %\tapp drop %\tCPU s/M rep\tM rep/CPU s\tmem ops/rep\tallocs/rep\tRSS-regions MiB\t"
	if remote {
		h += "responder CPU s/M rep\ttranslator CPU s/M rep\tresponder M ops/s\trdma ops/rep\t"
	}
	return h
}

// remoteGap is the empty cells of the remote sink's columns on a ratio line.
func remoteGap(remote bool) string {
	if remote {
		return "\t\t\t\t"
	}
	return ""
}

func pct(n, of uint64) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

func mib(n uint64) string {
	if n >= 1<<30 && n%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", n>>30)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}
