package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/internal/config"
	"github.com/dta-go/dta/internal/httpguard"
	"github.com/dta-go/dta/internal/metrics"
	"github.com/dta-go/dta/internal/rdma"
	"github.com/dta-go/dta/internal/uplink"
	"github.com/dta-go/dta/wire/roce"
)

func newTranslatorCmd() *cobra.Command {
	var configPath, collectorAddr, listen, httpAddr, rdmaLocal, intListen, xdpIf string
	var exportBrokers []string
	var sec securityFlags
	cmd := &cobra.Command{
		Use:   "translator",
		Short: "Run the translator: DTA reports in, RoCEv2 writes to a collector out",
		Long: `translator receives DTA reports on UDP :40040 and turns them into RDMA
WRITE, WRITE with immediate and FETCH_ADD operations (RoCEv2) into a remote
collector's memory. It connects to the collector's responder, learns the
stores (names, geometry, addresses, keys) from the collector's advertisement,
and reconnects when the collector restarts. /metrics and /healthz are served
on HTTP :8041.

translator.allow_sources, source_rate and source_burst restrict who may send
reports and how fast; --auth-token-file and --tls-cert/--tls-key guard the
metrics server. SIGHUP reloads them without a restart (docs/OPERATIONS.md,
"Security").`,
		Example: `  dta translator --collector 192.0.2.10:4791
  dta translator --collector 127.0.0.1:4791 --listen :40040 --http :8041
  dta translator --config dta.yaml        # translator.collector set in the file
  dta translator --collector c1=10.0.0.1:4791,c2=10.0.0.2:4791,c3=10.0.0.3:4791   # keys partitioned over three`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			hup, stopHUP := notifyHUP()
			defer stopHUP()
			load := loader(configPath, func(f *config.File) {
				if cmd.Flags().Changed("collector") {
					f.Translator.Collector = collectorAddr
				}
				if cmd.Flags().Changed("export-brokers") {
					f.Export.Brokers = exportBrokers
				}
				if cmd.Flags().Changed("int-listen") {
					f.Translator.INTListen = intListen
				}
				if cmd.Flags().Changed("xdp") {
					useXDP(f, xdpIf)
				}
				if cmd.Flags().Changed("listen") {
					f.Translator.Listen = listen
				}
				if cmd.Flags().Changed("http") {
					f.Translator.HTTP = httpAddr
				}
				if cmd.Flags().Changed("rdma-local") {
					f.Translator.RDMALocal = rdmaLocal
				}
				sec.apply(cmd.Flags(), f)
			})
			f, err := load()
			if err != nil {
				return err
			}
			if f.Translator.Collector == "" {
				return usageError("translator: give the collector's RoCEv2 address with --collector IP:4791")
			}
			return runTranslator(cmd.Context(), f, load, hup, newLogger(f, cmd.ErrOrStderr()), cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&configPath, "config", "c", "", "YAML configuration file (default: the embedded defaults)")
	fl.StringVar(&collectorAddr, "collector", "", "the collector's RoCEv2 address IP:PORT, or several as [NAME=]IP:PORT,... over which keys are partitioned (overrides translator.collector)")
	fl.StringVar(&listen, "listen", ":40040", "UDP address for DTA reports (overrides translator.listen)")
	fl.StringVar(&xdpIf, "xdp", "", xdpFlagUsage)
	fl.StringVar(&intListen, "int-listen", "", "also receive P4.org INT telemetry reports on this UDP `address` (overrides translator.int_listen)")
	fl.StringSliceVar(&exportBrokers, "export-brokers", nil, "export the Postcarding paths this translator writes out to these Kafka `brokers` (host:port,...; overrides export.brokers)")
	fl.StringVar(&httpAddr, "http", ":8041", "HTTP address for /metrics and /healthz (overrides translator.http)")
	fl.StringVar(&rdmaLocal, "rdma-local", "", "UDP address the RoCEv2 requester sends from, e.g. IP:4791 as RDMA NICs do (overrides translator.rdma_local; default: any port)")
	sec.add(fl)
	return cmd
}

func runTranslator(ctx context.Context, f *config.File, load func() (*config.File, error), hup <-chan os.Signal, logger *slog.Logger, out io.Writer) error {
	targets, err := f.Targets()
	if err != nil {
		return usageError("%v", err)
	}
	rqs := make([]rdma.RequesterConfig, len(targets))
	for i, t := range targets {
		if rqs[i], err = f.RequesterConfig(t.Addr); err != nil {
			return usageError("%v", err)
		}
	}
	if err := checkListenAddrs(listenAddr{"--listen (translator.listen)", "udp", f.Translator.Listen},
		listenAddr{"--int-listen (translator.int_listen)", "udp", f.Translator.INTListen},
		listenAddr{"--http (translator.http)", "tcp", f.Translator.HTTP},
		listenAddr{"--rdma-local (translator.rdma_local)", "udp", f.Translator.RDMALocal}); err != nil {
		return err
	}
	sec, err := readSecurity(f)
	if err != nil {
		return usageError("%v", err)
	}
	guard, err := httpguard.New(sec.guardConfig(f), logger)
	if err != nil {
		return usageError("%v", err)
	}
	ups := make([]*uplink.Uplink, len(targets))
	for i, t := range targets {
		up, err := uplink.Dial(ctx, rqs[i], logger.With("collector", t.Name))
		if err != nil {
			var rej *rdma.RejectError
			if errors.As(err, &rej) && rej.Reason == roce.RejectConsumerDefined {
				return fmt.Errorf("%w (the collector refuses this translator: is its address in the collector's collector.allow_translators?)", err)
			}
			return fmt.Errorf("collector %s: %w", t.Name, err)
		}
		defer up.Close()
		ups[i] = up
	}
	up := ups[0]
	var st *translatorStack
	reg := metrics.NewRegistry()
	if len(ups) == 1 {
		if st, err = newTranslatorStack(f, up.Descriptors(), up.Sink(), logger); err != nil {
			return err
		}
		st.resumeAppendHeads(up.Heads()) // the collector may hold entries already
		if err := reg.Register(st.metrics()); err != nil {
			return err
		}
		if err := reg.Register(metrics.Requester{R: up.Requester()}); err != nil {
			return err
		}
	} else {
		if st, err = newFanoutStack(f, targets, ups, logger); err != nil {
			return err
		}
		if err := st.registerFanoutMetrics(reg); err != nil {
			return err
		}
	}
	if x := st.in.XDPListener(); x != nil {
		if err := reg.Register(metrics.XDP{L: x}); err != nil {
			return err
		}
	}
	var late lateTranslator
	late.p.Store(st)
	if err := reg.Register(metrics.HTTPGuard{G: guard}); err != nil {
		return err
	}
	exp, err := startExport(f, nil, st.translators(), reg, logger) // paths only: the stores are the collector's
	if err != nil {
		return err
	}
	defer exp.stop()
	rl := newReloader(load, f, &live{guard: guard, gate: st.gate}, logger)
	if err := registerSecurityMetrics(reg, rl, st.gate); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.Translator.HTTP)
	if err != nil {
		return fmt.Errorf("translator: listen for metrics on %s: %w", f.Translator.HTTP, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", reg.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		status, code := "ok", http.StatusOK
		var down []string
		for i, u := range ups {
			if !u.Requester().Connected() {
				down = append(down, targets[i].Name)
			}
		}
		switch {
		case len(down) == len(ups):
			status, code = "collector unreachable", http.StatusServiceUnavailable
		case len(down) > 0:
			status = "degraded" // the others go on; the down ones reconnect
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]any{"status": status, "collector": f.Translator.Collector, "stores": len(up.Descriptors()), "down": down})
	})
	mux.Handle("/", guard.Unrouted(map[string][]string{"/metrics": {http.MethodGet}, "/healthz": {http.MethodGet}}))
	srv := guard.NewServer(mux, slog.NewLogLogger(logger.Handler(), slog.LevelWarn))

	g := newGroup(ctx)
	if len(ups) == 1 {
		watchUplink(g, up, &late, logger)
	} else {
		for i, u := range ups {
			watchMember(g, u, st, i, logger)
		}
	}
	g.run("metrics", func(ctx context.Context) error {
		go func() { <-ctx.Done(); srv.Close() }()
		if err := guard.Serve(srv, ln); err != http.ErrServerClosed {
			return err
		}
		return nil
	})
	g.run("reload", func(ctx context.Context) error { return rl.run(ctx, hup) })
	fmt.Fprintf(out, "dta translator: reports on udp %s%s, RoCEv2 to %s (%d stores), metrics on %s://%s%s\n",
		st.in.LocalAddr(), xdpVia(st.in, f.Translator.XDP.Interface), f.Translator.Collector, len(up.Descriptors()), scheme(guard), ln.Addr(), exp.line())
	if a := st.in.INTAddr(); a.IsValid() {
		fmt.Fprintf(out, "dta translator: INT telemetry reports on udp %s\n", a)
	}
	g.run("translator", st.in.Run)
	<-g.ctx.Done()
	st.in.Close()
	err = g.wait()
	fctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for i, u := range ups {
		if ferr := u.Flush(fctx); ferr != nil {
			logger.Warn("ops not acknowledged at shutdown", "collector", targets[i].Name, "err", ferr)
		}
	}
	exp.stop() // after the translator wrote out its held paths
	var datagrams, applied, dropped uint64
	for _, tr := range st.translators() {
		s := tr.Stats()
		datagrams, applied, dropped = datagrams+s.Datagrams, applied+sum(s.Reports[:]), dropped+s.Dropped()
	}
	if st.router != nil {
		datagrams = st.router.Stats().Datagrams.Load()
	}
	fmt.Fprintf(out, "dta translator: stopped after %d datagrams, %d reports applied, %d dropped\n", datagrams, applied, dropped)
	return err
}
