// Package ingest runs a translator behind real UDP sockets, or behind AF_XDP
// sockets on one interface (Config.XDP): batched readers each drive their own
// translator Worker, replies (ACK/NACK) go back to the reporter, and a ticker
// flushes the translator's waiting batches and cached paths. It composes
// transport/udp (or transport/xdp) and translator; it decodes nothing itself.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/dta-go/dta/internal/admit"
	"github.com/dta-go/dta/internal/intmap"
	"github.com/dta-go/dta/internal/translator"
	"github.com/dta-go/dta/internal/transport/udp"
	"github.com/dta-go/dta/internal/transport/xdp"
	"github.com/dta-go/dta/wire/dta"
)

// Config is the ingest configuration.
type Config struct {
	UDP udp.Config
	// AckPort is the UDP port ACK/NACKs are sent to on the reporter's address;
	// 0 sends them to the report's source port. Default 40044.
	AckPort int
	// Tick is how often waiting Append batches and aged Postcarding paths are
	// checked while the translator holds any. Default 1ms. A translator
	// holding nothing does not tick until a report leaves something held.
	Tick time.Duration
	// Gate, when set, judges every datagram's source before it is decoded
	// (translator.allow_sources and the per-source rate limits); refused
	// datagrams are counted as translator drops (not_allowed, rate_limited)
	// and never decoded or answered. Nil admits every source.
	Gate *admit.Gate
	// INT, when set, also receives P4.org INT telemetry reports on a UDP
	// socket of its own, mapped onto the translator's stores by INT.Mapper.
	INT *INTConfig
	// XDP, when set, receives reports (and INT reports) through AF_XDP
	// sockets on XDP.Interface instead of UDP sockets: the ports are those
	// of UDP.Addr and INT.UDP.Addr; UDP.Readers and RecvBuffer are unused.
	XDP *xdp.Config
	// XDPFallback, with XDP set, falls back to the UDP sockets, with a
	// logged warning naming the failed step, when AF_XDP cannot be set up.
	// Without it such a failure is an error.
	XDPFallback bool
}

// INTConfig is the INT telemetry report input.
type INTConfig struct {
	UDP    udp.Config
	Mapper *intmap.Mapper
}

// DefaultConfig returns the defaults: UDP :40040, ACKs to port 40044.
func DefaultConfig() Config {
	return Config{UDP: udp.DefaultConfig(), AckPort: dta.AckPort, Tick: time.Millisecond}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	if err := c.UDP.Validate(); err != nil {
		return err
	}
	if c.INT != nil {
		if c.INT.Mapper == nil {
			return fmt.Errorf("int: no mapper")
		}
		if err := c.INT.UDP.Validate(); err != nil {
			return fmt.Errorf("int: %w", err)
		}
	}
	if c.AckPort < 0 || c.AckPort > 65535 {
		return fmt.Errorf("ack_port: %d out of range [0, 65535]", c.AckPort)
	}
	if c.Tick <= 0 || c.Tick > time.Second {
		return fmt.Errorf("tick: %v out of range (0, 1s]", c.Tick)
	}
	if c.XDP != nil {
		if err := c.XDP.Validate(); err != nil {
			return fmt.Errorf("xdp: %w", err)
		}
	}
	return nil
}

// Backend is what the front end feeds: one translator (Single), or a
// fan-out over the translators of several collectors (internal/fanout).
type Backend interface {
	// NewWorker returns a worker for one reader goroutine.
	NewWorker() Worker
	// Tick writes out what has waited long enough; it reports idle when
	// nothing is held (then Wake signals the next hold).
	Tick(now int64) (idle bool)
	Wake() <-chan struct{}
	// FlushAll writes out everything held (at shutdown).
	FlushAll()
}

// Worker is one reader's translation state: translator.Worker's methods.
type Worker interface {
	Handle(b []byte, from netip.AddrPort, now int64) []byte
	Refuse(r translator.Reason, from netip.AddrPort, now int64)
	BeginAdapted(from netip.AddrPort, now int64)
	AddReport(r *dta.Report)
	EndAdapted()
}

// Single is the Backend of one translator.
func Single(t *translator.Translator) Backend { return single{t} }

type single struct{ *translator.Translator }

func (s single) NewWorker() Worker { return s.Translator.NewWorker() }

// Ingest is a running UDP front end of a translator.
type Ingest struct {
	cfg    Config
	t      Backend
	l      *udp.Listener
	il     *udp.Listener // INT reports; nil without
	x      *xdp.Listener // with Config.XDP: reports and INT reports; l and il are nil
	logger *slog.Logger
	once   sync.Once
}

// New binds the UDP sockets for t.
func New(cfg Config, t *translator.Translator, logger *slog.Logger) (*Ingest, error) {
	return NewBackend(cfg, Single(t), logger)
}

// NewBackend binds the UDP sockets for a backend.
func NewBackend(cfg Config, t Backend, logger *slog.Logger) (*Ingest, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	in := &Ingest{cfg: cfg, t: t, logger: logger}
	if cfg.XDP != nil {
		x, err := listenXDP(cfg, t, logger)
		if err == nil {
			in.x = x
			return in, nil
		}
		if !cfg.XDPFallback {
			return nil, err
		}
		logger.Warn("AF_XDP ingest unavailable, falling back to UDP sockets (translator.xdp.fallback: udp)", "err", err)
	}
	l, err := udp.Listen(cfg.UDP, func(int) udp.Handler {
		return newHandler(t.NewWorker(), uint16(cfg.AckPort), cfg.Gate)
	}, logger)
	if err != nil {
		return nil, fmt.Errorf("listen for reports on %s: %w", cfg.UDP.Addr, err)
	}
	in.l = l
	if cfg.INT != nil {
		il, err := udp.Listen(cfg.INT.UDP, func(int) udp.Handler {
			return &intHandler{w: t.NewWorker(), m: cfg.INT.Mapper.NewWorker(), gate: cfg.Gate}
		}, logger)
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("listen for INT reports on %s: %w", cfg.INT.UDP.Addr, err)
		}
		in.il = il
	}
	return in, nil
}

// listenXDP sets up the AF_XDP sockets for the report port and, if
// configured, the INT port.
func listenXDP(cfg Config, t Backend, logger *slog.Logger) (*xdp.Listener, error) {
	port := func(addr string) (uint16, error) {
		ap, err := netip.ParseAddrPort(addr)
		if i := strings.LastIndex(addr, ":"); err != nil && i >= 0 {
			// ":40040" and "[::]:40040" style: no host.
			ap, err = netip.ParseAddrPort("0.0.0.0" + addr[i:])
		}
		if err != nil || ap.Port() == 0 {
			return 0, fmt.Errorf("xdp ingest: %q: want a fixed port", addr)
		}
		return ap.Port(), nil
	}
	p, err := port(cfg.UDP.Addr)
	if err != nil {
		return nil, err
	}
	routes := []xdp.Route{{Port: p, NewHandler: func(int) xdp.Handler {
		return newHandler(t.NewWorker(), uint16(cfg.AckPort), cfg.Gate)
	}}}
	if cfg.INT != nil {
		ip, err := port(cfg.INT.UDP.Addr)
		if err != nil {
			return nil, err
		}
		routes = append(routes, xdp.Route{Port: ip, NewHandler: func(int) xdp.Handler {
			return &intHandler{w: t.NewWorker(), m: cfg.INT.Mapper.NewWorker(), gate: cfg.Gate}
		}})
	}
	x, err := xdp.Listen(*cfg.XDP, routes, logger)
	if err != nil {
		return nil, fmt.Errorf("AF_XDP ingest on %s: %w", cfg.XDP.Interface, err)
	}
	return x, nil
}

// XDPListener returns the AF_XDP listener (nil on the UDP path).
func (in *Ingest) XDPListener() *xdp.Listener { return in.x }

// INTAddr is the address INT reports are received on (invalid without).
func (in *Ingest) INTAddr() netip.AddrPort {
	if in.x != nil && in.cfg.INT != nil {
		return addrOf(in.cfg.INT.UDP.Addr)
	}
	if in.il == nil {
		return netip.AddrPort{}
	}
	return in.il.LocalAddr()
}

// INTMapper returns the INT input's mapper (nil without).
func (in *Ingest) INTMapper() *intmap.Mapper {
	if in.cfg.INT == nil {
		return nil
	}
	return in.cfg.INT.Mapper
}

// INTListener returns the INT reports' listener (nil without).
func (in *Ingest) INTListener() *udp.Listener { return in.il }

// LocalAddr is the address reports are received on. On the AF_XDP path it
// is the configured address (any address of the interface, that port).
func (in *Ingest) LocalAddr() netip.AddrPort {
	if in.x != nil {
		return addrOf(in.cfg.UDP.Addr)
	}
	return in.l.LocalAddr()
}

// addrOf parses a configured listen address; ":port" is 0.0.0.0:port.
func addrOf(addr string) netip.AddrPort {
	if ap, err := netip.ParseAddrPort(addr); err == nil {
		return ap
	}
	ap, _ := netip.ParseAddrPort("0.0.0.0" + addr[strings.LastIndex(addr, ":"):])
	return ap
}

// Listener returns the UDP listener (for its statistics); nil on the AF_XDP
// path.
func (in *Ingest) Listener() *udp.Listener { return in.l }

// Run receives reports until ctx is done or Close is called, then writes out
// everything the translator still holds.
func (in *Ingest) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(in.cfg.Tick)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tk.C:
				if !in.t.Tick(now.UnixNano()) {
					continue
				}
			}
			// Nothing held: no tick until a worker holds something (an idle
			// translator would otherwise wake a thousand times a second).
			tk.Stop()
			select {
			case <-ctx.Done():
				return
			case <-in.t.Wake():
			}
			tk.Reset(in.cfg.Tick)
		}
	}()
	var err error
	if in.x != nil {
		in.logger.Info("translator receiving through AF_XDP", "interface", in.cfg.XDP.Interface, "mode", in.x.Mode(), "addr", in.LocalAddr().String())
		err = in.x.Run(ctx)
	} else {
		err = in.runUDP(ctx, cancel)
	}
	cancel()
	<-done
	in.t.FlushAll()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// runUDP runs the UDP listeners until ctx is done or one fails.
func (in *Ingest) runUDP(ctx context.Context, cancel context.CancelFunc) error {
	in.logger.Info("translator listening", "addr", in.l.LocalAddr().String())
	intDone := make(chan error, 1)
	if in.il != nil {
		in.logger.Info("INT telemetry reports listening", "addr", in.il.LocalAddr().String())
		go func() {
			err := in.il.Run(ctx)
			cancel() // either listener failing stops both
			intDone <- err
		}()
	} else {
		intDone <- nil
	}
	err := in.l.Run(ctx)
	cancel()
	if ierr := <-intDone; err == nil || errors.Is(err, context.Canceled) {
		err = ierr
	}
	return err
}

// Close stops Run.
func (in *Ingest) Close() error {
	var err error
	in.once.Do(func() {
		if in.x != nil {
			err = in.x.Close()
			return
		}
		err = in.l.Close()
		if in.il != nil {
			in.il.Close()
		}
	})
	return err
}

// handler adapts a translator Worker to the UDP reader of one socket.
type handler struct {
	w       Worker
	batch   batchWorker // w, when it holds a batch's work until EndBatch
	ackPort uint16
	gate    *admit.Gate
	now     int64
}

func (h *handler) HandlePacket(b []byte, from netip.AddrPort, r udp.Replier) {
	if h.now == 0 {
		h.now = time.Now().UnixNano()
	}
	if h.gate != nil {
		switch h.gate.Admit(from.Addr(), h.now) {
		case admit.NotAllowed:
			h.w.Refuse(translator.ReasonNotAllowed, from, h.now)
			return
		case admit.RateLimited:
			h.w.Refuse(translator.ReasonRateLimited, from, h.now)
			return
		}
	}
	reply := h.w.Handle(b, from, h.now)
	if reply == nil {
		return
	}
	to := from
	if h.ackPort != 0 {
		to = netip.AddrPortFrom(from.Addr(), h.ackPort)
	}
	_ = r.Reply(reply, to) // counted by the listener's ReplyErrors
}

// EndBatch ends the worker's batch (it applies what the batch left
// pending and publishes its counts) and makes the next batch read the clock
// again.
func (h *handler) EndBatch() {
	h.now = 0
	if h.batch != nil {
		h.batch.EndBatch()
	}
}

// batchWorker is a Worker that can hold a batch's work until EndBatch
// (translator.Worker).
type batchWorker interface {
	DeferToBatch()
	EndBatch()
}

// newHandler returns the handler of one reader over w, which, if it can,
// holds each batch's work until the reader's EndBatch.
func newHandler(w Worker, ackPort uint16, gate *admit.Gate) *handler {
	h := &handler{w: w, ackPort: ackPort, gate: gate}
	if bw, ok := w.(batchWorker); ok {
		bw.DeferToBatch()
		h.batch = bw
	}
	return h
}

// intHandler maps INT telemetry report packets onto a translator Worker.
type intHandler struct {
	w    Worker
	m    *intmap.Worker
	gate *admit.Gate
	now  int64
}

func (h *intHandler) HandlePacket(b []byte, from netip.AddrPort, _ udp.Replier) {
	if h.now == 0 {
		h.now = time.Now().UnixNano()
	}
	if h.gate != nil {
		switch h.gate.Admit(from.Addr(), h.now) {
		case admit.NotAllowed:
			h.w.Refuse(translator.ReasonNotAllowed, from, h.now)
			return
		case admit.RateLimited:
			h.w.Refuse(translator.ReasonRateLimited, from, h.now)
			return
		}
	}
	h.w.BeginAdapted(from, h.now)
	h.m.Map(b, h.now, h.w) // malformed packets are counted by reason in the mapper's stats
	h.w.EndAdapted()
}

func (h *intHandler) EndBatch() { h.now = 0 }
