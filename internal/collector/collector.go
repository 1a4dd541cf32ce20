// Package collector is the composition root of the DTA collector: it maps the
// configured stores, serves the query API, Prometheus /metrics, /healthz and
// the web dashboard (/, internal/web) over HTTP, runs the software RoCEv2
// responder that remote translators write through (advertising the stores to
// each), and offers its stores as the local sink for an in-process translator.
// It owns no primitive logic and never decodes reports.
package collector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/dta-go/dta/internal/admit"
	"github.com/dta-go/dta/internal/httpguard"
	"github.com/dta-go/dta/internal/metrics"
	"github.com/dta-go/dta/internal/query"
	"github.com/dta-go/dta/internal/rdma"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/snapshot"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/web"
	"github.com/dta-go/dta/wire/dta"
)

// Config is the collector's configuration.
type Config struct {
	HTTP   string             // query API, /metrics and /healthz listen address, e.g. ":8040"
	Region region.Config      // huge pages and prefault for every store (Size is per store)
	Stores []store.Descriptor // the stores to map
	// AfterReset is called after a store is reset through the query API, so
	// that an in-process translator can restart its Append heads. Optional.
	AfterReset func(*store.Store)
	// RDMA, when set, runs the software RoCEv2 responder: every store is
	// registered as a memory region and advertised to each translator that
	// connects. Nil: the stores are reachable only in-process (local sink).
	RDMA *rdma.ResponderConfig
	// XDPFallback, with RDMA.XDP set, starts the responder on its UDP
	// sockets alone, with a logged warning naming the failed step, when its
	// AF_XDP path cannot be set up (collector.xdp.fallback: udp). Without
	// it that failure stops New.
	XDPFallback bool
	// Durability, when set, keeps the stores in a data directory: restored
	// at New, checkpointed while Run runs and once more when it ends, with
	// past checkpoints queryable (?at=, GET /v1/epochs). Nil: memory only.
	Durability *snapshot.Config
	// Name is the collector's name in a partition map shared by translators,
	// DART reporters and query clients (GET /healthz tells it). "" names it
	// by its RoCEv2 address (the host name and port when that address is
	// unspecified), as a translator names a collector it was given only by
	// address.
	Name string
	// Guard is who may call the HTTP server, over what, and within which
	// limits. Zero Limits take httpguard.DefaultLimits; the guard's Admin
	// and Stream are set here (resets need an admin token; long polls and
	// notification streams count against max_streams).
	Guard httpguard.Config
}

// Collector is a running collector.
type Collector struct {
	cat    *store.Catalog
	reg    *metrics.Registry
	query  *query.Server
	ln     net.Listener
	srv    *http.Server
	guard  *httpguard.Guard
	resp   *rdma.Responder
	logger *slog.Logger
	start  time.Time
	name   string

	durable *snapshot.Durable // nil: memory only
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
	// The stores are restored before anything can write to them.
	var durable *snapshot.Durable
	if cfg.Durability != nil {
		if durable, err = snapshot.Open(cat, *cfg.Durability, logger); err != nil {
			cat.Close()
			return nil, fmt.Errorf("collector: %w", err)
		}
	}
	ln, err := net.Listen("tcp", cfg.HTTP)
	if err != nil {
		if durable != nil {
			durable.Close()
		}
		cat.Close()
		return nil, fmt.Errorf("collector: listen for queries on %s: %w", cfg.HTTP, err)
	}
	c := &Collector{cat: cat, reg: metrics.NewRegistry(), ln: ln, logger: logger, start: time.Now(), durable: durable}
	gc := cfg.Guard
	if gc.Limits == (httpguard.Limits{}) {
		gc.Limits = httpguard.DefaultLimits()
	}
	gc.Admin, gc.Stream, gc.Public = query.ChangesState, query.IsStream, web.IsPage
	if c.guard, err = httpguard.New(gc, logger); err != nil {
		c.Close()
		return nil, fmt.Errorf("collector: http: %w", err)
	}
	qc := query.DefaultConfig()
	qc.AfterReset = cfg.AfterReset
	if durable != nil {
		qc.History = history{durable}
		if err := c.reg.Register(metrics.Snapshot{S: durable.Stats(), C: durable.Config()}); err != nil {
			c.Close()
			return nil, err
		}
	}
	qc.MaxBodyBytes = gc.Limits.MaxBodyBytes
	c.query = query.New(cat, qc, logger)
	if err := c.reg.Register(metrics.Catalog{C: cat}); err != nil {
		return nil, err
	}
	if err := c.reg.Register(metrics.Query{S: c.query.Stats()}); err != nil {
		return nil, err
	}
	if err := c.reg.Register(metrics.HTTPGuard{G: c.guard}); err != nil {
		return nil, err
	}
	if cfg.RDMA != nil {
		if err := c.startResponder(*cfg.RDMA, cfg.XDPFallback); err != nil {
			c.Close()
			return nil, err
		}
	}
	c.name = cfg.Name
	if c.name == "" {
		host, _ := os.Hostname()
		c.name = host
		if c.resp != nil {
			a := c.resp.LocalAddr()
			if a.Addr().IsUnspecified() {
				c.name = net.JoinHostPort(host, strconv.Itoa(int(a.Port())))
			} else {
				c.name = a.String()
			}
		}
	}
	ui, err := web.New()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("collector: %w", err)
	}
	// Every other path and method: JSON 404/405, counted by reason in
	// dta_http_refused_total (no_route, method), as on the translator; so
	// is a path under the dashboard's assets that is none.
	get := []string{http.MethodGet}
	unrouted := c.guard.Unrouted(map[string][]string{"/metrics": get, "/healthz": get, "/": get})
	ui.NotFound = unrouted
	mux := http.NewServeMux()
	mux.Handle("/v1/", c.query.Handler())
	mux.Handle("GET /metrics", c.reg.Handler())
	mux.HandleFunc("GET /healthz", c.healthz)
	mux.Handle("GET /{$}", ui)             // the dashboard (internal/web)
	mux.Handle("GET "+web.AssetPrefix, ui) // and its assets
	mux.Handle("/", unrouted)
	c.srv = c.guard.NewServer(mux, slog.NewLogLogger(logger.Handler(), slog.LevelWarn))
	return c, nil
}

// Guard is the HTTP server's guard (for SIGHUP: its Access and certificate).
func (c *Collector) Guard() *httpguard.Guard { return c.guard }

// SetAllowTranslators replaces the responder's allowlist (no-op without a
// responder).
func (c *Collector) SetAllowTranslators(p *admit.Prefixes) {
	if c.resp != nil {
		c.resp.SetAllowTranslators(p)
	}
}

// startResponder runs NewResponder over the collector's stores and adds the
// responder's counters to /metrics.
func (c *Collector) startResponder(rc rdma.ResponderConfig, xdpFallback bool) error {
	resp, err := NewResponder(c.cat, rc, c.logger)
	if err != nil && rc.XDP != nil && xdpFallback {
		c.logger.Warn("AF_XDP path of the RoCEv2 responder unavailable, serving on UDP sockets only (collector.xdp.fallback: udp)", "err", err)
		rc.XDP = nil
		resp, err = NewResponder(c.cat, rc, c.logger)
	}
	if err != nil {
		return err
	}
	if err := c.reg.Register(metrics.Responder{R: resp}); err != nil {
		resp.Close()
		return err
	}
	if ln := resp.XDP(); ln != nil {
		if err := c.reg.Register(metrics.XDP{L: ln}); err != nil {
			resp.Close()
			return err
		}
	}
	c.resp = resp
	return nil
}

// NewResponder binds a software RoCEv2 responder serving cat's stores as the
// collector does: every store registered as a memory region (remote write
// and remote read; Key-Increment, Sketch-Merge and Key-Write stores also
// remote atomics), the store table posted as the
// advertisement on every connection, and the immediates of writes with
// immediate delivered as cat's notifications. The caller runs and closes it;
// cat must outlive it. logger may be nil.
func NewResponder(cat *store.Catalog, rc rdma.ResponderConfig, logger *slog.Logger) (*rdma.Responder, error) {
	resp, err := rdma.NewResponder(rc, logger)
	if err != nil {
		return nil, fmt.Errorf("collector: rdma responder: %w", err)
	}
	var adv []store.Advertised
	for _, s := range cat.Stores() {
		// Every store is readable remotely: a READ never changes memory, and
		// a remote querier (or a reporter checking a slot) reads what the
		// local query engine reads.
		access := rdma.AccessRemoteWrite | rdma.AccessRemoteRead
		switch s.Primitive {
		case dta.KeyIncrement, dta.SketchMerge:
			access |= rdma.AccessRemoteAtomic
		case dta.KeyWrite:
			// DART reporters of the compare-and-swap variant write a key's
			// later copies only into empty slots (docs/PROTOCOL.md).
			access |= rdma.AccessRemoteAtomic
		}
		mr, err := resp.RegisterMR(s.Name, s.Region, access)
		if err != nil {
			resp.Close()
			return nil, fmt.Errorf("collector: register store %s: %w", s.Name, err)
		}
		adv = append(adv, store.Advertised{Descriptor: s.Descriptor, VA: mr.VA, RKey: mr.RKey, Length: mr.Length})
	}
	static, err := store.AppendAdvertisement(nil, adv)
	if err != nil {
		resp.Close()
		return nil, fmt.Errorf("collector: %w", err)
	}
	resp.SetAdvertisement(static)
	// Each connection learns every Append list's head as it is then, so a
	// translator that starts (or finds the collector restarted from its
	// checkpoints) resumes the lists where they are instead of at 0.
	resp.SetAdvertisementFunc(func() []byte {
		now := slices.Clone(adv)
		for i, s := range cat.Stores() {
			if s.Append != nil {
				now[i].Heads = s.AppendHeads()
			}
		}
		b, err := store.AppendAdvertisement(nil, now)
		if err != nil { // cannot happen: the same stores encoded above
			return static
		}
		return b
	})
	resp.OnImmediate(func(im rdma.Immediate) {
		cat.Notify(store.Notification{Store: im.MR, Offset: im.Offset, Imm: im.Imm})
	})
	return resp, nil
}

// RDMAAddr is the address the RoCEv2 responder listens on (invalid when the
// collector runs without one).
func (c *Collector) RDMAAddr() netip.AddrPort {
	if c.resp == nil {
		return netip.AddrPort{}
	}
	return c.resp.LocalAddr()
}

// XDPMode is the attach and copy mode of the responder's AF_XDP path
// ("native/copy", ...), or "" when requests take the UDP sockets only
// (collector.transport: udp, or its fallback).
func (c *Collector) XDPMode() string {
	if c.resp == nil || c.resp.XDP() == nil {
		return ""
	}
	return c.resp.XDP().Mode()
}

// Name is the collector's name in a partition map (Config.Name).
func (c *Collector) Name() string { return c.name }

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
		"name":   c.name,
		"stores": len(c.cat.Stores()),
		"uptime": time.Since(c.start).Round(time.Second).String(),
	})
}

// Run serves HTTP (and the RoCEv2 responder, if any) until ctx is done or
// one of them fails, then shuts the HTTP server down gracefully (open
// long-polls get up to 5 s).
func (c *Collector) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	httpDone := make(chan error, 1)
	go func() { httpDone <- c.guard.Serve(c.srv, c.ln) }()
	var respDone chan error // nil without a responder: never ready
	if c.resp != nil {
		respDone = make(chan error, 1)
		go func() { respDone <- c.resp.Run(ctx) }()
		c.logger.Info("rdma responder listening", "addr", c.resp.LocalAddr().String())
	}
	if a, ok := c.ln.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() && c.guard.Access().Tokens == nil {
		c.logger.Warn("the query API answers anyone who can reach it, resets included: set http.auth_token_file (docs/OPERATIONS.md, Security)", "http", c.ln.Addr().String())
	}
	c.logger.Info("collector serving", "http", c.ln.Addr().String(), "stores", len(c.cat.Stores()),
		"tls", c.guard.TLS(), "auth", c.guard.Access().Tokens != nil)
	var ckDone chan error // nil without durable stores: never ready
	if c.durable != nil {
		ckDone = make(chan error, 1)
		go func() { ckDone <- c.durable.Run(ctx) }()
	}
	var runErr error
	select {
	case err := <-httpDone:
		runErr = fmt.Errorf("collector: http: %w", err)
		httpDone = nil
	case err := <-respDone:
		if err != nil {
			runErr = fmt.Errorf("collector: rdma responder: %w", err)
		}
		respDone = nil
	case <-ctx.Done():
	}
	cancel()
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if err := c.srv.Shutdown(sctx); err != nil && runErr == nil {
		runErr = err
	}
	if httpDone != nil {
		if err := <-httpDone; !errors.Is(err, http.ErrServerClosed) && runErr == nil {
			runErr = err
		}
	}
	if respDone != nil {
		if err := <-respDone; err != nil && !errors.Is(err, context.Canceled) && runErr == nil {
			runErr = fmt.Errorf("collector: rdma responder: %w", err)
		}
	}
	if ckDone != nil {
		<-ckDone
		// Nothing writes any more (the responder has stopped; an in-process
		// translator flushed before Run's context ended): the last
		// checkpoint holds everything.
		e, err := c.durable.Checkpoint()
		if err != nil {
			c.logger.Error("final checkpoint failed: the stores are as of the previous one", "err", err)
			if runErr == nil {
				runErr = fmt.Errorf("collector: %w", err)
			}
		} else {
			c.logger.Info("stores written out", "epoch", e.Epoch, "bytes", e.Bytes, "dir", c.durable.Config().Dir)
		}
	}
	return runErr
}

// Close unmaps the stores. Call it after Run has returned and every writer
// (translator) has stopped.
func (c *Collector) Close() error {
	c.ln.Close()
	if c.resp != nil {
		c.resp.Close()
	}
	if c.durable != nil {
		c.durable.Close()
	}
	return c.cat.Close()
}

// Durable returns the durable stores (nil when the collector keeps its
// stores in memory only).
func (c *Collector) Durable() *snapshot.Durable { return c.durable }

// history serves past epochs to the query API.
type history struct{ d *snapshot.Durable }

func (h history) Epochs() []query.Epoch {
	var out []query.Epoch
	for _, e := range h.d.Epochs() {
		out = append(out, queryEpoch(e))
	}
	return out
}

func queryEpoch(e snapshot.Epoch) query.Epoch {
	return query.Epoch{Epoch: e.Epoch, Time: e.Time.UTC(), Full: e.Full(), Parent: e.Parent, Bytes: e.Bytes}
}

func (h history) Open(at string) (*store.Catalog, query.Epoch, func(), error) {
	e, err := h.d.Resolve(at, time.Now(), time.Local)
	if err == nil {
		var cat *store.Catalog
		var release func()
		if cat, release, err = h.d.OpenEpoch(e); err == nil {
			return cat, queryEpoch(e), release, nil
		}
	}
	switch {
	case errors.Is(err, snapshot.ErrNoEpoch):
		err = atError{query.ErrNoEpoch, err}
	case errors.Is(err, snapshot.ErrBadAt):
		err = atError{query.ErrAtSyntax, err}
	}
	return nil, query.Epoch{}, nil, err
}

// atError is a snapshot error as the query API classifies it.
type atError struct{ kind, err error }

func (e atError) Error() string        { return e.err.Error() }
func (e atError) Unwrap() error        { return e.err }
func (e atError) Is(target error) bool { return target == e.kind }
