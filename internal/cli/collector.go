package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/internal/collector"
	"github.com/dta-go/dta/internal/config"
)

func newCollectorCmd() *cobra.Command {
	var configPath, httpAddr, rdmaAddr, dataDir string
	var readLoops int
	var xdpIface string
	var exportBrokers []string
	var sec securityFlags
	cmd := &cobra.Command{
		Use:   "collector",
		Short: "Run the collector: stores, software RDMA responder, query API",
		Long: `collector maps the configured stores, registers each as an RDMA memory
region of a software RoCEv2 responder (UDP :4791), and serves queries,
/metrics and /healthz on HTTP :8040. Translators (dta translator) connect to
the responder and learn every store's address and key from the advertisement
the collector posts on each connection; several translators may write into one
collector. The collector's CPU never handles a report.

--auth-token-file requires bearer tokens on the HTTP API (read tokens query,
admin tokens may also reset stores), --tls-cert/--tls-key serve it over
HTTPS; collector.allow_translators lists who may connect over RoCEv2. SIGHUP
reloads tokens, TLS files and allow_translators (closing connections it no
longer allows) without a restart (docs/OPERATIONS.md, "Security").

--xdp IFACE (collector.transport: xdp) attaches an XDP program to IFACE that
steers the frames sent to the responder's UDP port to AF_XDP sockets, one per
receive queue, each read by a read loop of its own: requests skip the kernel's
UDP receive path (across a veth on a 2-vCPU VM, 2.7-4.0 M Key-Write request
packets per CPU second against 0.6-0.9 M; docs/BENCHMARKS.md). Responses
leave on the same sockets' TX rings, back to the MAC address a QP's requests
come from (collector.xdp.tx_frames; 0 sends them through the UDP socket), and
the path MTU is capped so that a request fits one frame.
The program is detached on exit, crash included.`,
		Example: `  dta collector
  dta collector --config dta.yaml
  dta collector --rdma 192.0.2.10:4791 --http :8040
  sudo dta collector --rdma 192.0.2.10:4791 --xdp eth0   # requests through AF_XDP
  dta collector --export-brokers kafka1:9092    # Append entries and changed slots to Kafka
  # then, on the translator's machine:
  dta translator --collector 192.0.2.10:4791`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			hup, stopHUP := notifyHUP()
			defer stopHUP()
			load := loader(configPath, func(f *config.File) {
				if cmd.Flags().Changed("http") {
					f.Collector.HTTP = httpAddr
				}
				if cmd.Flags().Changed("rdma") {
					f.Collector.RDMA = rdmaAddr
				}
				if cmd.Flags().Changed("read-loops") {
					f.Collector.ReadLoops = readLoops
				}
				if cmd.Flags().Changed("xdp") {
					f.Collector.Transport, f.Collector.XDP.Interface = config.TransportXDP, xdpIface
				}
				if cmd.Flags().Changed("data-dir") {
					f.Collector.DataDir = dataDir
				}
				if cmd.Flags().Changed("export-brokers") {
					f.Export.Brokers = exportBrokers
				}
				sec.apply(cmd.Flags(), f)
			})
			f, err := load()
			if err != nil {
				return err
			}
			return runCollector(cmd.Context(), f, load, hup, newLogger(f, cmd.ErrOrStderr()), cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&configPath, "config", "c", "", "YAML configuration file (default: the embedded defaults)")
	fl.StringVar(&httpAddr, "http", ":8040", "HTTP address for queries, /metrics, /healthz (overrides collector.http)")
	fl.StringVar(&rdmaAddr, "rdma", ":4791", "UDP address of the RoCEv2 responder (overrides collector.rdma)")
	fl.StringVar(&xdpIface, "xdp", "", "also take RoCEv2 requests arriving on this network interface through AF_XDP, skipping the kernel's UDP receive path (Linux, root; sets collector.transport: xdp and collector.xdp.interface)")
	fl.IntVar(&readLoops, "read-loops", 1, "sockets (SO_REUSEPORT, Linux) the RoCEv2 responder receives on, each with its own goroutine: translators' QPs execute in parallel (overrides collector.read_loops)")
	fl.StringVar(&dataDir, "data-dir", "", "keep the stores in this directory: checkpoints while running, restored at start (overrides collector.data_dir)")
	fl.StringSliceVar(&exportBrokers, "export-brokers", nil, "export Append entries and changed slots to these Kafka `brokers` (host:port,...; overrides export.brokers)")
	sec.add(fl)
	return cmd
}

func runCollector(ctx context.Context, f *config.File, load func() (*config.File, error), hup <-chan os.Signal, logger *slog.Logger, out io.Writer) error {
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
	if err := checkListenAddrs(listenAddr{"--http (collector.http)", "tcp", f.Collector.HTTP},
		listenAddr{"--rdma (collector.rdma)", "udp", f.Collector.RDMA}); err != nil {
		return err
	}
	sec, err := readSecurity(f)
	if err != nil {
		return usageError("%v", err)
	}
	rc := f.ResponderConfig()
	// The responder is this process's main work: its read loops keep their
	// Go processors while they wait (dta up, which also translates, does not).
	rc.KeepProcessor = rc.KernelWait
	var late lateTranslator // the exporter, once it runs
	col, err := collector.New(collector.Config{HTTP: f.Collector.HTTP, Region: f.RegionConfig(), Stores: descs, RDMA: &rc, AfterReset: late.afterReset,
		XDPFallback: rc.XDP != nil && f.Collector.XDP.Fallback == config.TransportUDP,
		Durability:  f.DurabilityConfig(), Name: f.Collector.Name,
		Guard: sec.guardConfig(f)}, logger)
	if err != nil {
		return err
	}
	defer col.Close()
	// Stopped after Run returned (nothing writes any more), before Close.
	exp, err := startExport(f, col.Catalog(), nil, col.Metrics(), logger)
	if err != nil {
		return err
	}
	defer exp.stop()
	if exp != nil {
		late.exp.Store(exp.e) // a reset through the query API starts a new generation
	}
	rl := newReloader(load, f, &live{guard: col.Guard(), allowTr: col.SetAllowTranslators}, logger)
	if err := registerSecurityMetrics(col.Metrics(), rl, nil); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	reloads := make(chan error, 1)
	go func() { reloads <- rl.run(ctx, hup) }()
	defer func() { cancel(); <-reloads }()
	via := ""
	if m := col.XDPMode(); m != "" {
		via = fmt.Sprintf(", requests via AF_XDP on %s (%s mode)", f.Collector.XDP.Interface, m)
		if x := f.Collector.XDPConfig(); x != nil && x.TXFrames > 0 {
			via += ", responses on its TX rings"
		}
	}
	fmt.Fprintf(out, "dta collector: RoCEv2 on udp %s, queries on %s://%s, %d stores, name %s%s%s\n", col.RDMAAddr(), scheme(col.Guard()), col.HTTPAddr(), len(descs), col.Name(), exp.line(), via)
	return col.Run(ctx)
}
