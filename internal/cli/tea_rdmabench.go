package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/dta-go/dta/internal/tea/rdmabench"
)

// teaRDMAOptions are the flags of dta tea bench's RDMA figures.
type teaRDMAOptions struct {
	sizes        []int
	scaleServers []int
	modelTo      int
	window       int
	duration     time.Duration
	keys         int
}

func (o *teaRDMAOptions) bind(fl *pflag.FlagSet) {
	lc, sc := rdmabench.DefaultLatencyConfig(), rdmabench.DefaultScaleConfig()
	fl.IntSliceVar(&o.sizes, "sizes", lc.Sizes, "latency: packet sizes parked in the scratchpad, bytes")
	fl.IntSliceVar(&o.scaleServers, "scale-servers", sc.Servers, "scale: numbers of software servers to measure")
	fl.IntVar(&o.modelTo, "model-servers", 8, "scale: model the aggregate up to this many servers")
	fl.IntVar(&o.window, "window", 0, "latency, scale, failover-rdma: lookups in flight (0: each figure's default)")
	fl.IntVar(&o.keys, "rdma-keys", lc.Keys, "latency, scale, failover-rdma: keys in the table (inserted over RDMA)")
	fl.DurationVar(&o.duration, "duration", 0, "latency, scale: measuring time per packet size or server count (0: default 2s)")
}

// Bounds of the RDMA figures' flags.
const (
	teaRDMAMaxKeys     = 1 << 20 // --rdma-keys: a table of up to about 2 GiB with 9000-byte scratchpads
	teaRDMAMaxWindow   = 1 << 20 // --window: the engine keeps 4 × window lookups in flight, at most 2^24
	teaRDMAMaxDuration = time.Hour
	teaRDMAMaxServers  = 64 // --scale-servers, --model-servers
)

// check refuses an RDMA figure's flag out of range, naming it.
func (o *teaRDMAOptions) check() error {
	for _, s := range o.sizes {
		if err := checkInt("sizes", s, 1, 9000); err != nil {
			return err
		}
	}
	for _, n := range o.scaleServers {
		if err := checkInt("scale-servers", n, 1, teaRDMAMaxServers); err != nil {
			return err
		}
	}
	if err := checkInt("model-servers", o.modelTo, 1, teaRDMAMaxServers); err != nil {
		return err
	}
	if err := checkInt("window", o.window, 0, teaRDMAMaxWindow); err != nil {
		return err
	}
	if err := checkInt("rdma-keys", o.keys, 1, teaRDMAMaxKeys); err != nil {
		return err
	}
	if o.duration < 0 || o.duration > teaRDMAMaxDuration {
		return usageError("--duration: %v out of range [0, %v] (0: each figure's default)", o.duration, teaRDMAMaxDuration)
	}
	return nil
}

// teaRDMAReport is the RDMA figures' part of dta tea bench's JSON.
type teaRDMAReport struct {
	Latency      []rdmabench.LatencyRow `json:"latency,omitempty"`
	Scale        *teaScaleReport        `json:"scale,omitempty"`
	FailoverRDMA *teaFailoverRDMAReport `json:"failover_rdma,omitempty"`
}

type teaScaleReport struct {
	Rows   []rdmabench.ScaleRow `json:"measured"`
	Model  []float64            `json:"model_lookups_per_s"`        // servers 1..n: linear in servers from the one-server rate (the paper's)
	Capped []float64            `json:"model_capped_lookups_per_s"` // the same, capped at the highest aggregate measured (this machine's CPUs)
}

type teaFailoverRDMAReport struct {
	Config  rdmabench.FailoverConfig  `json:"config"`
	Rows    []rdmabench.FailoverRow   `json:"rows"`
	Summary rdmabench.FailoverSummary `json:"summary"`
}

// teaLatency runs the latency figure; o is checked.
func teaLatency(w io.Writer, o *teaRDMAOptions, seed uint64, table bool) ([]rdmabench.LatencyRow, error) {
	c := rdmabench.DefaultLatencyConfig()
	c.Keys = o.keys
	c.Sizes, c.Seed = o.sizes, seed
	if o.window > 0 {
		c.Window = o.window
	}
	if o.duration > 0 {
		c.Duration = o.duration
	}
	rows, err := rdmabench.Latency(c)
	if err != nil || !table {
		return rows, err
	}
	fmt.Fprintf(w, "Lookup over software RoCEv2 (Fig. 8): 1 server, %d keys, packet parked by WRITE then one READ; %d lookups one at a time, then %d in flight for %v\n",
		c.Keys, c.Unloaded, c.Window, c.Duration)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "packet B\tREAD B\tlookup p10\tmedian\tp90\tlookups/s\tloaded median\tloaded p90\traw READ p10\tmedian\tp90\tlost\tfailed\t")
	us := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64) + " µs" }
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t\n", r.Size, r.ReadBytes, us(r.Lookup.P10), us(r.Lookup.Median),
			us(r.Lookup.P90), r.LookupsPerS, us(r.Loaded.Median), us(r.Loaded.P90), us(r.RawRead.P10), us(r.RawRead.Median), us(r.RawRead.P90), r.Lost, r.Failed)
	}
	tw.Flush()
	fmt.Fprintln(w)
	return rows, nil
}

// teaScale runs the scale figure; o is checked.
func teaScale(w io.Writer, o *teaRDMAOptions, seed uint64, table bool) (*teaScaleReport, error) {
	c := rdmabench.DefaultScaleConfig()
	c.Keys = o.keys
	c.Servers, c.Seed = o.scaleServers, seed
	if o.window > 0 {
		c.Window = o.window
	}
	if o.duration > 0 {
		c.Duration = o.duration
	}
	rows, err := rdmabench.Scale(c)
	if err != nil {
		return nil, err
	}
	var top float64
	for _, r := range rows {
		top = max(top, r.LookupsPerS)
	}
	rep := &teaScaleReport{Rows: rows, Model: rdmabench.ScaleModel(rows, o.modelTo, 0), Capped: rdmabench.ScaleModel(rows, o.modelTo, top)}
	if !table {
		return rep, nil
	}
	fmt.Fprintf(w, "Aggregate lookups vs servers (Fig. 9b): %d keys in contiguous ranges, uniform, %d in flight, %d B parked, %v each\n",
		c.Keys, c.Window, c.Packet, c.Duration)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "servers\tmeasured lookups/s\tper server\tmodel: linear from 1 server\tcapped at the best measured\t")
	for n := 1; n <= o.modelTo; n++ {
		meas, per := "-", "-"
		for _, r := range rows {
			if r.Servers == n {
				meas = strconv.FormatFloat(r.LookupsPerS, 'f', 0, 64)
				ps := make([]string, len(r.PerServer))
				for i, p := range r.PerServer {
					ps[i] = strconv.FormatFloat(p, 'f', 0, 64)
				}
				per = strings.Join(ps, " ")
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.0f\t%.0f\t\n", n, meas, per, rep.Model[n-1], rep.Capped[n-1])
	}
	tw.Flush()
	fmt.Fprintln(w)
	return rep, nil
}

func teaFailoverRDMA(w io.Writer, o *teaRDMAOptions, seed uint64, table bool) (*teaFailoverRDMAReport, error) {
	c := rdmabench.DefaultFailoverConfig()
	c.Keys = o.keys
	c.Seed = seed
	if o.window > 0 {
		c.Window = o.window
	}
	rows, sum, err := rdmabench.Failover(c)
	if err != nil {
		return nil, err
	}
	rep := &teaFailoverRDMAReport{Config: c, Rows: rows, Summary: sum}
	if !table {
		return rep, nil
	}
	fmt.Fprintf(w, "Fail-over over software RoCEv2 (Fig. 10): 2 servers, 2 copies, %d in flight; server 0's responder closed at %v; read timeout %v, hold-down %v\n",
		c.Window, c.Kill, c.Timeout, c.Holddown)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "from\tlookups/s\tserver 0\tserver 1\tretried\tfailed\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%v\t%.0f\t%d\t%d\t%d\t%d\t\n", r.Start, r.LookupsPerS, r.Served[0], r.Served[1], r.Retried, r.Failed)
	}
	tw.Flush()
	fmt.Fprintf(w, "issued %d, answered %d, failed %d, retried %d; server 0: %d read timeouts, %d read errors (queue pair flushed); %d late reads\n\n",
		sum.Issued, sum.Answered, sum.Failed, sum.Retried, sum.Timeouts, sum.Errors, sum.LostReads)
	return rep, nil
}
