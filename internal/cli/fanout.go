package cli

import (
	"fmt"
	"log/slog"
	"slices"

	"github.com/dta-go/dta/internal/config"
	"github.com/dta-go/dta/internal/fanout"
	"github.com/dta-go/dta/internal/metrics"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/translator"
	"github.com/dta-go/dta/internal/uplink"
)

// newFanoutStack builds one translator per collector (each over its own
// uplink) behind one UDP front end that routes reports by the partition
// function. Every collector must hold the same stores.
func newFanoutStack(f *config.File, targets []config.Target, ups []*uplink.Uplink, logger *slog.Logger) (*translatorStack, error) {
	descs := ups[0].Descriptors()
	members := make([]fanout.Member, len(ups))
	for i, up := range ups {
		if !sameStores(descs, up.Descriptors()) {
			return nil, fmt.Errorf("translator.collector: %s holds other stores than %s: every collector of a translator must have the same stores (ids, names, geometry)", targets[i].Name, targets[0].Name)
		}
		tr, err := translator.New(f.TranslatorConfig(), up.Descriptors(), up.Sink(), logger.With("collector", targets[i].Name))
		if err != nil {
			return nil, err
		}
		members[i] = fanout.Member{Name: targets[i].Name, Tr: tr}
	}
	router, err := fanout.New(fanout.Config{Replicas: f.Translator.Replicas, LegacyHeader: f.Translator.LegacyHeader,
		MaxReporters: f.Translator.MaxReporters}, members)
	if err != nil {
		return nil, err
	}
	in, gate, err := newIngest(f, descs, router, logger)
	if err != nil {
		return nil, err
	}
	st := &translatorStack{tr: members[0].Tr, in: in, gate: gate, router: router, ups: ups}
	for _, m := range members {
		st.trs = append(st.trs, m.Tr)
	}
	for i, up := range ups {
		st.resumeAppendHeadsOf(st.trs[i], up.Heads())
	}
	return st, nil
}

// sameStores reports whether two advertised store tables lay out the same
// stores (ignoring where each collector's regions live).
func sameStores(a, b []store.Descriptor) bool {
	return slices.Equal(a, b)
}

// registerFanoutMetrics registers the front end's metrics and, labelled
// with its collector, each collector's translator and requester.
func (s *translatorStack) registerFanoutMetrics(reg *metrics.Registry) error {
	names := s.router.Map().Names()
	if err := reg.Register(metrics.Fanout{R: s.router, Listener: s.in.Listener(),
		Connected: func(i int) bool { return s.ups[i].Requester().Connected() }}); err != nil {
		return err
	}
	if m := s.intMapper(); m != nil { // the front end's input, no collector's
		if err := reg.Register(metrics.INT{Listener: s.in.INTListener(), Mapper: m}); err != nil {
			return err
		}
	}
	for i, tr := range s.trs {
		l := map[string]string{"collector": names[i]}
		if err := reg.RegisterWith(l, metrics.Translator{T: tr}); err != nil {
			return err
		}
		if err := reg.RegisterWith(l, metrics.Requester{R: s.ups[i].Requester()}); err != nil {
			return err
		}
	}
	return nil
}
