package admit

import (
	"net/netip"
	"strings"
	"testing"
)

func TestPrefixesAllowExactlyTheirAddresses(t *testing.T) {
	p := MustParsePrefixes("10.0.0.0/8", "192.0.2.7", "2001:db8::/32", "::ffff:198.51.100.0/120", "2001:db8:ffff::1/128")
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"10.0.0.0", true},
		{"10.255.255.255", true},
		{"11.0.0.0", false},
		{"9.255.255.255", false},
		{"192.0.2.7", true},
		{"192.0.2.8", false},
		{"198.51.100.200", true}, // from the IPv4-mapped entry
		{"198.51.101.0", false},
		{"::ffff:10.1.2.3", true}, // an IPv4-mapped peer of a dual-stack socket
		{"::ffff:11.1.2.3", false},
		{"2001:db8::1", true},
		{"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", true},
		{"2001:db9::", false},
		{"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", false},
		{"::a00:1", false}, // 10.0.0.1's bits as an IPv6 address are not 10.0.0.1
	} {
		if got := p.Allows(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("%s: Allows = %v, want %v", tc.addr, got, tc.want)
		}
	}
	if p.Allows(netip.Addr{}) {
		t.Error("the invalid address was allowed")
	}
}

func TestAnEmptyAllowlistAllowsEveryone(t *testing.T) {
	for _, p := range []*Prefixes{nil, MustParsePrefixes()} {
		if !p.Any() || !p.Allows(netip.MustParseAddr("203.0.113.9")) || !p.Allows(netip.MustParseAddr("2001:db8::9")) {
			t.Errorf("%v: an empty allowlist refused an address", p)
		}
		if p.Contains(netip.MustParseAddr("203.0.113.9")) {
			t.Error("an empty set contains an address")
		}
		if p.String() != "any" {
			t.Errorf("String = %q", p.String())
		}
	}
}

func TestWholeAddressFamilies(t *testing.T) {
	v4 := MustParsePrefixes("0.0.0.0/0")
	v6 := MustParsePrefixes("::/0")
	if !v4.Allows(netip.MustParseAddr("255.255.255.255")) || !v4.Allows(netip.MustParseAddr("::ffff:1.2.3.4")) || v4.Allows(netip.MustParseAddr("2001:db8::1")) {
		t.Error("0.0.0.0/0 must allow all of IPv4 and nothing of IPv6")
	}
	if !v6.Allows(netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")) || !v6.Allows(netip.MustParseAddr("::")) || v6.Allows(netip.MustParseAddr("1.2.3.4")) {
		t.Error("::/0 must allow all of IPv6 and no IPv4 peer")
	}
}

func TestOverlappingAndAdjacentPrefixesMerge(t *testing.T) {
	p := MustParsePrefixes("10.0.1.0/24", "10.0.0.0/24", "10.0.0.128/25", "10.0.3.0/24", "2001:db8::/33", "2001:db8:8000::/33", "2001:db8::5")
	if len(p.v4) != 2 || p.v4[0] != (span4{0x0a000000, 0x0a0001ff}) {
		t.Errorf("v4 spans %x", p.v4)
	}
	if len(p.v6) != 1 {
		t.Errorf("v6 spans %x", p.v6)
	}
	if !p.Allows(netip.MustParseAddr("10.0.1.255")) || p.Allows(netip.MustParseAddr("10.0.2.0")) || !p.Allows(netip.MustParseAddr("10.0.3.1")) {
		t.Error("merged spans answer wrongly")
	}
	if p.Len() != 7 || !strings.HasPrefix(p.String(), "10.0.1.0/24,10.0.0.0/24") {
		t.Errorf("entries as given: %d %s", p.Len(), p)
	}
}

func TestBadAllowlistEntriesNameTheEntry(t *testing.T) {
	for _, tc := range []struct {
		name, entry, want string
	}{
		{"host bits set", "10.0.0.1/8", "did you mean 10.0.0.0/8"},
		{"not an address", "example.com", "not an IP address"},
		{"a bad prefix length", "10.0.0.0/33", "not an IP prefix"},
		{"a zone", "fe80::1%eth0", "not an IP address"},
		{"an empty entry", " ", "empty entry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePrefixes([]string{"192.0.2.0/24", tc.entry})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "[1] ") {
				t.Fatalf("err = %v, want [1] ... %q", err, tc.want)
			}
		})
	}
	if _, err := ParsePrefixes(make([]string, MaxPrefixes+1)); err == nil {
		t.Error("an allowlist above MaxPrefixes was accepted")
	}
}

func TestContainsAllocatesNothing(t *testing.T) {
	p := MustParsePrefixes("10.0.0.0/8", "2001:db8::/32", "192.0.2.0/24")
	a4, a6 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")
	if n := testing.AllocsPerRun(100, func() { p.Allows(a4); p.Allows(a6) }); n != 0 {
		t.Fatalf("Allows allocated %v times", n)
	}
}

// naiveContains is the obvious reference: any prefix contains a.
func naiveContains(list []netip.Prefix, a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range list {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// lastAddr is the last address of pf.
func lastAddr(pf netip.Prefix) netip.Addr {
	b := pf.Addr().AsSlice()
	for i := pf.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func FuzzParsePrefixes(f *testing.F) {
	f.Add("10.0.0.0/8,192.0.2.7,2001:db8::/32", []byte{10, 1, 2, 3})
	f.Add("::ffff:10.0.0.0/104,::/0", []byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Add("0.0.0.0/0", []byte{255, 255, 255, 255})
	f.Add("10.0.0.1/8,, ,fe80::1%eth0", []byte{})
	f.Add("1.2.3.0/24,1.2.4.0/24,1.2.3.128/25", []byte{1, 2, 4, 255})
	f.Fuzz(func(t *testing.T, list string, addr []byte) {
		p, err := ParsePrefixes(strings.Split(list, ","))
		if err != nil {
			return
		}
		var a netip.Addr
		switch len(addr) {
		case 4:
			a = netip.AddrFrom4([4]byte(addr))
		case 16:
			a = netip.AddrFrom16([16]byte(addr))
		default:
			return
		}
		if got, want := p.Contains(a), naiveContains(p.list, a); got != want {
			t.Fatalf("%s contains %s: %v, the prefixes one by one say %v", p, a, got, want)
		}
		// Every prefix's first and last address and their neighbours.
		for _, pf := range p.list {
			first := pf.Addr()
			last := lastAddr(pf)
			for _, b := range []netip.Addr{first, last, first.Prev(), last.Next()} {
				if b.IsValid() && p.Contains(b) != naiveContains(p.list, b) {
					t.Fatalf("%s contains %s: %v, the prefixes one by one say %v", p, b, p.Contains(b), !p.Contains(b))
				}
			}
		}
		// The canonical form parses back to the same set.
		q, err := ParsePrefixes(strings.Split(p.String(), ","))
		if err != nil {
			t.Fatalf("canonical form %q: %v", p, err)
		}
		if q.Contains(a) != p.Contains(a) {
			t.Fatalf("%q and its canonical form disagree on %s", list, a)
		}
	})
}
