package partition

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Member is one collector of a deployment: its name in the map (what New
// takes) and the RoCEv2 address it is reached at.
type Member struct {
	Name string
	Addr netip.AddrPort
}

// ErrNoMembers is returned by ParseMembers for an empty list.
var ErrNoMembers = errors.New("no collector address")

// ParseMembers parses a collector list "[NAME=]IP:PORT,...": the form of a
// translator's translator.collector and --collector, of a DART reporter's
// --collectors and of a client's collector list, so that all of them name
// the members alike. A member without a NAME is named by its address
// (netip.AddrPort's String: "192.0.2.10:4791", "[2001:db8::1]:4791").
// Names must be non-empty and distinct, as must addresses; port 0 is
// refused. Address parsing is the only
// network knowledge of the package.
func ParseMembers(s string) ([]Member, error) {
	if strings.TrimSpace(s) == "" {
		return nil, ErrNoMembers
	}
	var out []Member
	seen := map[string]bool{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		name, addr, named := strings.Cut(item, "=")
		if !named {
			addr = item
		}
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			return nil, fmt.Errorf("%q: want [NAME=]IP:PORT, e.g. c1=192.0.2.10:4791", item)
		}
		if ap.Port() == 0 {
			return nil, fmt.Errorf("%q: port 0 is no collector's port (the RoCEv2 port is 4791)", item)
		}
		if !named {
			name = ap.String()
		}
		if name == "" || seen[name] {
			return nil, fmt.Errorf("%q: empty or repeated collector name", item)
		}
		at := "\x00" + netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).String() // ::ffff:a.b.c.d is a.b.c.d
		if seen[at] {
			return nil, fmt.Errorf("%q: %v is named twice: one collector under two names would split its keys as if it were two", item, ap)
		}
		seen[name], seen[at] = true, true
		out = append(out, Member{Name: name, Addr: ap})
	}
	if len(out) > MaxMembers {
		return nil, fmt.Errorf("%d collectors, at most %d", len(out), MaxMembers)
	}
	return out, nil
}

// FromMembers returns the map over ms's names.
func FromMembers(ms []Member) (*Map, error) {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name
	}
	return New(names)
}
