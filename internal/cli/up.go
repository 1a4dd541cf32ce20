package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/internal/collector"
	"github.com/dta-go/dta/internal/config"
	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/metrics"
	"github.com/dta-go/dta/internal/uplink"
	"github.com/dta-go/dta/sketch"
	"github.com/dta-go/dta/wire/dta"
)

type upOptions struct {
	sec           securityFlags
	load          func() (*config.File, error)
	hup           <-chan os.Signal
	configPath    string
	listen        string
	http          string
	printConfig   bool
	demo          bool
	demoRate      float64
	sink          string
	rdma          string
	rdmaChanged   bool
	dataDir       string
	intListen     string
	xdpIf         string
	exportBrokers []string
}

func newUpCmd() *cobra.Command {
	var o upOptions
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run translator and collector in one process (the embedded defaults)",
		Long: `up runs the whole DTA pipeline in one process: a translator receiving
reports on UDP :40040, writing through the local sink into the collector's
stores, and the collector answering queries, /metrics and /healthz on HTTP
:8040. Without --config it uses the embedded defaults: one default store per
primitive, named after it (keywrite, keyincrement, postcard, append,
sketchmerge), and the stores INT input and dta report gen --store write into
(int-paths, loss-events, int-postcards, int-counters, int-drops);
--print-config shows them all.

--demo also runs a built-in reporter, so data flows at once. --sink roce puts
real RoCEv2 between the two halves (a software RDMA responder on loopback),
exactly as dta collector and dta translator do across machines.

Everything is open by default. --auth-token-file requires bearer tokens on
the HTTP API, --tls-cert/--tls-key serve it over HTTPS, translator.allow_sources
and source_rate restrict who sends reports (docs/OPERATIONS.md, "Security").
SIGHUP re-reads the configuration, token file and certificate and applies
tokens, TLS files, allowlists and rate limits without a restart; a bad file is
refused with an error and the old settings stay.`,
		Example: `  dta up
  dta up --demo
  dta up --sink roce --demo            # translator → RoCEv2 → collector, one process
  dta up --config dta.yaml
  dta up --print-config > dta.yaml     # start a config from the defaults
  dta up --listen 127.0.0.1:41000 --http 127.0.0.1:8041
  dta up --export-brokers kafka1:9092,kafka2:9092   # Append entries, paths, changed slots to Kafka
  dta up --auth-token-file /etc/dta/tokens --tls-cert cert.pem --tls-key key.pem
  kill -HUP $(pidof dta)               # reload tokens, TLS files, allowlists, rate limits`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fl := cmd.Flags()
			switch {
			case fl.Changed("demo-rate") && !o.demo:
				return usageError("--demo-rate goes with --demo")
			case fl.Changed("xdp") && o.xdpIf == "":
				return usageError("--xdp: give the name of the interface the reports arrive on")
			}
			if err := checkFloat("demo-rate", o.demoRate, 0.01, 1e6); err != nil {
				return err
			}
			hup, stopHUP := notifyHUP()
			defer stopHUP()
			o.hup = hup
			o.load = loader(o.configPath, func(f *config.File) {
				if cmd.Flags().Changed("listen") {
					f.Translator.Listen = o.listen
				}
				if cmd.Flags().Changed("http") {
					f.Collector.HTTP = o.http
				}
				if cmd.Flags().Changed("data-dir") {
					f.Collector.DataDir = o.dataDir
				}
				if cmd.Flags().Changed("int-listen") {
					f.Translator.INTListen = o.intListen
				}
				if cmd.Flags().Changed("xdp") {
					useXDP(f, o.xdpIf)
				}
				if cmd.Flags().Changed("export-brokers") {
					f.Export.Brokers = o.exportBrokers
				}
				if cmd.Flags().Changed("sink") {
					f.Translator.Sink = o.sink
				}
				if o.rdmaChanged = cmd.Flags().Changed("rdma"); o.rdmaChanged {
					f.Collector.RDMA = o.rdma
				}
				o.sec.apply(cmd.Flags(), f)
			})
			f, err := o.load()
			if err != nil {
				return err
			}
			if o.printConfig {
				b, err := f.Marshal()
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			return runUp(cmd.Context(), f, o, newLogger(f, cmd.ErrOrStderr()), cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.configPath, "config", "c", "", "YAML configuration file (default: the embedded defaults)")
	fl.StringVar(&o.listen, "listen", ":40040", "UDP address for DTA reports (overrides translator.listen)")
	fl.StringVar(&o.http, "http", ":8040", "HTTP address for queries, /metrics, /healthz (overrides collector.http)")
	fl.BoolVar(&o.printConfig, "print-config", false, "print the effective configuration as YAML and exit")
	fl.StringVar(&o.sink, "sink", "local", "how the translator reaches the stores: local (in-process) or roce (RoCEv2 over UDP, both halves in this process)")
	fl.StringVar(&o.rdma, "rdma", "127.0.0.1:0", "with --sink roce: the responder's UDP address (port 0: a free one)")
	fl.StringVar(&o.xdpIf, "xdp", "", xdpFlagUsage)
	fl.StringVar(&o.intListen, "int-listen", "", "also receive P4.org INT telemetry reports on this UDP `address` (overrides translator.int_listen)")
	fl.StringVar(&o.dataDir, "data-dir", "", "keep the stores in this directory: checkpoints while running, restored at start (overrides collector.data_dir)")
	fl.StringSliceVar(&o.exportBrokers, "export-brokers", nil, "export to these Kafka `brokers` (host:port,...; overrides export.brokers; docs/INTEGRATIONS.md)")
	fl.BoolVar(&o.demo, "demo", false, "also run a built-in reporter sending reports of every primitive")
	fl.Float64Var(&o.demoRate, "demo-rate", 200, "reports per second of the --demo reporter")
	o.sec.add(fl)
	return cmd
}

// loadConfig reads path, or returns the embedded defaults for "".
func loadConfig(path string) (*config.File, error) {
	if path == "" {
		return config.Default(), nil
	}
	f, err := config.Load(path)
	if err != nil {
		return nil, usageError("%v", err)
	}
	return f, nil
}

// newLogger builds the process logger from the configuration.
func newLogger(f *config.File, w io.Writer) *slog.Logger {
	level, _ := f.LogLevel()
	opts := &slog.HandlerOptions{Level: level}
	if f.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func runUp(ctx context.Context, f *config.File, o upOptions, logger *slog.Logger, out io.Writer) error {
	descs, err := f.Descriptors()
	if err != nil {
		return usageError("%v", err)
	}
	if err := checkStoresFit(descs); err != nil {
		return err
	}
	if err := checkDataDir(f.Collector.DataDir); err != nil {
		return err
	}
	sec, err := readSecurity(f)
	if err != nil {
		return usageError("%v", err)
	}
	roce := f.Translator.Sink == "roce"
	if o.rdmaChanged && !roce {
		return usageError("--rdma goes with --sink roce (translator.sink): with the local sink there is no responder")
	}
	addrs := []listenAddr{
		{"--listen (translator.listen)", "udp", f.Translator.Listen},
		{"--int-listen (translator.int_listen)", "udp", f.Translator.INTListen},
		{"--http (collector.http)", "tcp", f.Collector.HTTP},
	}
	if roce && o.rdmaChanged {
		addrs = append(addrs, listenAddr{"--rdma", "udp", o.rdma})
	}
	if err := checkListenAddrs(addrs...); err != nil {
		return err
	}
	var late lateTranslator
	ccfg := collector.Config{HTTP: f.Collector.HTTP, Region: f.RegionConfig(), Stores: descs, AfterReset: late.afterReset,
		Durability: f.DurabilityConfig(),
		Guard:      sec.guardConfig(f)}
	if roce {
		// Both halves in one process, over real UDP on loopback.
		rc := f.ResponderConfig()
		if !o.rdmaChanged {
			rc.Addr = "127.0.0.1:0"
		}
		// The translator is in this process: its requests cross loopback,
		// never an interface AF_XDP could take them from.
		rc.XDP = nil
		ccfg.RDMA = &rc
	}
	col, err := collector.New(ccfg, logger)
	if err != nil {
		return err
	}
	defer col.Close()
	g := newGroup(ctx)
	// The collector stops last, after the translator wrote out what it held
	// (with --sink roce those writes cross the collector's responder).
	colCtx, colStop := context.WithCancel(context.Background())
	defer colStop()
	colDone := make(chan error, 1)
	go func() {
		err := col.Run(colCtx)
		if err != nil {
			g.cancel()
		}
		colDone <- err
	}()
	stopCollector := func() error {
		colStop()
		return <-colDone
	}

	var sink memop.Sink = col.Catalog()
	descs = col.Catalog().Descriptors()
	var upl *uplink.Uplink // with --sink roce: closed before the collector stops
	if roce {
		addr := col.RDMAAddr()
		if addr.Addr().IsUnspecified() {
			addr = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), addr.Port())
		}
		rq, err := f.RequesterConfig(addr)
		if err != nil {
			return err
		}
		up, err := uplink.Dial(g.ctx, rq, logger)
		if err != nil {
			g.cancel()
			g.wait()
			stopCollector()
			return err
		}
		defer up.Close()
		upl = up
		sink, descs = up.Sink(), up.Descriptors()
		watchUplink(g, up, &late, logger)
		if err := col.Metrics().Register(metrics.Requester{R: up.Requester()}); err != nil {
			return err
		}
	}
	st, err := newTranslatorStack(f, descs, sink, logger)
	if err != nil {
		g.cancel()
		g.wait()
		stopCollector()
		return err
	}
	st.resumeFromStores(col.Catalog()) // restored from --data-dir, or all 0
	late.p.Store(st)
	if err := col.Metrics().Register(st.metrics()); err != nil {
		return err
	}
	if x := st.in.XDPListener(); x != nil {
		if err := col.Metrics().Register(metrics.XDP{L: x}); err != nil {
			return err
		}
	}
	exp, err := startExport(f, col.Catalog(), st.translators(), col.Metrics(), logger)
	if err != nil {
		g.cancel()
		g.wait()
		stopCollector()
		return err
	}
	defer exp.stop()
	if exp != nil {
		late.exp.Store(exp.e) // a reset through the query API starts a new generation
	}
	lv := &live{guard: col.Guard(), gate: st.gate}
	if roce {
		lv.allowTr = col.SetAllowTranslators
	}
	rl := newReloader(o.load, f, lv, logger)
	if err := registerSecurityMetrics(col.Metrics(), rl, st.gate); err != nil {
		return err
	}
	g.run("reload", func(ctx context.Context) error { return rl.run(ctx, o.hup) })
	intLine := ""
	if a := st.in.INTAddr(); a.IsValid() {
		intLine = fmt.Sprintf(", INT telemetry reports on udp %s", a)
	}
	fmt.Fprintf(out, "dta up: reports on udp %s%s, queries on %s://%s (metrics /metrics, health /healthz), sink %s%s%s\n",
		st.in.LocalAddr(), xdpVia(st.in, f.Translator.XDP.Interface), scheme(col.Guard()), col.HTTPAddr(), f.Translator.Sink, intLine, exp.line())
	fmt.Fprintf(out, "try:    dta report keywrite --key 1 --value 42 && dta query keywrite --key 1\n")
	g.run("translator", st.in.Run)
	if o.demo {
		g.run("demo", func(ctx context.Context) error {
			var sk *sketch.Geometry
			for _, d := range descs {
				if d.Primitive == dta.SketchMerge && d.Default {
					sk = &d.SketchMerge.Geometry
				}
			}
			return runDemo(ctx, st.in.LocalAddr(), o.demoRate, sk, out, logger)
		})
	}
	<-g.ctx.Done()
	st.in.Close()
	err = g.wait()
	if fl, ok := sink.(interface{ Flush(context.Context) error }); ok {
		fctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if ferr := fl.Flush(fctx); ferr != nil {
			logger.Warn("ops not acknowledged at shutdown", "err", ferr)
		}
		cancel()
	}
	// The translator has written out everything it held: the exporter
	// sends the rest (bounded by export.shutdown_timeout) before the
	// collector's final checkpoint.
	exp.stop()
	// The translator's connection ends first (DREQ), so that the
	// collector's own disconnect at its stop is not taken for a collector
	// lost (a warning, and reconnect attempts, at every clean stop).
	if upl != nil {
		upl.Close()
	}
	if cerr := stopCollector(); cerr != nil && err == nil {
		err = cerr
	}
	s := st.tr.Stats()
	fmt.Fprintf(out, "dta up: stopped after %d datagrams, %d reports applied, %d dropped\n",
		s.Datagrams, sum(s.Reports[:]), s.Dropped())
	return err
}

func sum(v []uint64) uint64 {
	var n uint64
	for _, x := range v {
		n += x
	}
	return n
}
