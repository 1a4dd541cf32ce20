package admit

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// MaxPrefixes bounds the entries of one allowlist.
const MaxPrefixes = 1 << 16

// Prefixes is an immutable set of IP prefixes: an allowlist. The empty set
// (and a nil *Prefixes) is "no allowlist" and allows every address.
//
// IPv4 addresses, including IPv4-mapped IPv6 addresses (::ffff:a.b.c.d, as a
// dual-stack socket reports IPv4 peers), are matched against the IPv4 entries
// only; an IPv4-mapped entry (::ffff:10.0.0.0/104) is taken as the IPv4
// prefix it maps (10.0.0.0/8). IPv6 entries match IPv6 addresses.
type Prefixes struct {
	list []netip.Prefix // canonical, in the order given
	v4   []span4        // sorted, merged, disjoint
	v6   []span6
}

type span4 struct{ lo, hi uint32 }

type span6 struct{ lo, hi u128 }

// u128 is a 128-bit unsigned integer, hi word first.
type u128 struct{ hi, lo uint64 }

func (a u128) less(b u128) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

func (a u128) cmp(b u128) int {
	if c := cmp.Compare(a.hi, b.hi); c != 0 {
		return c
	}
	return cmp.Compare(a.lo, b.lo)
}

// next returns a+1 and whether it did not overflow.
func (a u128) next() (u128, bool) {
	a.lo++
	if a.lo == 0 {
		a.hi++
		return a, a.hi != 0
	}
	return a, true
}

func u128Of(a netip.Addr) u128 {
	b := a.As16()
	return u128{
		hi: uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 | uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7]),
		lo: uint64(b[8])<<56 | uint64(b[9])<<48 | uint64(b[10])<<40 | uint64(b[11])<<32 | uint64(b[12])<<24 | uint64(b[13])<<16 | uint64(b[14])<<8 | uint64(b[15]),
	}
}

func u32Of(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// ParsePrefixes parses an allowlist: CIDR prefixes ("10.0.0.0/8",
// "2001:db8::/32") or single addresses ("192.0.2.7", "2001:db8::7"). An entry
// with host bits set ("10.0.0.1/8") is refused rather than silently masked,
// and so are zones, empty entries and more than MaxPrefixes entries. Errors
// start with the entry's index in brackets, e.g. `[2] "10.0.0.1/8": ...`.
func ParsePrefixes(entries []string) (*Prefixes, error) {
	if len(entries) > MaxPrefixes {
		return nil, fmt.Errorf("%d entries, at most %d", len(entries), MaxPrefixes)
	}
	p := &Prefixes{}
	for i, e := range entries {
		pf, err := parsePrefix(e)
		if err != nil {
			return nil, fmt.Errorf("[%d] %q: %w", i, e, err)
		}
		p.list = append(p.list, pf)
	}
	p.compile()
	return p, nil
}

// MustParsePrefixes is ParsePrefixes for tests and constants; it panics on error.
func MustParsePrefixes(entries ...string) *Prefixes {
	p, err := ParsePrefixes(entries)
	if err != nil {
		panic(err)
	}
	return p
}

func parsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return netip.Prefix{}, errors.New("empty entry")
	}
	var pf netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if pf, err = netip.ParsePrefix(s); err != nil {
			return netip.Prefix{}, errors.New("not an IP prefix (want e.g. 10.0.0.0/8 or 2001:db8::/32)")
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, errors.New("not an IP address or prefix (want e.g. 192.0.2.7 or 10.0.0.0/8)")
		}
		pf = netip.PrefixFrom(a, a.BitLen())
	}
	if m := pf.Masked(); m != pf {
		return netip.Prefix{}, fmt.Errorf("host bits set; did you mean %s?", m)
	}
	// An IPv4-mapped prefix is the IPv4 prefix it maps.
	if a := pf.Addr(); a.Is4In6() && pf.Bits() >= 96 {
		pf = netip.PrefixFrom(a.Unmap(), pf.Bits()-96)
	}
	return pf, nil
}

// compile builds the merged ranges from list.
func (p *Prefixes) compile() {
	for _, pf := range p.list {
		if pf.Addr().Is4() {
			lo := u32Of(pf.Addr())
			hi := lo
			if host := 32 - pf.Bits(); host > 0 {
				hi = lo | (1<<host - 1)
			}
			p.v4 = append(p.v4, span4{lo, hi})
			continue
		}
		lo := u128Of(pf.Addr())
		hi := lo
		switch host := 128 - pf.Bits(); {
		case host >= 64:
			hi.lo = ^uint64(0)
			if host > 64 {
				hi.hi |= 1<<(host-64) - 1
			}
			if host == 128 {
				hi.hi = ^uint64(0)
			}
		case host > 0:
			hi.lo |= 1<<host - 1
		}
		p.v6 = append(p.v6, span6{lo, hi})
	}
	slices.SortFunc(p.v4, func(a, b span4) int { return cmp.Compare(a.lo, b.lo) })
	p.v4 = mergeSpans(p.v4, func(a, b span4) (span4, bool) {
		if b.lo > a.hi && b.lo-a.hi > 1 {
			return a, false
		}
		return span4{a.lo, max(a.hi, b.hi)}, true
	})
	slices.SortFunc(p.v6, func(a, b span6) int { return a.lo.cmp(b.lo) })
	p.v6 = mergeSpans(p.v6, func(a, b span6) (span6, bool) {
		if n, ok := a.hi.next(); a.hi.less(b.lo) && (!ok || n.less(b.lo)) {
			return a, false
		}
		hi := a.hi
		if hi.less(b.hi) {
			hi = b.hi
		}
		return span6{a.lo, hi}, true
	})
}

// mergeSpans merges sorted spans in place with join, which returns the union
// of a and b and true when they overlap or touch.
func mergeSpans[S any](s []S, join func(a, b S) (S, bool)) []S {
	if len(s) == 0 {
		return s
	}
	out := s[:1]
	for _, b := range s[1:] {
		if u, ok := join(out[len(out)-1], b); ok {
			out[len(out)-1] = u
		} else {
			out = append(out, b)
		}
	}
	return out
}

// Any reports whether the set is empty, i.e. allows every address.
func (p *Prefixes) Any() bool { return p == nil || len(p.list) == 0 }

// Len is the number of entries as given.
func (p *Prefixes) Len() int {
	if p == nil {
		return 0
	}
	return len(p.list)
}

// Allows reports whether a is in the set (always true for an empty set). It
// allocates nothing.
func (p *Prefixes) Allows(a netip.Addr) bool {
	if p.Any() {
		return true
	}
	return p.Contains(a)
}

// Contains reports whether a is in one of the prefixes (false for an empty
// set). It allocates nothing.
func (p *Prefixes) Contains(a netip.Addr) bool {
	if p == nil {
		return false
	}
	a = a.Unmap()
	if a.Is4() {
		x := u32Of(a)
		s := p.v4
		lo, hi := 0, len(s) // find the last span with lo <= x
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if s[m].lo <= x {
				lo = m + 1
			} else {
				hi = m
			}
		}
		return lo > 0 && x <= s[lo-1].hi
	}
	if !a.Is6() {
		return false
	}
	x := u128Of(a)
	s := p.v6
	lo, hi := 0, len(s)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if !x.less(s[m].lo) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo > 0 && !s[lo-1].hi.less(x)
}

// Prefixes returns the entries as given, in canonical form.
func (p *Prefixes) Prefixes() []netip.Prefix {
	if p == nil {
		return nil
	}
	return slices.Clone(p.list)
}

// String lists the entries, comma-separated ("any" for the empty set).
func (p *Prefixes) String() string {
	if p.Any() {
		return "any"
	}
	var b strings.Builder
	for i, pf := range p.list {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(pf.String())
	}
	return b.String()
}
