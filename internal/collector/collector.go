// Package collector is the composition root of the DTA collector: it maps the
// configured stores, serves the query API, Prometheus /metrics and /healthz
// over HTTP, and offers its stores as the local sink for an in-process
// translator. It owns no primitive logic and never decodes reports.
package collector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/dta-go/dta/internal/metrics"
	"github.com/dta-go/dta/internal/query"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
)

// Config is the collector's configuration.
type Config struct {
	HTTP   string             // query API, /metrics and /healthz listen address, e.g. ":8040"
	Region region.Config      // huge pages and prefault for every store (Size is per store)
	Stores []store.Descriptor // the stores to map
	// AfterReset is called after a store is reset through the query API, so
	// that an in-process translator can restart its Append heads. Optional.
	AfterReset func(*store.Store)
}

// Collector is a running collector.
type Collector struct {
	cat    *store.Catalog
	reg    *metrics.Registry
	query  *query.Server
	ln     net.Listener
	srv    *http.Server
	logger *slog.Logger
	start  time.Time
}

// New maps the stores and binds the HTTP listener.
func New(cfg Config, logger *slog.Logger) (*Collector, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cat, err := store.Open(cfg.Stores, cfg.Region, logger)
	if err != nil {
		return nil, fmt.Errorf("collector: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.HTTP)
	if err != nil {
		cat.Close()
		return nil, fmt.Errorf("collector: listen for queries on %s: %w", cfg.HTTP, err)
	}
	c := &Collector{cat: cat, reg: metrics.NewRegistry(), ln: ln, logger: logger, start: time.Now()}
	qc := query.DefaultConfig()
	qc.AfterReset = cfg.AfterReset
	c.query = query.New(cat, qc, logger)
	if err := c.reg.Register(metrics.Catalog{C: cat}); err != nil {
		return nil, err
	}
	if err := c.reg.Register(metrics.Query{S: c.query.Stats()}); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", c.query.Handler())
	mux.Handle("GET /metrics", c.reg.Handler())
	mux.HandleFunc("GET /healthz", c.healthz)
	c.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	return c, nil
}

// Catalog returns the stores; it is also the local sink.
func (c *Collector) Catalog() *store.Catalog { return c.cat }

// Metrics returns the registry served on /metrics, for an in-process
// translator to add its collector to.
func (c *Collector) Metrics() *metrics.Registry { return c.reg }

// HTTPAddr is the address the query API listens on.
func (c *Collector) HTTPAddr() net.Addr { return c.ln.Addr() }

func (c *Collector) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"status": "ok",
		"stores": len(c.cat.Stores()),
		"uptime": time.Since(c.start).Round(time.Second).String(),
	})
}

// Run serves HTTP until ctx is done, then shuts the server down gracefully
// (open long-polls get up to 5 s).
func (c *Collector) Run(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- c.srv.Serve(c.ln) }()
	c.logger.Info("collector serving", "http", c.ln.Addr().String(), "stores", len(c.cat.Stores()))
	select {
	case err := <-errc:
		return fmt.Errorf("collector: http: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := c.srv.Shutdown(sctx)
	if e := <-errc; !errors.Is(e, http.ErrServerClosed) && err == nil {
		err = e
	}
	return err
}

// Close unmaps the stores. Call it after Run has returned and every writer
// (translator) has stopped.
func (c *Collector) Close() error {
	c.ln.Close()
	return c.cat.Close()
}
