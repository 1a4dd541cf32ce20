package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/dta-go/dta/internal/collector"
	"github.com/dta-go/dta/internal/config"
	"github.com/dta-go/dta/internal/ingest"
	"github.com/dta-go/dta/internal/metrics"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/translator"
)

type upOptions struct {
	configPath  string
	listen      string
	http        string
	printConfig bool
	demo        bool
	demoRate    float64
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
primitive, named after it (keywrite, keyincrement, postcard, append).

--demo also runs a built-in reporter, so data flows at once.`,
		Example: `  dta up
  dta up --demo
  dta up --config dta.yaml
  dta up --print-config > dta.yaml     # start a config from the defaults
  dta up --listen 127.0.0.1:41000 --http 127.0.0.1:8041`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := loadConfig(o.configPath)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("listen") {
				f.Translator.Listen = o.listen
			}
			if cmd.Flags().Changed("http") {
				f.Collector.HTTP = o.http
			}
			if err := f.Validate(); err != nil {
				return usageError("%v", err)
			}
			if o.printConfig {
				b, err := f.Marshal()
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			if o.demoRate <= 0 || o.demoRate > 1e6 {
				return usageError("--demo-rate: %v out of range (0, 1e6]", o.demoRate)
			}
			return runUp(cmd.Context(), f, o, newLogger(f, cmd.ErrOrStderr()), cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.configPath, "config", "c", "", "YAML configuration file (default: the embedded defaults)")
	fl.StringVar(&o.listen, "listen", ":40040", "UDP address for DTA reports (overrides translator.listen)")
	fl.StringVar(&o.http, "http", ":8040", "HTTP address for queries, /metrics, /healthz (overrides collector.http)")
	fl.BoolVar(&o.printConfig, "print-config", false, "print the effective configuration as YAML and exit")
	fl.BoolVar(&o.demo, "demo", false, "also run a built-in reporter sending reports of every primitive")
	fl.Float64Var(&o.demoRate, "demo-rate", 200, "reports per second of the --demo reporter")
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
	// The translator is made after the collector (it writes into the
	// collector's stores); a reset through the API reaches it through trp.
	var trp atomic.Pointer[translator.Translator]
	afterReset := func(s *store.Store) {
		if tr := trp.Load(); tr != nil && s.Append != nil {
			for l := range s.Append.Spec().Lists {
				tr.ResumeAppend(int(s.Index), l, 0)
			}
		}
	}
	col, err := collector.New(collector.Config{HTTP: f.Collector.HTTP, Region: f.RegionConfig(), Stores: descs, AfterReset: afterReset}, logger)
	if err != nil {
		return err
	}
	defer col.Close()
	cat := col.Catalog()
	tr, err := translator.New(f.TranslatorConfig(), cat.Descriptors(), cat, logger)
	if err != nil {
		return err
	}
	trp.Store(tr)
	// Stores outlive nothing here (regions are new), but resume anyway so the
	// rule "a translator starts from the published heads" holds everywhere.
	for _, s := range cat.Stores() {
		if s.Append != nil {
			for l := range s.Append.Spec().Lists {
				if h, err := s.Append.Head(l); err == nil {
					tr.ResumeAppend(int(s.Index), l, h)
				}
			}
		}
	}
	in, err := ingest.New(f.IngestConfig(), tr, logger)
	if err != nil {
		return err
	}
	if err := col.Metrics().Register(metrics.Translator{T: tr, Listener: in.Listener()}); err != nil {
		return err
	}
	fmt.Fprintf(out, "dta up: reports on udp %s, queries on http://%s (metrics /metrics, health /healthz)\n",
		in.LocalAddr(), col.HTTPAddr())
	fmt.Fprintf(out, "try:    dta report keywrite --key 1 --value 42 && dta query keywrite --key 1\n")

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	run := func(name string, fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx); err != nil && !errors.Is(err, context.Canceled) {
				errs <- fmt.Errorf("%s: %w", name, err)
			}
			cancel()
		}()
	}
	run("translator", in.Run)
	run("collector", col.Run)
	if o.demo {
		run("demo", func(ctx context.Context) error {
			return runDemo(ctx, in.LocalAddr(), o.demoRate, out, logger)
		})
	}
	<-ctx.Done()
	in.Close()
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	st := tr.Stats()
	fmt.Fprintf(out, "dta up: stopped after %d datagrams, %d reports applied, %d dropped\n",
		st.Datagrams, sum(st.Reports[:]), st.Dropped())
	return nil
}

func sum(v []uint64) uint64 {
	var n uint64
	for _, x := range v {
		n += x
	}
	return n
}
