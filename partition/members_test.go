package partition_test

import (
	"errors"
	"net/netip"
	"reflect"
	"testing"

	"github.com/dta-go/dta/partition"
)

func TestParseMembersNamesByAddressUnlessNamed(t *testing.T) {
	ms, err := partition.ParseMembers(" 192.0.2.10:4791, c2=192.0.2.11:4791 ,[2001:db8::1]:4791")
	if err != nil {
		t.Fatal(err)
	}
	want := []partition.Member{
		{Name: "192.0.2.10:4791", Addr: netip.MustParseAddrPort("192.0.2.10:4791")},
		{Name: "c2", Addr: netip.MustParseAddrPort("192.0.2.11:4791")},
		{Name: "[2001:db8::1]:4791", Addr: netip.MustParseAddrPort("[2001:db8::1]:4791")},
	}
	if !reflect.DeepEqual(ms, want) {
		t.Fatalf("got %+v\nwant %+v", ms, want)
	}
	m, err := partition.FromMembers(ms)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.Names(), []string{"192.0.2.10:4791", "c2", "[2001:db8::1]:4791"}) {
		t.Errorf("map names %v", m.Names())
	}
}

func TestParseMembersRefusesBadLists(t *testing.T) {
	if _, err := partition.ParseMembers("  "); !errors.Is(err, partition.ErrNoMembers) {
		t.Errorf("empty list: %v", err)
	}
	for _, s := range []string{
		"collector.example:4791",                   // a host name, not an IP
		"192.0.2.10",                               // no port
		"c1=192.0.2.10:4791,c1=192.0.2.11:4791",    // a repeated name
		"192.0.2.10:4791,192.0.2.10:4791",          // a repeated address, hence name
		"=192.0.2.10:4791",                         // an empty name
		"192.0.2.10:0",                             // port 0
		"a=192.0.2.10:4791,b=192.0.2.10:4791",      // one address under two names
		"[::ffff:192.0.2.10]:4791,192.0.2.10:4791", // one address in two forms
	} {
		if _, err := partition.ParseMembers(s); err == nil {
			t.Errorf("%q was accepted", s)
		}
	}
}
