package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// Stat is the median and range of one figure over repeated runs.
type Stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

func statOf(v []float64) Stat {
	if len(v) == 0 {
		return Stat{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Stat{Median: m, Min: s[0], Max: s[len(s)-1]}
}

// Spread is (max - min) / median, the relative width of the range.
func (s Stat) Spread() float64 {
	if s.Median == 0 {
		return 0
	}
	return (s.Max - s.Min) / s.Median
}

// Row is one primitive, mode and collector over repeated runs.
type Row struct {
	Primitive       string `json:"primitive"`
	Mode            string `json:"mode"`
	Collector       string `json:"collector"`
	PerDatagram     int    `json:"reports_per_datagram"`
	Offered         Stat   `json:"offered_per_s"`
	Accepted        Stat   `json:"accepted_per_s"`
	KernelDropPct   Stat   `json:"kernel_drop_pct"`
	AppDropPct      Stat   `json:"app_drop_pct"`
	CPUPerMillion   Stat   `json:"cpu_s_per_million_reports"`
	PerCore         Stat   `json:"reports_per_cpu_second"`
	OpsPerReport    Stat   `json:"mem_ops_per_report"`
	AllocsPerReport Stat   `json:"allocs_per_report"`
	RSSBeyond       Stat   `json:"rss_beyond_regions_bytes"`

	Remote *RemoteRow `json:"remote,omitempty"` // DTA over a remote sink
}

// RemoteRow is the figures of RemoteResult that vary, over repeated runs.
type RemoteRow struct {
	ResponderCPUPerMillion  Stat `json:"responder_cpu_s_per_million_reports"`
	TranslatorCPUPerMillion Stat `json:"translator_cpu_s_per_million_reports"`
	ResponderOpsPerSec      Stat `json:"responder_ops_per_s"`
	OpsPerReport            Stat `json:"rdma_ops_per_report"`
	// ResponderPacketsPerCPUSecond is the request packets the responder
	// takes in per second of its CPU.
	ResponderPacketsPerCPUSecond Stat `json:"responder_packets_per_cpu_s"`
	// ResponderWaitCPUPerMillion is the estimate of the responder's CPU
	// spent waiting and waking (RemoteResult.ResponderWaitCPUPerMillion).
	ResponderWaitCPUPerMillion Stat `json:"responder_wait_cpu_s_per_million_reports"`
	// ResponderSendCPUPerMillion is the responder's CPU time in the kicks
	// of its AF_XDP TX rings (RemoteResult.ResponderSendCPUPerMillion).
	ResponderSendCPUPerMillion Stat `json:"responder_send_cpu_s_per_million_reports"`
}

// RatioRow is DTA / baseline for one primitive and mode: each run's ratio
// (both collectors measured in that run), then median and range.
type RatioRow struct {
	Primitive string `json:"primitive"`
	Mode      string `json:"mode"`
	Accepted  Stat   `json:"accepted"`
	PerCore   Stat   `json:"per_cpu_second"`

	// ResponderOfBaseline is, over a remote sink with the baseline run, the
	// responder's CPU per report over the baseline collector's, per run.
	ResponderOfBaseline *Stat `json:"responder_cpu_of_baseline_cpu,omitempty"`

	// Fractions of the receive-only ceiling (Ratio), when it ran.
	DTAOfCeiling         *Stat `json:"dta_of_ceiling_accepted,omitempty"`
	DTAOfCeilingPerCore  *Stat `json:"dta_of_ceiling_per_cpu_second,omitempty"`
	BaseOfCeiling        *Stat `json:"baseline_of_ceiling_accepted,omitempty"`
	BaseOfCeilingPerCore *Stat `json:"baseline_of_ceiling_per_cpu_second,omitempty"`

	// DTA with durable stores / DTA (Ratio), when it ran.
	DurableOfDTA        *Stat `json:"durable_of_dta_accepted,omitempty"`
	DurableOfDTAPerCore *Stat `json:"durable_of_dta_per_cpu_second,omitempty"`
	// INT input / native reports (Ratio), when it ran.
	INTOfNative        *Stat `json:"int_of_native_accepted,omitempty"`
	INTOfNativePerCore *Stat `json:"int_of_native_per_cpu_second,omitempty"`
}

// Combined summarises repeated benchmarks of the same configuration.
type Combined struct {
	Machine Machine    `json:"machine"`
	Config  Summary    `json:"config"`
	Runs    int        `json:"runs"`
	Rows    []Row      `json:"rows"`
	Ratios  []RatioRow `json:"ratios"`
}

// Combine summarises reports of repeated runs of one configuration, in the
// order of the first report's results.
func Combine(reps []*Report) *Combined {
	if len(reps) == 0 {
		return &Combined{}
	}
	c := &Combined{Machine: reps[0].Machine, Config: reps[0].Config, Runs: len(reps)}
	type key struct{ p, m, c string }
	results := map[key][]Result{}
	ratios := map[key][]Ratio{}
	for _, r := range reps {
		for _, x := range r.Results {
			k := key{x.Primitive, x.Mode, x.Collector}
			results[k] = append(results[k], x)
		}
		for _, q := range r.Ratios {
			k := key{q.Primitive, q.Mode, ""}
			ratios[k] = append(ratios[k], q)
		}
	}
	pick := func(rs []Result, f func(*Result) float64) Stat {
		v := make([]float64, len(rs))
		for i := range rs {
			v[i] = f(&rs[i])
		}
		return statOf(v)
	}
	for _, x := range reps[0].Results {
		rs := results[key{x.Primitive, x.Mode, x.Collector}]
		var remote *RemoteRow
		if x.Remote != nil {
			// Runs that lack the figures (none, from one Run) count as 0.
			rf := func(f func(*RemoteResult) float64) Stat {
				return pick(rs, func(r *Result) float64 {
					if r.Remote == nil {
						return 0
					}
					return f(r.Remote)
				})
			}
			remote = &RemoteRow{
				ResponderCPUPerMillion:       rf(func(r *RemoteResult) float64 { return r.ResponderCPUPerMillion }),
				TranslatorCPUPerMillion:      rf(func(r *RemoteResult) float64 { return r.TranslatorCPUPerMillion }),
				ResponderOpsPerSec:           rf(func(r *RemoteResult) float64 { return r.ResponderOpsPerSec }),
				OpsPerReport:                 rf(func(r *RemoteResult) float64 { return r.OpsPerReport }),
				ResponderPacketsPerCPUSecond: rf(func(r *RemoteResult) float64 { return r.ResponderPacketsPerCPUSecond }),
				ResponderWaitCPUPerMillion:   rf(func(r *RemoteResult) float64 { return r.ResponderWaitCPUPerMillion }),
				ResponderSendCPUPerMillion:   rf(func(r *RemoteResult) float64 { return r.ResponderSendCPUPerMillion }),
			}
		}
		c.Rows = append(c.Rows, Row{
			Primitive: x.Primitive, Mode: x.Mode, Collector: x.Collector, PerDatagram: x.PerDatagram,
			Offered:         pick(rs, func(r *Result) float64 { return r.Offered }),
			Accepted:        pick(rs, func(r *Result) float64 { return r.Accepted }),
			KernelDropPct:   pick(rs, func(r *Result) float64 { return pct(r.KernelDrops, r.Sent) }),
			AppDropPct:      pick(rs, func(r *Result) float64 { return pct(r.AppDrops, r.Sent) }),
			CPUPerMillion:   pick(rs, func(r *Result) float64 { return r.CPUPerMillion }),
			PerCore:         pick(rs, func(r *Result) float64 { return r.PerCore }),
			OpsPerReport:    pick(rs, func(r *Result) float64 { return r.OpsPerReport }),
			AllocsPerReport: pick(rs, func(r *Result) float64 { return r.AllocsPerReport }),
			RSSBeyond:       pick(rs, func(r *Result) float64 { return float64(r.RSSBeyond) }),
			Remote:          remote,
		})
	}
	for _, q := range reps[0].Ratios {
		qs := ratios[key{q.Primitive, q.Mode, ""}]
		of := func(f func(*Ratio) float64) Stat {
			v := make([]float64, len(qs))
			for i := range qs {
				v[i] = f(&qs[i])
			}
			return statOf(v)
		}
		row := RatioRow{
			Primitive: q.Primitive, Mode: q.Mode,
			Accepted: of(func(r *Ratio) float64 { return r.Accepted }),
			PerCore:  of(func(r *Ratio) float64 { return r.PerCore }),
		}
		ptr := func(s Stat) *Stat { return &s }
		if q.INTOfNative != 0 {
			row.INTOfNative = ptr(of(func(r *Ratio) float64 { return r.INTOfNative }))
			row.INTOfNativePerCore = ptr(of(func(r *Ratio) float64 { return r.INTOfNativePerCore }))
		}
		if q.ResponderOfBaseline != 0 {
			row.ResponderOfBaseline = ptr(of(func(r *Ratio) float64 { return r.ResponderOfBaseline }))
		}
		if q.DurableOfDTA != 0 {
			row.DurableOfDTA = ptr(of(func(r *Ratio) float64 { return r.DurableOfDTA }))
			row.DurableOfDTAPerCore = ptr(of(func(r *Ratio) float64 { return r.DurableOfDTAPerCore }))
		}
		if q.DTAOfCeiling != 0 {
			row.DTAOfCeiling = ptr(of(func(r *Ratio) float64 { return r.DTAOfCeiling }))
			row.DTAOfCeilingPerCore = ptr(of(func(r *Ratio) float64 { return r.DTAOfCeilingPerCore }))
			if q.BaseOfCeiling != 0 {
				row.BaseOfCeiling = ptr(of(func(r *Ratio) float64 { return r.BaseOfCeiling }))
				row.BaseOfCeilingPerCore = ptr(of(func(r *Ratio) float64 { return r.BaseOfCeilingPerCore }))
			}
		}
		c.Ratios = append(c.Ratios, row)
	}
	return c
}

// WriteTable writes the medians with their ranges (min..max) of the figures
// that vary most, and the DTA/baseline ratios; over a remote sink also the
// columns Report.WriteTable adds.
func (c *Combined) WriteTable(w io.Writer) error {
	m := c.Machine
	fmt.Fprintf(w, "# median (min..max) of %d runs; %d CPUs (%s), GOMAXPROCS %d, Linux %s, %s; %d sender(s), %d reader(s), %g s windows, %d keys, %s stores (%s, hash %s)\n",
		c.Runs, m.CPUs, m.CPUModel, m.GOMAXPROCS, m.Kernel, m.GoVersion, c.Config.Senders, c.Config.Readers,
		c.Config.DurationS, c.Config.Keys, mib(c.Config.Memory), c.Config.HugePages, c.Config.Hash)
	remote := false
	for _, x := range c.Rows {
		remote = remote || x.Remote != nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, tableHeader(remote))
	ratios := map[string]RatioRow{}
	for _, q := range c.Ratios {
		ratios[q.Primitive+" "+q.Mode] = q
	}
	ran := map[string]bool{} // "primitive mode collector"
	for _, x := range c.Rows {
		ran[x.Primitive+" "+x.Mode+" "+x.Collector] = true
	}
	for i, x := range c.Rows {
		ops := "-"
		if x.OpsPerReport.Median != 0 {
			ops = fmt.Sprintf("%.3f", x.OpsPerReport.Median)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.3f\t%s\t%.2f\t%.2f\t%.3f\t%s\t%s\t%.4f\t%.1f\t",
			x.Primitive, x.Mode, x.PerDatagram, x.Collector, x.Offered.Median/1e6, rangeOf(x.Accepted, 1e6, "%.3f"),
			x.KernelDropPct.Median, x.AppDropPct.Median, x.CPUPerMillion.Median, rangeOf(x.PerCore, 1e6, "%.2f"),
			ops, x.AllocsPerReport.Median, x.RSSBeyond.Median/(1<<20))
		if remote {
			if q := x.Remote; q != nil {
				fmt.Fprintf(tw, "%s\t%.3f\t%s\t%.3f\t", rangeOf(q.ResponderCPUPerMillion, 1, "%.3f"), q.TranslatorCPUPerMillion.Median,
					rangeOf(q.ResponderOpsPerSec, 1e6, "%.3f"), q.OpsPerReport.Median)
			} else {
				fmt.Fprint(tw, "-\t-\t-\t-\t")
			}
		}
		fmt.Fprintln(tw)
		last := i+1 == len(c.Rows) || c.Rows[i+1].Primitive != x.Primitive || c.Rows[i+1].Mode != x.Mode
		if q, ok := ratios[x.Primitive+" "+x.Mode]; ok && last {
			f := func(s *Stat) string {
				if s == nil {
					return ""
				}
				return rangeOf(*s, 1, "%.2fx")
			}
			writeRatios(tw, remote, f(&q.Accepted), f(&q.PerCore), f(q.DTAOfCeiling), f(q.DTAOfCeilingPerCore),
				f(q.BaseOfCeiling), f(q.BaseOfCeilingPerCore), ran[x.Primitive+" "+x.Mode+" "+Baseline], ran[x.Primitive+" "+x.Mode+" "+ReceiveOnly] && q.DTAOfCeiling != nil,
				f(q.DurableOfDTA), f(q.DurableOfDTAPerCore), ran[x.Primitive+" "+x.Mode+" "+DTADurable] && q.DurableOfDTA != nil)
			if q.INTOfNative != nil {
				fmt.Fprintf(tw, "\t\t\t%s\t\t%s\t\t\t\t%s\t\t\t\t%s\n", "INT/native", f(q.INTOfNative), f(q.INTOfNativePerCore), remoteGap(remote))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// The responder's line per primitive and mode, as one run prints it,
	// with medians and ranges.
	for _, x := range c.Rows {
		if x.Collector != DTA || x.Remote == nil {
			continue
		}
		q := x.Remote
		var parts []string
		if q.ResponderWaitCPUPerMillion.Max > 0 {
			parts = append(parts, "waking up "+rangeOf(q.ResponderWaitCPUPerMillion, 1, "%.3f"))
		}
		if q.ResponderSendCPUPerMillion.Max > 0 {
			parts = append(parts, "sending on its TX rings "+rangeOf(q.ResponderSendCPUPerMillion, 1, "%.3f"))
		}
		waking := ""
		if len(parts) > 0 {
			waking = " (of which " + strings.Join(parts, ", ") + ")"
		}
		line := fmt.Sprintf("  %s %s responder: %s CPU s/M rep%s, %s M pkts/CPU s (goal >= %.0f)", x.Primitive, x.Mode,
			rangeOf(q.ResponderCPUPerMillion, 1, "%.3f"), waking, rangeOf(q.ResponderPacketsPerCPUSecond, 1e6, "%.2f"), goalPacketsPerCPUSecond/1e6)
		if r, ok := ratios[x.Primitive+" "+x.Mode]; ok && r.ResponderOfBaseline != nil {
			verdict := "met"
			if r.ResponderOfBaseline.Median > goalOfBaseline {
				verdict = "not met"
			}
			line += fmt.Sprintf("; responder/baseline %s (goal <= %.2fx: %s by the median)", rangeOf(*r.ResponderOfBaseline, 1, "%.2fx"), goalOfBaseline, verdict)
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

func rangeOf(s Stat, unit float64, f string) string {
	return fmt.Sprintf(f+" ("+f+".."+f+")", s.Median/unit, s.Min/unit, s.Max/unit)
}
