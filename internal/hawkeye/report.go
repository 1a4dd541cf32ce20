package hawkeye

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/dta-go/dta/internal/hawkeye/netsim"
)

// WriteTables prints the result as the paper's figures: Fig. 7 (HAWKEYE's
// precision/recall per anomaly over epochs and thresholds), Fig. 8 (each
// polling method at its best setting), Fig. 10 (telemetry granularity on
// mixed anomalies), Figs. 9 and 11 (what each method collects).
func (r *EvalResult) WriteTables(w io.Writer, settings []Setting) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	epochs, thresholds := axes(settings)
	kinds := r.kinds()
	title := func(s string) {
		tw.Flush()
		fmt.Fprintln(w, s)
	}
	title("Fig. 7: HAWKEYE precision/recall % per anomaly (rows: threshold, % of base RTT; columns: epoch)")
	for _, k := range kinds {
		fmt.Fprintf(tw, "%s\t", k)
		for _, e := range epochs {
			fmt.Fprintf(tw, "%v\t", time.Duration(1)<<e)
		}
		fmt.Fprintln(tw)
		for _, t := range thresholds {
			fmt.Fprintf(tw, "%.0f%%\t", t)
			for _, e := range epochs {
				fmt.Fprintf(tw, "%s\t", r.row(k, MethodHawkeye, Setting{e, t}).PR())
			}
			fmt.Fprintln(tw)
		}
	}
	title("\nFig. 8: precision/recall % at each method's best setting (epoch, threshold)")
	fmt.Fprintf(tw, "\tHAWKEYE\tfull polling\tvictim-only\t\n")
	for _, k := range kinds {
		fmt.Fprintf(tw, "%s\t", k)
		for _, m := range []Method{MethodHawkeye, MethodFull, MethodVictimOnly} {
			if b, ok := r.Best(k, m); ok {
				fmt.Fprintf(tw, "%s (%s, %.0f%%)\t", b.PR(), b.Epoch, b.Thresh)
			} else {
				fmt.Fprintf(tw, "–\t")
			}
		}
		fmt.Fprintln(tw)
	}
	title("\nFig. 10: all anomalies mixed, precision/recall % at each telemetry's best setting")
	fmt.Fprintf(tw, "\tHAWKEYE\tport-only\tflow-only\t\n")
	fmt.Fprintf(tw, "all kinds\t")
	for _, m := range []Method{MethodHawkeye, MethodPortOnly, MethodFlowOnly} {
		var best Row
		for _, st := range settings {
			if x := r.Mixed(m, st); x.TP > best.TP || x.TP == best.TP && x.Prec > best.Prec || best.Traces == 0 {
				best = x
			}
		}
		fmt.Fprintf(tw, "%s (%s, %.0f%%)\t", best.PR(), best.Epoch, best.Thresh)
	}
	fmt.Fprintln(tw)
	title("\nFigs. 9, 11: collected per diagnosis, at HAWKEYE's best setting for the anomaly")
	fmt.Fprintf(tw, "\tsetting\tswitches\tbytes\tcausal switches covered\tpolling packets\t\n")
	for _, k := range kinds {
		best, ok := r.Best(k, MethodHawkeye)
		if !ok {
			continue
		}
		st := Setting{EpochBits: best.Bits, Threshold: best.Thresh}
		for _, m := range []Method{MethodFull, MethodHawkeye, MethodVictimOnly} {
			x := r.row(k, m, st)
			if x.TP+x.FP == 0 {
				continue
			}
			fmt.Fprintf(tw, "%s %s\t%s, %.0f%%\t%.1f\t%.0f\t%.0f%%\t%.1f\t\n", k, m, x.Epoch, x.Thresh, x.Switch, x.Bytes, 100*x.Cover, x.Packets)
		}
	}
	title("")
	for _, k := range netsim.Kinds {
		if n := r.Unformed[k]; n > 0 {
			fmt.Fprintf(w, "%s: %d of %d traces left out: the loop did not close after the injection (no deadlock, or one closed by background traffic before it)\n", k, n, r.Traces/len(r.kinds()))
		}
		early, polls := 0, 0
		for _, x := range r.Rows {
			if x.Kind == k && x.Method == MethodHawkeye {
				early += x.Early
				polls += x.Early + x.Traces
			}
		}
		if early > 0 {
			fmt.Fprintf(w, "%s: %d of %d (trace, setting) pairs left out: the agent fired before the anomaly took hold (a loop not closed yet; a flow off the contended port, or paused by PFC the contention did not send)\n", k, early, polls)
		}
	}
	_, err := fmt.Fprintf(w, "%d traces, %d polls diagnosed, %d report bytes through DTA; simulator %.1f M events/s; %v\n",
		r.Traces, r.Polls, r.ReportBytes, r.EventsPerSec/1e6, r.Wall.Round(time.Millisecond))
	return err
}

func (r *EvalResult) kinds() []netsim.Kind {
	var ks []netsim.Kind
	seen := map[netsim.Kind]bool{}
	for _, x := range r.Rows {
		if !seen[x.Kind] {
			seen[x.Kind] = true
			ks = append(ks, x.Kind)
		}
	}
	return ks
}

func (r *EvalResult) row(k netsim.Kind, m Method, st Setting) Row {
	for _, x := range r.Rows {
		if x.Kind == k && x.Method == m && x.Bits == st.EpochBits && x.Thresh == st.Threshold {
			return x
		}
	}
	return Row{}
}

func axes(settings []Setting) ([]uint, []float64) {
	var es []uint
	var ts []float64
	seenE, seenT := map[uint]bool{}, map[float64]bool{}
	for _, s := range settings {
		if !seenE[s.EpochBits] {
			seenE[s.EpochBits] = true
			es = append(es, s.EpochBits)
		}
		if !seenT[s.Threshold] {
			seenT[s.Threshold] = true
			ts = append(ts, s.Threshold)
		}
	}
	return es, ts
}

// Names returns a function naming switches of topo by their simulator
// names ("e2.0"), for printing diagnoses.
func Names(topo *netsim.Topology) func(uint16) string {
	return func(sw uint16) string {
		if int(sw) < topo.Nodes() {
			return topo.Name(netsim.NodeID(sw))
		}
		return fmt.Sprintf("s%d", sw)
	}
}

// PortName formats a port as "e2.0.p1" with names.
func PortName(names func(uint16) string, sw uint16, port uint8) string {
	return fmt.Sprintf("%s.p%d", names(sw), port)
}
