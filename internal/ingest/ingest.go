// Package ingest runs a translator behind real UDP sockets: batched readers
// each drive their own translator Worker, replies (ACK/NACK) go back to the
// reporter, and a ticker flushes the translator's waiting batches and cached
// paths. It composes transport/udp and translator; it decodes nothing itself.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/dta-go/dta/internal/admit"
	"github.com/dta-go/dta/internal/intmap"
	"github.com/dta-go/dta/internal/translator"
	"github.com/dta-go/dta/internal/transport/udp"
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
	l, err := udp.Listen(cfg.UDP, func(int) udp.Handler {
		return &handler{w: t.NewWorker(), ackPort: uint16(cfg.AckPort), gate: cfg.Gate}
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

// INTAddr is the address INT reports are received on (invalid without).
func (in *Ingest) INTAddr() netip.AddrPort {
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

// LocalAddr is the address reports are received on.
func (in *Ingest) LocalAddr() netip.AddrPort { return in.l.LocalAddr() }

// Listener returns the UDP listener (for its statistics).
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
	<-done
	if ierr := <-intDone; err == nil || errors.Is(err, context.Canceled) {
		err = ierr
	}
	in.t.FlushAll()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// Close stops Run.
func (in *Ingest) Close() error {
	var err error
	in.once.Do(func() {
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

// EndBatch makes the next batch read the clock again.
func (h *handler) EndBatch() { h.now = 0 }

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
