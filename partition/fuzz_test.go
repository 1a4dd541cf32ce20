package partition_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/dta-go/dta/partition"
)

// FuzzParseMembers feeds collector lists from outside (a config file, a
// flag) to ParseMembers: it never panics, and a list it accepts names
// distinct members at distinct addresses with a port, which print back to a
// list that parses to the same members.
func FuzzParseMembers(f *testing.F) {
	for _, s := range []string{
		"192.0.2.10:4791", "c1=192.0.2.10:4791,c2=192.0.2.11:4791", "[2001:db8::1]:4791",
		"a=127.0.0.1:0", "a=127.0.0.1:1,b=127.0.0.1:1", " x = 10.0.0.1:4791 ", "=1.2.3.4:5", ",", "",
		"c1=192.0.2.10:4791,c1=192.0.2.11:4791", "[::ffff:1.2.3.4]:4791,1.2.3.4:4791",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := partition.ParseMembers(s)
		if err != nil {
			return
		}
		if len(ms) == 0 || len(ms) > partition.MaxMembers {
			t.Fatalf("%q: %d members accepted", s, len(ms))
		}
		var parts []string
		names, addrs := map[string]bool{}, map[string]bool{}
		for _, m := range ms {
			if m.Name == "" || names[m.Name] || addrs[m.Addr.String()] || m.Addr.Port() == 0 {
				t.Fatalf("%q: member %+v is empty, repeated or has port 0", s, m)
			}
			names[m.Name], addrs[m.Addr.String()] = true, true
			parts = append(parts, m.Name+"="+m.Addr.String())
		}
		again, err := partition.ParseMembers(strings.Join(parts, ","))
		if err != nil || !slices.Equal(again, ms) {
			t.Fatalf("%q: printed as %q, parsed back to %v, %v", s, strings.Join(parts, ","), again, err)
		}
	})
}
