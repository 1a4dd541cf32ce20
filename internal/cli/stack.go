package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/dta-go/dta/internal/admit"
	"github.com/dta-go/dta/internal/config"
	"github.com/dta-go/dta/internal/export"
	"github.com/dta-go/dta/internal/fanout"
	"github.com/dta-go/dta/internal/ingest"
	"github.com/dta-go/dta/internal/intmap"
	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/metrics"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/translator"
	"github.com/dta-go/dta/internal/uplink"
)

// translatorStack is a translator behind its UDP ingest.
type translatorStack struct {
	tr   *translator.Translator
	in   *ingest.Ingest
	gate *admit.Gate // allow_sources and the per-source rate limits

	// With several collectors: one translator per collector (trs[0] is
	// tr), each over its uplink, behind the router.
	trs    []*translator.Translator
	ups    []*uplink.Uplink
	router *fanout.Router
}

// translators returns every translator of the stack.
func (s *translatorStack) translators() []*translator.Translator {
	if s.trs != nil {
		return s.trs
	}
	return []*translator.Translator{s.tr}
}

// newTranslatorStack builds the translator over descs writing to sink and
// binds its report sockets.
func newTranslatorStack(f *config.File, descs []store.Descriptor, sink memop.Sink, logger *slog.Logger) (*translatorStack, error) {
	tr, err := translator.New(f.TranslatorConfig(), descs, sink, logger)
	if err != nil {
		return nil, err
	}
	in, gate, err := newIngest(f, descs, ingest.Single(tr), logger)
	if err != nil {
		return nil, err
	}
	return &translatorStack{tr: tr, in: in, gate: gate}, nil
}

// xdpFlagUsage is the help of dta up's and dta translator's --xdp.
const xdpFlagUsage = "receive reports (and INT reports) through AF_XDP on `interface` instead of UDP sockets (sets translator.transport: xdp and translator.xdp.interface; root or CAP_BPF+CAP_NET_ADMIN; docs/OPERATIONS.md)"

// xdpVia returns what the banner adds after the reports' address when
// reports arrive through AF_XDP (" via AF_XDP on IF (native mode)"): the
// address is then the one the XDP program steers to its sockets. It is ""
// when the ingest uses UDP sockets (the default, or the fallback).
func xdpVia(in *ingest.Ingest, ifname string) string {
	x := in.XDPListener()
	if x == nil {
		return ""
	}
	return fmt.Sprintf(" via AF_XDP on %s (%s mode)", ifname, x.Mode())
}

// useXDP selects the AF_XDP ingest on interface ifname ("" selects UDP).
func useXDP(f *config.File, ifname string) {
	f.Translator.Transport, f.Translator.XDP.Interface = config.TransportXDP, ifname
	if ifname == "" {
		f.Translator.Transport = config.TransportUDP
	}
}

// newIngest binds the report sockets (and the INT ones, if configured) in
// front of backend, behind the source allowlist and rate limits.
func newIngest(f *config.File, descs []store.Descriptor, backend ingest.Backend, logger *slog.Logger) (*ingest.Ingest, *admit.Gate, error) {
	pol, err := f.SourcePolicy()
	if err != nil {
		return nil, nil, err
	}
	gate, err := admit.NewGate(pol, f.Translator.SourceTable)
	if err != nil {
		return nil, nil, fmt.Errorf("translator.source_table: %w", err)
	}
	ic := f.IngestConfig()
	ic.Gate = gate
	if ic.INT, err = f.INTIngest(descs); err != nil {
		return nil, nil, err
	}
	in, err := ingest.NewBackend(ic, backend, logger)
	if err != nil {
		return nil, nil, err
	}
	return in, gate, nil
}

// metrics returns the translator's Prometheus collector.
func (s *translatorStack) metrics() metrics.Translator {
	return metrics.Translator{T: s.tr, Listener: s.in.Listener(), INT: s.in.INTListener(), Mapper: s.intMapper()}
}

// intMapper is the INT input's mapper, or nil: with its own UDP sockets
// or, with translator.transport: xdp, behind the AF_XDP readers.
func (s *translatorStack) intMapper() *intmap.Mapper { return s.in.INTMapper() }

// resumeAppendHeads sets every Append list's head to where the stores behind
// the translator have it: heads[i] lists store i's lists whose head is not 0
// (every other list restarts at 0). After a collector restart the stores are
// new, empty or restored from checkpoints; either way their heads are these.
func (s *translatorStack) resumeAppendHeads(heads [][]store.ListHead) {
	s.resumeAppendHeadsOf(s.tr, heads)
}

// resumeAppendHeadsOf is resumeAppendHeads for one translator of the stack.
func (s *translatorStack) resumeAppendHeadsOf(tr *translator.Translator, heads [][]store.ListHead) {
	for i, d := range tr.Stores() {
		w := tr.AppendWriter(i)
		if w == nil {
			continue
		}
		var hs []store.ListHead
		if i < len(heads) {
			hs = heads[i]
		}
		for l := range d.Append.Lists {
			var h uint64
			if len(hs) > 0 && hs[0].List == l {
				h, hs = hs[0].Head, hs[1:]
			}
			w.Resume(l, h)
		}
	}
}

// resumeFromStores sets every Append list's head to the head in cat's store
// (a collector in this process, maybe restored from checkpoints), and every
// Sketch-Merge store's open epoch to the one its tags show, so that a
// restarted dta up neither clears nor closes what it held.
func (s *translatorStack) resumeFromStores(cat *store.Catalog) {
	for i, d := range s.tr.Stores() {
		w := s.tr.AppendWriter(i)
		st := cat.ByName(d.Name)
		if st != nil && st.SketchMerge != nil {
			if eps, err := st.SketchMerge.Epochs(); err == nil {
				for _, e := range eps {
					if e.State == "open" {
						s.tr.ResumeSketch(i, e.Epoch)
					}
				}
			}
		}
		if w == nil || st == nil || st.Append == nil {
			continue
		}
		for l := range d.Append.Lists {
			h, _ := st.Append.Head(l)
			w.Resume(l, h)
		}
	}
}

// lateTranslator lets a callback made before the translator (and the
// exporter) exists reach it.
type lateTranslator struct {
	p   atomic.Pointer[translatorStack]
	exp atomic.Pointer[export.Exporter]
}

// afterReset tells the translator that a reset Append store's lists start
// again at 0, and the exporter that their numbering starts over (a new
// generation).
func (l *lateTranslator) afterReset(s *store.Store) {
	if st := l.p.Load(); st != nil && s.Append != nil {
		for list := range s.Append.Spec().Lists {
			st.tr.ResumeAppend(int(s.Index), list, 0)
		}
	}
	if e := l.exp.Load(); e != nil {
		e.AfterReset(s)
	}
}

// group runs functions until the first fails or ctx is done, then cancels
// the rest and returns the first error.
type group struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error
}

func newGroup(ctx context.Context) *group {
	g := &group{}
	g.ctx, g.cancel = context.WithCancel(ctx)
	return g
}

func (g *group) run(name string, fn func(context.Context) error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := fn(g.ctx); err != nil && !errors.Is(err, context.Canceled) {
			g.mu.Lock()
			if g.err == nil {
				g.err = fmt.Errorf("%s: %w", name, err)
			}
			g.mu.Unlock()
		}
		g.cancel()
	}()
}

func (g *group) wait() error {
	<-g.ctx.Done()
	g.wg.Wait()
	return g.err
}

// watchMember is watchUplink for collector i of a fan-out stack: its
// translator resumes that collector's Append heads when it restarts.
func watchMember(g *group, up *uplink.Uplink, st *translatorStack, i int, logger *slog.Logger) {
	up.OnRestart(func() {
		st.resumeAppendHeadsOf(st.trs[i], up.Heads())
		go restartSketches(st.trs[i], up, logger)
	})
	g.run("uplink", func(ctx context.Context) error {
		select {
		case err := <-up.Fatal():
			return err
		case <-ctx.Done():
			return nil
		}
	})
}

// restartSketches opens tr's current Sketch-Merge epochs again on the
// collector behind up, which restarted: it reads each store's tags over RDMA
// READ and writes what they lack (translator.RestartSketches). It runs on
// its own goroutine: the READs complete on the connection whose restart
// called it.
func restartSketches(tr *translator.Translator, up *uplink.Uplink, logger *slog.Logger) {
	n, err := tr.RestartSketches(func(i int, dst []byte) error {
		return up.Requester().Read(uint16(i), 0, dst)
	})
	if err != nil {
		logger.Warn("collector restarted: a Sketch-Merge epoch could not be opened again; its queries fail there until the next epoch opens", "err", err)
	}
	if n > 0 {
		logger.Info("collector restarted: Sketch-Merge epochs opened again", "stores", n)
	}
}

// watchUplink restarts the translator's Append heads when the collector
// restarts, and stops the group when the uplink cannot go on.
func watchUplink(g *group, up *uplink.Uplink, late *lateTranslator, logger *slog.Logger) {
	up.OnRestart(func() {
		if st := late.p.Load(); st != nil {
			st.resumeAppendHeads(up.Heads())
			go restartSketches(st.tr, up, logger)
		}
	})
	g.run("uplink", func(ctx context.Context) error {
		select {
		case err := <-up.Fatal():
			return err
		case <-ctx.Done():
			return nil
		}
	})
}
