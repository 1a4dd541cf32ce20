package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/internal/collector"
	"github.com/dta-go/dta/internal/config"
)

func newCollectorCmd() *cobra.Command {
	var configPath, httpAddr, rdmaAddr string
	cmd := &cobra.Command{
		Use:   "collector",
		Short: "Run the collector: stores, software RDMA responder, query API",
		Long: `collector maps the configured stores, registers each as an RDMA memory
region of a software RoCEv2 responder (UDP :4791), and serves queries,
/metrics and /healthz on HTTP :8040. Translators (dta translator) connect to
the responder and learn every store's address and key from the advertisement
the collector posts on each connection; several translators may write into one
collector. The collector's CPU never handles a report.`,
		Example: `  dta collector
  dta collector --config dta.yaml
  dta collector --rdma 192.0.2.10:4791 --http :8040
  # then, on the translator's machine:
  dta translator --collector 192.0.2.10:4791`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := loadConfig(configPath)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("http") {
				f.Collector.HTTP = httpAddr
			}
			if cmd.Flags().Changed("rdma") {
				f.Collector.RDMA = rdmaAddr
			}
			if err := f.Validate(); err != nil {
				return usageError("%v", err)
			}
			return runCollector(cmd.Context(), f, newLogger(f, cmd.ErrOrStderr()), cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&configPath, "config", "c", "", "YAML configuration file (default: the embedded defaults)")
	fl.StringVar(&httpAddr, "http", ":8040", "HTTP address for queries, /metrics, /healthz (overrides collector.http)")
	fl.StringVar(&rdmaAddr, "rdma", ":4791", "UDP address of the RoCEv2 responder (overrides collector.rdma)")
	return cmd
}

func runCollector(ctx context.Context, f *config.File, logger *slog.Logger, out io.Writer) error {
	descs, err := f.Descriptors()
	if err != nil {
		return usageError("%v", err)
	}
	rc := f.ResponderConfig()
	col, err := collector.New(collector.Config{HTTP: f.Collector.HTTP, Region: f.RegionConfig(), Stores: descs, RDMA: &rc}, logger)
	if err != nil {
		return err
	}
	defer col.Close()
	fmt.Fprintf(out, "dta collector: RoCEv2 on udp %s, queries on http://%s, %d stores\n", col.RDMAAddr(), col.HTTPAddr(), len(descs))
	return col.Run(ctx)
}
