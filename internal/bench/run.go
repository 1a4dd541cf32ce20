package bench

import (
	"context"
	"fmt"
	"math/bits"
	"net/netip"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/dta-go/dta/internal/bench/baseline"
	"github.com/dta-go/dta/internal/ingest"
	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/translator"
	"github.com/dta-go/dta/internal/transport/udp"
	"github.com/dta-go/dta/wire/dta"
)

// Collector names in results.
const (
	DTA = "dta"
	// DTADurable is DTA with durable stores: checkpoints written into
	// Config.DataDir every Config.CheckpointInterval while it runs.
	DTADurable = "dta+durable"
	Baseline   = "baseline"
	// ReceiveOnly is the run's ingest ceiling: the same sockets and reads
	// (recvmmsg or one read per datagram) as the two collectors, and nothing
	// done with the datagrams but counting them.
	ReceiveOnly = "receive-only"
)

// Result is one run: one primitive, one mode, one collector. Rates, CPU and
// allocations are over the measured window; drops and memory ops and bytes
// per report over the whole run (warm-up, window and drain).
type Result struct {
	Primitive   string  `json:"primitive"`
	Mode        string  `json:"mode"`
	Collector   string  `json:"collector"`
	Sink        string  `json:"sink,omitempty"`
	PerDatagram int     `json:"reports_per_datagram"`
	Seconds     float64 `json:"seconds"`

	Offered  float64 `json:"offered_per_s"`  // reports sent per second
	Accepted float64 `json:"accepted_per_s"` // reports stored per second

	Sent        uint64 `json:"sent_reports"`
	Stored      uint64 `json:"accepted_reports"`
	KernelDrops uint64 `json:"kernel_drop_reports"` // in datagrams the kernel dropped (receive buffer full)
	AppDrops    uint64 `json:"app_drop_reports"`    // refused by the collector
	Unaccounted int64  `json:"unaccounted_reports"` // sent - stored - drops: in flight at the end, or lost elsewhere

	CPUSeconds       float64 `json:"cpu_seconds"`        // the collector's: process minus sender threads
	SenderCPUSeconds float64 `json:"sender_cpu_seconds"` // the sender threads'
	CPUPerMillion    float64 `json:"cpu_s_per_million_reports"`
	PerCore          float64 `json:"reports_per_cpu_second"`

	OpsPerReport    float64 `json:"mem_ops_per_report,omitempty"` // DTA: memory ops applied per report, whole run (Fig. 8)
	BytesPerReport  float64 `json:"mem_bytes_per_report,omitempty"`
	AllocsPerReport float64 `json:"allocs_per_report"`
	GCs             uint64  `json:"gc_cycles"`

	DatagramsPerRead float64 `json:"datagrams_per_read"`
	RSS              uint64  `json:"rss_bytes"`
	RegionBytes      uint64  `json:"region_bytes"`               // store regions mapped in this process (pre-faulted); 0 when the sink keeps its own copy (Config.SinkOwnsStores)
	Checkpoints      uint64  `json:"checkpoints,omitempty"`      // DTADurable: checkpoints written in the run
	CheckpointBytes  uint64  `json:"checkpoint_bytes,omitempty"` // bytes they wrote
	CheckpointLastS  float64 `json:"checkpoint_last_seconds,omitempty"`
	Backing          string  `json:"region_backing"`    // pages the regions got: 4k, thp or hugetlb
	PoolBytes        uint64  `json:"sender_pool_bytes"` // the senders' datagram pool
	RSSBeyond        int64   `json:"rss_beyond_regions_bytes"`

	// Remote is set for DTA runs over a remote sink (Config.NewSink).
	Remote *RemoteResult `json:"remote,omitempty"`
}

// RemoteResult is what a DTA run over a remote sink (NewRoCESink) measures
// besides the figures of a local run. The responder stands in for the
// collector's RDMA NIC and the translator for the switch: Result.CPUSeconds
// (the process minus the senders, plus the responder's process when it has
// one: RoCEProcessSink) is split between them. Over such a sink a
// report counts as accepted once the responder has executed its ops:
// Result.Stored and Accepted are the reports the translator passed on, in the
// proportion of the ops sent that the responder executed. Rates and CPU are
// over the window; RDMA ops and packets per report and the totals over the
// whole run, drained (exact: no report is half way at either end).
type RemoteResult struct {
	// ResponderProcess says where the responder ran: in a process of its
	// own, whose whole CPU time is ResponderCPUSeconds, or (false) on a
	// thread of this process, whose CPU time alone is.
	ResponderProcess        bool    `json:"responder_process"`
	ResponderCPUSeconds     float64 `json:"responder_cpu_seconds"`  // the responder's process or receive thread
	TranslatorCPUSeconds    float64 `json:"translator_cpu_seconds"` // cpu_seconds minus the responder's
	ResponderCPUPerMillion  float64 `json:"responder_cpu_s_per_million_reports"`
	TranslatorCPUPerMillion float64 `json:"translator_cpu_s_per_million_reports"`
	ResponderOpsPerSec      float64 `json:"responder_ops_per_s"`     // ops the responder executed per second
	OpsPerReport            float64 `json:"rdma_ops_per_report"`     // ops the requester sent per report accepted, whole run
	PacketsPerReport        float64 `json:"rdma_packets_per_report"` // request packets sent (first transmissions) per report accepted, whole run
	// ResponderPacketsPerCPUSecond is the request packets sent in the window
	// (first transmissions) per second of the responder's CPU: what the
	// responder takes in per CPU second.
	ResponderPacketsPerCPUSecond float64 `json:"responder_packets_per_cpu_s"`
	// ResponderPacketsPerRead is the packets the responder took in per
	// receive call that returned some, in the window: low when it waits for
	// the translator and each wake-up finds a few.
	ResponderPacketsPerRead float64 `json:"responder_packets_per_read"`
	// ResponderWaitsPerMillion is the times a thread of a responder process
	// waited and was woken (voluntary context switches: the read loops'
	// pauses and polls, the Go runtime's own) per million reports accepted,
	// in the window; ResponderPacketsPerWait the request packets per such
	// wake-up. ResponderWaitCost is what one timed wait cost that process
	// (µs of CPU, measured as it started) and ResponderWaitCPUPerMillion
	// their product: an estimate of the CPU s per million reports the
	// responder spent going to sleep and waking up, the part of its CPU that
	// the machine's timer sets rather than the requests (0 for a responder
	// thread or where unknown).
	ResponderWaitsPerMillion   float64 `json:"responder_waits_per_million_reports,omitempty"`
	ResponderPacketsPerWait    float64 `json:"responder_packets_per_wait,omitempty"`
	ResponderWaitCost          float64 `json:"responder_wait_cpu_us,omitempty"`
	ResponderWaitCPUPerMillion float64 `json:"responder_wait_cpu_s_per_million_reports,omitempty"`
	// ResponderSendCPUPerMillion is the CPU time the responder's threads
	// spent in the kicks of its AF_XDP TX rings (sendto: the kernel sending
	// its responses) per million reports accepted, in the window (0 when
	// its responses take the UDP socket). Over a veth a
	// kick also runs the requester's receive of those responses, in
	// softirq on the responder's CPU: work a host across a wire would do
	// on its own CPU.
	ResponderSendCPUPerMillion float64 `json:"responder_send_cpu_s_per_million_reports,omitempty"`
	// ResponderRSS is the resident memory of a responder process at the
	// window's end, its copy of the stores included (0 for a thread: its
	// memory is this process's).
	ResponderRSS uint64 `json:"responder_rss_bytes,omitempty"`
	// SoftirqCPUPerMillion is the machine's softirq time in the window
	// (/proc/stat, every CPU, 10 ms ticks) per million reports accepted.
	// Softirq work runs in whichever process a CPU is in, and is charged
	// to it: over a veth, the kernel's receive path of one side's packets
	// mostly runs in the other's send call, so each side's CPU includes up
	// to this much of work done for the other.
	SoftirqCPUPerMillion float64 `json:"machine_softirq_cpu_s_per_million_reports"`
	// XDPPackets is the request packets the responder took through AF_XDP
	// in the whole run (--responder-path xdp or xdp-rx), 0 otherwise.
	XDPPackets uint64 `json:"responder_xdp_packets,omitempty"`
	// XDPTXFrames is the responses the responder sent on its AF_XDP TX
	// rings in the whole run (--responder-path xdp), 0 otherwise.
	XDPTXFrames uint64 `json:"responder_xdp_tx_frames,omitempty"`

	OpsSent     uint64 `json:"rdma_ops_sent"`
	OpsApplied  uint64 `json:"rdma_ops_applied"`        // executed by the responder, after the drain
	OpsLost     uint64 `json:"rdma_ops_lost"`           // lost with a connection, or refused by the responder
	Retransmits uint64 `json:"rdma_retransmit_packets"` // go-back-N resends
}

// Ratio compares DTA with the baseline, and both with the receive-only
// collector (the run's ingest ceiling), for one primitive and mode. A ratio
// whose collector did not run is 0.
type Ratio struct {
	Primitive string  `json:"primitive"`
	Mode      string  `json:"mode"`
	Accepted  float64 `json:"accepted"`       // DTA accepted rate / baseline's
	PerCore   float64 `json:"per_cpu_second"` // DTA reports per CPU second / baseline's

	// Fractions of the ceiling: accepted rate and reports per CPU second of
	// DTA and of the baseline / the receive-only collector's.
	DTAOfCeiling         float64 `json:"dta_of_ceiling_accepted,omitempty"`
	DTAOfCeilingPerCore  float64 `json:"dta_of_ceiling_per_cpu_second,omitempty"`
	BaseOfCeiling        float64 `json:"baseline_of_ceiling_accepted,omitempty"`
	BaseOfCeilingPerCore float64 `json:"baseline_of_ceiling_per_cpu_second,omitempty"`

	// Durable stores: DTADurable's accepted rate and reports per CPU second
	// / DTA's, in the same run.
	DurableOfDTA        float64 `json:"durable_of_dta_accepted,omitempty"`
	DurableOfDTAPerCore float64 `json:"durable_of_dta_per_cpu_second,omitempty"`

	// INT input: INT-MD reports / the native path reports they carry, in
	// the same run (Config.INT).
	INTOfNative        float64 `json:"int_of_native_accepted,omitempty"`
	INTOfNativePerCore float64 `json:"int_of_native_per_cpu_second,omitempty"`

	// ResponderOfBaseline is, over a remote sink, the responder's CPU per
	// report (what an RDMA NIC takes to zero) / the baseline collector's
	// CPU per report, in the same run.
	ResponderOfBaseline float64 `json:"responder_cpu_of_baseline_cpu,omitempty"`
}

// Report is a whole benchmark.
type Report struct {
	Machine Machine  `json:"machine"`
	Config  Summary  `json:"config"`
	Results []Result `json:"results"`
	Ratios  []Ratio  `json:"ratios"`
}

// Summary is the part of a Config that shapes the figures.
type Summary struct {
	DurationS  float64 `json:"duration_s"`
	WarmupS    float64 `json:"warmup_s"`
	Senders    int     `json:"senders"`
	Readers    int     `json:"readers"`
	Rate       float64 `json:"rate"`
	Keys       int     `json:"keys"`
	Memory     uint64  `json:"store_bytes"`
	Hash       string  `json:"hash"`
	HugePages  string  `json:"hugepages"`
	Prefault   bool    `json:"prefault"`
	RecvBuffer int     `json:"recv_buffer"`
}

// Run runs the benchmark cfg describes. Interrupted (ctx done), it returns
// the runs finished so far and ctx's error.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rep := &Report{Machine: ThisMachine(), Config: Summary{
		DurationS: cfg.Duration.Seconds(), WarmupS: cfg.Warmup.Seconds(), Senders: cfg.Senders, Readers: cfg.Readers,
		Rate: cfg.Rate, Keys: cfg.Keys, Memory: cfg.Memory, Hash: cfg.Hash.String(),
		HugePages: cfg.Region.HugePages.String(), Prefault: cfg.Region.Prefault, RecvBuffer: cfg.RecvBuffer,
	}}
	collectors := 1
	for _, on := range []bool{cfg.Baseline, cfg.Ceiling, cfg.DataDir != ""} {
		if on {
			collectors++
		}
	}
	total := len(cfg.Primitives) * len(cfg.Modes) * collectors
	if cfg.INT {
		for _, m := range cfg.Modes {
			if m.PerDatagram == 1 {
				total += 2
			}
		}
	}
	b := &bench{cfg: cfg, total: total}
	for _, p := range cfg.Primitives {
		if err := b.primitive(ctx, p, rep); err != nil {
			return rep, err
		}
	}
	if cfg.INT {
		if err := b.intRuns(ctx, rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// bench is one Run in progress.
type bench struct {
	cfg   Config
	total int
	done  int
}

// storesHere reports whether the runs write the run's catalogue in this
// process: not when the sink keeps its own copy (Config.SinkOwnsStores) and
// no durable run writes to it.
func (b *bench) storesHere() bool {
	return !b.cfg.SinkOwnsStores || b.cfg.NewSink == nil || b.cfg.DataDir != ""
}

// primitive runs every mode of primitive p over one store.
func (b *bench) primitive(ctx context.Context, p dta.Primitive, rep *Report) error {
	mem := b.cfg.Memory
	if p == dta.Append {
		// A ring of 2^22 entries per list is plenty; the baseline's logs
		// take as much of the Go heap.
		mem = min(mem, 256<<20)
	}
	d, err := Descriptor(p, mem, b.cfg.Hash)
	if err != nil {
		return err
	}
	rc := b.cfg.Region
	if !b.storesHere() {
		rc.Prefault = false // never written: no page of it becomes resident
	}
	cat, err := store.Open([]store.Descriptor{d}, rc, nil)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	defer cat.Close()
	for _, m := range b.cfg.Modes {
		per := m.PerDatagram
		if max := MaxPerDatagram(p); per == 0 || per > max {
			per = max
		}
		w, err := NewWorkload(p, per, b.cfg.Keys, b.cfg.Pool)
		if err != nil {
			return err
		}
		var runs [4]*Result // DTA, baseline, receive-only, DTA with durable stores
		for i, name := range []string{DTA, Baseline, ReceiveOnly, DTADurable} {
			if name == Baseline && !b.cfg.Baseline || name == ReceiveOnly && !b.cfg.Ceiling || name == DTADurable && b.cfg.DataDir == "" {
				continue
			}
			r, err := b.run(ctx, name, m, w, cat)
			if r != nil {
				rep.Results = append(rep.Results, *r)
				runs[i] = r
			}
			if err != nil {
				return err
			}
		}
		if q, ok := ratios(p, m, runs); ok {
			rep.Ratios = append(rep.Ratios, q)
		}
	}
	return nil
}

// ratios compares the runs of one primitive and mode (DTA, baseline,
// receive-only; nil where not run): ok is false when DTA has nothing to be
// compared with.
func ratios(p dta.Primitive, m Mode, runs [4]*Result) (q Ratio, ok bool) {
	d, base, ceil, dur := runs[0], runs[1], runs[2], runs[3]
	if d == nil || base == nil && ceil == nil && dur == nil {
		return Ratio{}, false
	}
	q = Ratio{Primitive: p.String(), Mode: m.String()}
	if dur != nil {
		q.DurableOfDTA, q.DurableOfDTAPerCore = ratio(dur.Accepted, d.Accepted), ratio(dur.PerCore, d.PerCore)
	}
	if base != nil {
		q.Accepted, q.PerCore = ratio(d.Accepted, base.Accepted), ratio(d.PerCore, base.PerCore)
		if d.Remote != nil {
			q.ResponderOfBaseline = ratio(d.Remote.ResponderCPUPerMillion, base.CPUPerMillion)
		}
	}
	if ceil != nil {
		q.DTAOfCeiling, q.DTAOfCeilingPerCore = ratio(d.Accepted, ceil.Accepted), ratio(d.PerCore, ceil.PerCore)
		if base != nil {
			q.BaseOfCeiling, q.BaseOfCeilingPerCore = ratio(base.Accepted, ceil.Accepted), ratio(base.PerCore, ceil.PerCore)
		}
	}
	return q, true
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// collector is what a run needs of DTA's ingest or the baseline.
type collector interface {
	addr() netip.AddrPort
	run(ctx context.Context) error
	close()
	listener() *udp.Listener
	// counts returns the reports taken (DTA: the translator passed them to
	// its sink) and dropped; readCounters makes the accepted count of them.
	counts() (taken, dropped uint64)
	ops() (ops, bytes uint64) // memory ops applied by the local sink (DTA)
	// sinkStats returns the counters of a remote sink, if there is one.
	sinkStats() (SinkStats, bool)
	// drainSink waits until a remote sink has applied every op it took.
	drainSink() error
	// release frees what close leaves for after run has returned (a remote
	// sink: run writes out what the translator still holds through it).
	release() error
}

func (b *bench) udpConfig(m Mode) udp.Config {
	c := udp.DefaultConfig()
	c.Addr, c.Readers, c.Batched, c.RecvBuffer = "127.0.0.1:0", b.cfg.Readers, m.Recvmmsg, b.cfg.RecvBuffer
	return c
}

func (b *bench) newCollector(name string, m Mode, cat *store.Catalog, per int) (collector, error) {
	if name == ReceiveOnly {
		return newReceiveOnly(b.udpConfig(m), per)
	}
	if name == Baseline {
		st := cat.Stores()[0]
		capacity := 1 << 16
		if st.Append != nil {
			capacity = int(st.Append.Spec().Capacity)
		}
		var keys [dta.NumPrimitives]int
		keys[st.Primitive] = b.cfg.Keys
		c, err := baseline.New(baseline.Config{UDP: b.udpConfig(m), Keys: keys, Lists: AppendLists, Capacity: capacity, EntrySize: 4}, nil)
		if err != nil {
			return nil, err
		}
		return baselineCollector{c}, nil
	}
	if name == DTADurable {
		return b.newDurableCollector(m, cat)
	}
	if name == INTInput {
		return newINTCollector(b.udpConfig(m), cat)
	}
	var sink memop.Sink = cat
	var remote Sink
	if b.cfg.NewSink != nil {
		var err error
		if remote, err = b.cfg.NewSink(cat); err != nil {
			return nil, fmt.Errorf("bench: %s sink: %w", b.cfg.SinkName, err)
		}
		sink = remote
	}
	c, err := newDTACollector(b.udpConfig(m), cat, sink)
	if err != nil {
		if remote != nil {
			remote.Close()
		}
		return nil, err
	}
	c.sink = remote
	return c, nil
}

// newDTACollector builds the translator over cat's stores, writing to sink,
// behind its UDP ingest.
func newDTACollector(uc udp.Config, cat *store.Catalog, sink memop.Sink) (*dtaCollector, error) {
	tr, err := translator.New(translator.DefaultConfig(), cat.Descriptors(), sink, nil)
	if err != nil {
		return nil, err
	}
	for _, s := range cat.Stores() {
		if s.Append != nil {
			for l := range s.Append.Spec().Lists {
				if h, err := s.Append.Head(l); err == nil {
					tr.ResumeAppend(int(s.Index), l, h)
				}
			}
		}
	}
	in, err := ingest.New(ingest.Config{UDP: uc, AckPort: 0, Tick: time.Millisecond}, tr, nil)
	if err != nil {
		return nil, err
	}
	return &dtaCollector{in: in, tr: tr, cat: cat}, nil
}

type dtaCollector struct {
	in   *ingest.Ingest
	tr   *translator.Translator
	cat  *store.Catalog
	sink Sink // remote sink, nil for the local one (cat)
}

func (c *dtaCollector) addr() netip.AddrPort          { return c.in.LocalAddr() }
func (c *dtaCollector) run(ctx context.Context) error { return c.in.Run(ctx) }
func (c *dtaCollector) listener() *udp.Listener       { return c.in.Listener() }
func (c *dtaCollector) close()                        { c.in.Close() }
func (c *dtaCollector) release() error {
	if c.sink == nil {
		return nil
	}
	return c.sink.Close()
}

func (c *dtaCollector) counts() (uint64, uint64) {
	st := c.tr.Stats()
	var n uint64
	for _, r := range st.Reports {
		n += r
	}
	return n, st.Dropped()
}

// scale returns n * a / of, with a capped at of (0 if of is 0), exactly.
func scale(n, a, of uint64) uint64 {
	if of == 0 {
		return 0
	}
	hi, lo := bits.Mul64(n, min(a, of))
	q, _ := bits.Div64(hi, lo, of) // hi < of: n*a < 2^64*of
	return q
}

func (c *dtaCollector) ops() (uint64, uint64) {
	st := c.cat.Stats()
	return st.Ops.Load(), st.Bytes.Load()
}

func (c *dtaCollector) sinkStats() (SinkStats, bool) {
	if c.sink == nil {
		return SinkStats{}, false
	}
	return c.sink.Stats(), true
}

// sinkDrainTimeout bounds the wait for a remote sink's last acknowledgements.
const sinkDrainTimeout = 10 * time.Second

func (c *dtaCollector) drainSink() error {
	if c.sink == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), sinkDrainTimeout)
	defer cancel()
	return c.sink.Drain(ctx)
}

type baselineCollector struct{ c *baseline.Collector }

func (c baselineCollector) addr() netip.AddrPort          { return c.c.LocalAddr() }
func (c baselineCollector) run(ctx context.Context) error { return c.c.Run(ctx) }
func (c baselineCollector) close()                        { c.c.Close() }
func (c baselineCollector) listener() *udp.Listener       { return c.c.Listener() }
func (c baselineCollector) ops() (uint64, uint64)         { return 0, 0 }
func (c baselineCollector) sinkStats() (SinkStats, bool)  { return SinkStats{}, false }
func (c baselineCollector) drainSink() error              { return nil }
func (c baselineCollector) release() error                { return nil }
func (c baselineCollector) counts() (uint64, uint64) {
	st := c.c.Stats()
	var n uint64
	for _, r := range st.Reports {
		n += r
	}
	return n, st.Dropped()
}

// counters is what a collector has done so far.
type counters struct {
	stored, dropped uint64    // reports accepted and dropped
	ops, bytes      uint64    // memory ops applied to the stores, and their bytes (DTA)
	sink            SinkStats // a remote sink's counters
	remote          bool      // there is a remote sink
}

// readCounters reads c's counters. Over a remote sink a report is accepted
// once its ops have been executed: the reports the translator passed on count
// in the proportion of the ops sent that the remote side executed (read after
// the reports, and the two from one reading of the sink, so that the
// proportion errs low, by at most the ops of one sink call). Drained, the
// proportion is 1 unless ops were lost.
func readCounters(c collector) counters {
	var k counters
	k.stored, k.dropped = c.counts()
	if k.sink, k.remote = c.sinkStats(); k.remote {
		k.stored = scale(k.stored, k.sink.Applied, k.sink.Ops)
		k.ops, k.bytes = k.sink.Applied, k.sink.AppliedBytes
	} else {
		k.ops, k.bytes = c.ops()
	}
	return k
}

// snapshot is the counters at one instant.
type snapshot struct {
	at            time.Time
	sent          uint64 // reports
	proc, senders time.Duration
	softirq       time.Duration // the machine's (softirqTime)
	counters
	rt runtimeStats
}

func (b *bench) snap(c collector, senders []*sender, per int) snapshot {
	s := snapshot{at: time.Now(), proc: processCPU(), softirq: softirqTime(), rt: sampleRuntime()}
	for _, sd := range senders {
		s.sent += sd.sent.Load() * uint64(per)
		s.senders += threadCPU(int(sd.tid.Load()))
	}
	s.counters = readCounters(c)
	return s
}

// run measures one collector in one mode.
func (b *bench) run(ctx context.Context, name string, m Mode, w *Workload, cat *store.Catalog) (*Result, error) {
	b.done++
	runtime.GC()
	debug.FreeOSMemory()
	c, err := b.newCollector(name, m, cat, w.PerDgram)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- c.run(runCtx) }()
	stopCollector := func() error {
		c.close()
		cancel()
		return <-runErr
	}

	per := w.PerDgram
	rate := 0.0
	if b.cfg.Rate > 0 {
		rate = b.cfg.Rate / float64(b.cfg.Senders) / float64(per)
	}
	senders := make([]*sender, 0, b.cfg.Senders)
	dones := make([]chan struct{}, 0, b.cfg.Senders)
	stopSenders := func() {
		for _, s := range senders {
			s.stop.Store(true)
		}
		for _, d := range dones {
			<-d
		}
		for _, s := range senders {
			s.close()
		}
	}
	for i := range b.cfg.Senders {
		s, err := newSender(w, c.addr(), rate, i*w.Datagrams()/b.cfg.Senders)
		if err != nil {
			stopSenders()
			stopCollector()
			c.release()
			return nil, fmt.Errorf("bench: sender: %w", err)
		}
		senders = append(senders, s)
		done := make(chan struct{})
		dones = append(dones, done)
		go s.run(done)
	}

	label := fmt.Sprintf("[%d/%d] %-12s %-16s %-8s", b.done, b.total, w.Primitive, m, name)
	interrupted := sleep(ctx, b.cfg.Warmup)
	s0 := b.snap(c, senders, per)
	last := s0
	for !interrupted && time.Since(s0.at) < b.cfg.Duration {
		step := min(time.Second, b.cfg.Duration-time.Since(s0.at))
		interrupted = sleep(ctx, step)
		now := b.snap(c, senders, per)
		b.progress(label, now, last, s0)
		last = now
	}
	s1 := last
	if s1.at == s0.at {
		s1 = b.snap(c, senders, per)
	}
	res := &Result{
		Primitive: w.Primitive.String(), Mode: m.String(), Collector: name, PerDatagram: per,
		RSS: rss(), PoolBytes: uint64(w.Bytes()),
	}
	if name == DTA {
		res.Sink = b.cfg.SinkName
	}
	if dc, ok := c.(*durableCollector); ok {
		defer dc.result(res)
	}
	for _, s := range cat.Stores() {
		if b.storesHere() {
			res.RegionBytes += s.Region.Size()
		}
		res.Backing = s.Region.Backing()
	}
	res.RSSBeyond = int64(res.RSS) - int64(res.RegionBytes) - int64(res.PoolBytes)

	stopSenders()
	drain(c)
	lst := c.listener()
	kernel := lst.KernelDrops() // from the socket, while it is open
	ls := lst.Stats()
	res.DatagramsPerRead = float64(ls.Datagrams.Load()) / float64(max(ls.Batches.Load(), 1))
	// The collector stops reading (datagrams left in its socket buffers are
	// unaccounted) and writes out what it still holds; then a remote sink is
	// drained, so that the reports counted have had their ops executed.
	err = stopCollector()
	sinkErr := c.drainSink()
	final := readCounters(c)
	stored, dropped := final.stored, final.dropped
	if rerr := c.release(); rerr != nil && sinkErr == nil {
		sinkErr = rerr
	}
	if err == nil && sinkErr != nil {
		err = fmt.Errorf("%s sink: %w", b.cfg.SinkName, sinkErr)
	}
	if b.cfg.Progress != nil {
		fmt.Fprintln(b.cfg.Progress)
	}

	res.Seconds = s1.at.Sub(s0.at).Seconds()
	stWin := s1.stored - s0.stored
	if res.Seconds > 0 {
		res.Offered = float64(s1.sent-s0.sent) / res.Seconds
		res.Accepted = float64(stWin) / res.Seconds
	}
	for _, s := range senders {
		res.Sent += s.sent.Load() * uint64(per)
	}
	res.Stored, res.AppDrops, res.KernelDrops = stored, dropped, kernel*uint64(per)
	res.Unaccounted = int64(res.Sent) - int64(stored+dropped+res.KernelDrops)
	sendCPU := s1.senders - s0.senders
	cpu := collectorCPU(s1.proc-s0.proc, sendCPU, s1.sink.RemoteCPU-s0.sink.RemoteCPU, s1.sink.RemoteProcess)
	res.CPUSeconds, res.SenderCPUSeconds = cpu.Seconds(), sendCPU.Seconds()
	if stWin > 0 {
		res.CPUPerMillion = cpu.Seconds() / float64(stWin) * 1e6
		res.AllocsPerReport = float64(s1.rt.allocs-s0.rt.allocs) / float64(stWin)
	}
	// Ops and bytes per report are a property of the layout, not a rate:
	// over the whole run, drained, the two counters agree (in the window they
	// are read one after the other while the last batches are applied, and a
	// loaded machine skews the ratio by the batches in between).
	if stored > 0 && (name == DTA || name == DTADurable || name == INTNative || name == INTInput) {
		res.OpsPerReport = float64(final.ops) / float64(stored)
		res.BytesPerReport = float64(final.bytes) / float64(stored)
	}
	if cpu > 0 {
		res.PerCore = float64(stWin) / cpu.Seconds()
	}
	if final.remote {
		res.Remote = remoteResult(s0, s1, final.sink, cpu, stWin, stored, res.Seconds)
	}
	res.GCs = s1.rt.gcs - s0.rt.gcs
	if interrupted {
		return res, ctx.Err()
	}
	if err != nil {
		return res, fmt.Errorf("bench: %s collector: %w", name, err)
	}
	return res, nil
}

// collectorCPU is the CPU time of the collector measured over a window in
// which this process used proc and its sender threads senders: the process
// minus the senders, plus remote, the CPU time of a remote sink's other side,
// when that side is a process of its own (remoteProcess; otherwise remote is
// already part of proc).
func collectorCPU(proc, senders, remote time.Duration, remoteProcess bool) time.Duration {
	cpu := proc - senders
	if remoteProcess {
		cpu += remote
	}
	return cpu
}

// remoteResult computes the figures of a run over a remote sink: the split of
// cpu (the process minus the senders) over the window [s0, s1], in which stWin
// reports were accepted, and the sink's totals final, when stored reports
// were accepted in the whole run.
func remoteResult(s0, s1 snapshot, final SinkStats, cpu time.Duration, stWin, stored uint64, seconds float64) *RemoteResult {
	d0, d1 := s0.sink, s1.sink
	resp := d1.RemoteCPU - d0.RemoteCPU
	r := &RemoteResult{
		ResponderProcess: final.RemoteProcess, ResponderRSS: d1.RemoteRSS, XDPPackets: final.RemoteXDPPackets, XDPTXFrames: final.RemoteXDPTXFrames,
		ResponderCPUSeconds: resp.Seconds(), TranslatorCPUSeconds: (cpu - resp).Seconds(),
		OpsSent: final.Ops, OpsApplied: final.Applied, OpsLost: final.Lost, Retransmits: final.Retransmits,
	}
	if seconds > 0 {
		r.ResponderOpsPerSec = float64(d1.Applied-d0.Applied) / seconds
	}
	if reads := d1.RemoteReads - d0.RemoteReads; reads > 0 {
		r.ResponderPacketsPerRead = float64(d1.RemotePackets-d0.RemotePackets) / float64(reads)
	}
	if resp > 0 {
		r.ResponderPacketsPerCPUSecond = float64(d1.Packets-d0.Packets) / resp.Seconds()
	}
	waits := d1.RemoteWaits - d0.RemoteWaits
	if waits > 0 && d1.RemoteWaits >= d0.RemoteWaits {
		r.ResponderPacketsPerWait = float64(d1.RemotePackets-d0.RemotePackets) / float64(waits)
		r.ResponderWaitCost = d1.RemoteWaitCost.Seconds() * 1e6
	}
	if stWin > 0 {
		m := float64(stWin) / 1e6
		r.ResponderCPUPerMillion = r.ResponderCPUSeconds / m
		r.TranslatorCPUPerMillion = r.TranslatorCPUSeconds / m
		r.SoftirqCPUPerMillion = (s1.softirq - s0.softirq).Seconds() / m
		if waits > 0 && d1.RemoteWaits >= d0.RemoteWaits {
			r.ResponderWaitsPerMillion = float64(waits) / m
			r.ResponderWaitCPUPerMillion = float64(waits) * d1.RemoteWaitCost.Seconds() / m
		}
		if send := d1.RemoteSendTime - d0.RemoteSendTime; send > 0 {
			r.ResponderSendCPUPerMillion = send.Seconds() / m
		}
	}
	if stored > 0 {
		r.OpsPerReport = float64(final.Ops) / float64(stored)
		r.PacketsPerReport = float64(final.Packets) / float64(stored)
	}
	return r
}

// sleep waits for d or until ctx is done, and reports the latter.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return true
	case <-t.C:
		return false
	}
}

// drain waits until the collector has taken in what is left in its socket
// buffers: none is left (udp.Listener.Pending, Linux) and its counters stop
// moving for 200 ms, at most 10 s. A reader may stand still with datagrams
// queued, blocked on a remote sink's window while a starved responder
// catches up, so a quiet counter alone does not mean drained. A remote sink
// may still be executing ops: see drainSink.
func drain(c collector) {
	deadline := time.Now().Add(10 * time.Second)
	stored, dropped := c.counts()
	still := time.Now()
	lst := c.listener()
	for time.Now().Before(deadline) && (time.Since(still) < 200*time.Millisecond || lst.Pending()) {
		time.Sleep(20 * time.Millisecond)
		s, d := c.counts()
		if s != stored || d != dropped {
			stored, dropped, still = s, d, time.Now()
		}
	}
}

func (b *bench) progress(label string, now, last, start snapshot) {
	if b.cfg.Progress == nil {
		return
	}
	dt := now.at.Sub(last.at).Seconds()
	if dt <= 0 {
		return
	}
	fmt.Fprintf(b.cfg.Progress, "\r%s %4.1fs  offered %7.3f M/s  accepted %7.3f M/s  app drops %d  ",
		label, now.at.Sub(start.at).Seconds(),
		float64(now.sent-last.sent)/dt/1e6, float64(now.stored-last.stored)/dt/1e6, now.dropped)
}
