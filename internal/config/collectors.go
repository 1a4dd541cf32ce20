package config

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/dta-go/dta/partition"
)

// Target is one collector a translator writes to: its name in the
// partition map (shared with DART reporters and query clients) and its
// RoCEv2 address.
type Target struct {
	Name string
	Addr netip.AddrPort
}

// ParseTargets parses a collector list "[NAME=]IP:PORT,..." (translator.collector,
// --collector): one collector, or several over which keys are partitioned.
// A collector without a NAME is named by its address. The rule is
// partition.ParseMembers', which DART reporters use too.
func ParseTargets(s string) ([]Target, error) {
	ms, err := partition.ParseMembers(s)
	if errors.Is(err, partition.ErrNoMembers) {
		return nil, errors.New("no collector address (set it, or pass --collector IP:4791)")
	}
	if err != nil {
		return nil, err
	}
	out := make([]Target, len(ms))
	for i, m := range ms {
		out[i] = Target{Name: m.Name, Addr: m.Addr}
	}
	return out, nil
}

// Targets returns translator.collector's collectors.
func (f *File) Targets() ([]Target, error) {
	t, err := ParseTargets(f.Translator.Collector)
	if err != nil {
		return nil, fmt.Errorf("translator.collector: %w", err)
	}
	if f.Translator.Replicas < 1 || f.Translator.Replicas > len(t) {
		return nil, fmt.Errorf("translator.replicas: %d out of range [1, %d collectors]", f.Translator.Replicas, len(t))
	}
	return t, nil
}
