package config

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
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
// A collector without a NAME is named by its address.
func ParseTargets(s string) ([]Target, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("no collector address (set it, or pass --collector IP:4791)")
	}
	var out []Target
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		name, addr, named := strings.Cut(item, "=")
		if !named {
			addr = item
		}
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			return nil, fmt.Errorf("%q: want [NAME=]IP:PORT, e.g. c1=192.0.2.10:4791", item)
		}
		if !named {
			name = ap.String()
		}
		if name == "" || seen[name] {
			return nil, fmt.Errorf("%q: empty or repeated collector name", item)
		}
		seen[name] = true
		out = append(out, Target{Name: name, Addr: ap})
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
