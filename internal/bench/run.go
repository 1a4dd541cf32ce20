package bench

import (
	"context"
	"fmt"
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
	DTA      = "dta"
	Baseline = "baseline"
)

// Result is one run: one primitive, one mode, one collector. Rates, CPU and
// allocations are over the measured window; drops over the whole run
// (warm-up, window and drain).
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

	OpsPerReport    float64 `json:"mem_ops_per_report,omitempty"` // DTA: memory ops applied per report (Fig. 8)
	BytesPerReport  float64 `json:"mem_bytes_per_report,omitempty"`
	AllocsPerReport float64 `json:"allocs_per_report"`
	GCs             uint64  `json:"gc_cycles"`

	DatagramsPerRead float64 `json:"datagrams_per_read"`
	RSS              uint64  `json:"rss_bytes"`
	RegionBytes      uint64  `json:"region_bytes"`      // store regions mapped (pre-faulted)
	Backing          string  `json:"region_backing"`    // pages the regions got: 4k, thp or hugetlb
	PoolBytes        uint64  `json:"sender_pool_bytes"` // the senders' datagram pool
	RSSBeyond        int64   `json:"rss_beyond_regions_bytes"`
}

// Ratio compares DTA with the baseline for one primitive and mode.
type Ratio struct {
	Primitive string  `json:"primitive"`
	Mode      string  `json:"mode"`
	Accepted  float64 `json:"accepted"`       // DTA accepted rate / baseline's
	PerCore   float64 `json:"per_cpu_second"` // DTA reports per CPU second / baseline's
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
	total := len(cfg.Primitives) * len(cfg.Modes)
	if cfg.Baseline {
		total *= 2
	}
	b := &bench{cfg: cfg, total: total}
	for _, p := range cfg.Primitives {
		if err := b.primitive(ctx, p, rep); err != nil {
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
	cat, err := store.Open([]store.Descriptor{d}, b.cfg.Region, nil)
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
		var pair [2]*Result
		for i, name := range []string{DTA, Baseline} {
			if name == Baseline && !b.cfg.Baseline {
				break
			}
			r, err := b.run(ctx, name, m, w, cat)
			if r != nil {
				rep.Results = append(rep.Results, *r)
				pair[i] = r
			}
			if err != nil {
				return err
			}
		}
		if pair[0] != nil && pair[1] != nil {
			rep.Ratios = append(rep.Ratios, Ratio{
				Primitive: p.String(), Mode: m.String(),
				Accepted: ratio(pair[0].Accepted, pair[1].Accepted), PerCore: ratio(pair[0].PerCore, pair[1].PerCore),
			})
		}
	}
	return nil
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
	counts() (stored, dropped uint64)
	ops() (ops, bytes uint64) // memory ops applied (DTA)
}

func (b *bench) udpConfig(m Mode) udp.Config {
	c := udp.DefaultConfig()
	c.Addr, c.Readers, c.Batched, c.RecvBuffer = "127.0.0.1:0", b.cfg.Readers, m.Recvmmsg, b.cfg.RecvBuffer
	return c
}

func (b *bench) newCollector(name string, m Mode, cat *store.Catalog) (collector, error) {
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
	var sink memop.Sink = cat
	var release func() error
	if b.cfg.NewSink != nil {
		var err error
		if sink, release, err = b.cfg.NewSink(cat); err != nil {
			return nil, fmt.Errorf("bench: sink: %w", err)
		}
	}
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
	in, err := ingest.New(ingest.Config{UDP: b.udpConfig(m), AckPort: 0, Tick: time.Millisecond}, tr, nil)
	if err != nil {
		return nil, err
	}
	return &dtaCollector{in: in, tr: tr, cat: cat, release: release}, nil
}

type dtaCollector struct {
	in      *ingest.Ingest
	tr      *translator.Translator
	cat     *store.Catalog
	release func() error
}

func (c *dtaCollector) addr() netip.AddrPort          { return c.in.LocalAddr() }
func (c *dtaCollector) run(ctx context.Context) error { return c.in.Run(ctx) }
func (c *dtaCollector) listener() *udp.Listener       { return c.in.Listener() }
func (c *dtaCollector) close() {
	c.in.Close()
	if c.release != nil {
		c.release()
	}
}
func (c *dtaCollector) counts() (uint64, uint64) {
	st := c.tr.Stats()
	var n uint64
	for _, r := range st.Reports {
		n += r
	}
	return n, st.Dropped()
}
func (c *dtaCollector) ops() (uint64, uint64) {
	st := c.cat.Stats()
	return st.Ops.Load(), st.Bytes.Load()
}

type baselineCollector struct{ c *baseline.Collector }

func (c baselineCollector) addr() netip.AddrPort          { return c.c.LocalAddr() }
func (c baselineCollector) run(ctx context.Context) error { return c.c.Run(ctx) }
func (c baselineCollector) close()                        { c.c.Close() }
func (c baselineCollector) listener() *udp.Listener       { return c.c.Listener() }
func (c baselineCollector) ops() (uint64, uint64)         { return 0, 0 }
func (c baselineCollector) counts() (uint64, uint64) {
	st := c.c.Stats()
	var n uint64
	for _, r := range st.Reports {
		n += r
	}
	return n, st.Dropped()
}

// snapshot is the counters at one instant.
type snapshot struct {
	at              time.Time
	sent            uint64 // reports
	stored, dropped uint64
	proc, senders   time.Duration
	ops, bytes      uint64
	rt              runtimeStats
}

func (b *bench) snap(c collector, senders []*sender, per int) snapshot {
	s := snapshot{at: time.Now(), proc: processCPU(), rt: sampleRuntime()}
	for _, sd := range senders {
		s.sent += sd.sent.Load() * uint64(per)
		s.senders += threadCPU(int(sd.tid.Load()))
	}
	s.stored, s.dropped = c.counts()
	s.ops, s.bytes = c.ops()
	return s
}

// run measures one collector in one mode.
func (b *bench) run(ctx context.Context, name string, m Mode, w *Workload, cat *store.Catalog) (*Result, error) {
	b.done++
	runtime.GC()
	debug.FreeOSMemory()
	c, err := b.newCollector(name, m, cat)
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
	for _, s := range cat.Stores() {
		res.RegionBytes += s.Region.Size()
		res.Backing = s.Region.Backing()
	}
	res.RSSBeyond = int64(res.RSS) - int64(res.RegionBytes) - int64(res.PoolBytes)

	stopSenders()
	drain(c)
	stored, dropped := c.counts()
	lst := c.listener()
	kernel := lst.KernelDrops()
	ls := lst.Stats()
	res.DatagramsPerRead = float64(ls.Datagrams.Load()) / float64(max(ls.Batches.Load(), 1))
	err = stopCollector()
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
	cpu := s1.proc - s0.proc - sendCPU
	res.CPUSeconds, res.SenderCPUSeconds = cpu.Seconds(), sendCPU.Seconds()
	if stWin > 0 {
		res.CPUPerMillion = cpu.Seconds() / float64(stWin) * 1e6
		res.AllocsPerReport = float64(s1.rt.allocs-s0.rt.allocs) / float64(stWin)
		if name == DTA {
			res.OpsPerReport = float64(s1.ops-s0.ops) / float64(stWin)
			res.BytesPerReport = float64(s1.bytes-s0.bytes) / float64(stWin)
		}
	}
	if cpu > 0 {
		res.PerCore = float64(stWin) / cpu.Seconds()
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
// buffers: its counters stop moving for 200 ms (at most 3 s).
func drain(c collector) {
	deadline := time.Now().Add(3 * time.Second)
	stored, dropped := c.counts()
	still := time.Now()
	for time.Now().Before(deadline) && time.Since(still) < 200*time.Millisecond {
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
