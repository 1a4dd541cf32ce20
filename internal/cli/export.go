package cli

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/dta-go/dta/internal/config"
	"github.com/dta-go/dta/internal/export"
	"github.com/dta-go/dta/internal/metrics"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/translator"
)

// exportRun is a running Kafka exporter.
type exportRun struct {
	e      *export.Exporter
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// startExport runs the exporter of f's export: section (nil when export is
// off) over cat's stores (nil for a translator: paths only) and tr's paths
// (nil for a collector), with its metrics in reg. Stop it after the
// translator has stopped and before the stores close.
func startExport(f *config.File, cat *store.Catalog, trs []*translator.Translator, reg *metrics.Registry, logger *slog.Logger) (*exportRun, error) {
	cfg := f.ExportConfig()
	if cfg == nil {
		return nil, nil
	}
	if cat == nil { // a translator holds no stores: only its paths
		cfg.Topics.Append, cfg.Topics.Changes, cfg.CursorFile = "", "", ""
	}
	if len(trs) == 0 { // a collector alone writes out no paths
		cfg.Topics.Paths = ""
	}
	if cfg.Topics == (export.Topics{}) {
		logger.Info("export: no stream to export from this process", "brokers", strings.Join(cfg.Brokers, ","))
		return nil, nil
	}
	e, err := export.New(*cfg, cat, logger)
	if err != nil {
		return nil, err
	}
	for _, tr := range trs {
		names := make([]string, len(tr.Stores()))
		for i, d := range tr.Stores() {
			names[i] = d.Name
		}
		if obs := e.PathObserver(names); obs != nil {
			tr.AddPathObserver(obs)
		}
	}

	if err := reg.Register(metrics.Export{E: e}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &exportRun{e: e, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- e.Run(ctx) }()
	return r, nil
}

// stop sends what is left and stops the exporter (no-op for nil; safe to
// call again).
func (r *exportRun) stop() error {
	if r == nil {
		return nil
	}
	r.once.Do(func() {
		r.cancel()
		r.err = <-r.done
	})
	return r.err
}

// line is what the ready line says about the export ("" when off).
func (r *exportRun) line() string {
	if r == nil {
		return ""
	}
	c := r.e.Config()
	var on []string
	for _, t := range []string{c.Topics.Append, c.Topics.Paths, c.Topics.Changes} {
		if t != "" {
			on = append(on, t)
		}
	}
	return fmt.Sprintf(", export to kafka %s (%s)", strings.Join(c.Brokers, ","), strings.Join(on, ", "))
}
