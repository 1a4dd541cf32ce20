package rdma

import (
	"testing"

	"github.com/dta-go/dta/wire/roce"
)

func TestRegisteredMRsHaveDistinctAlignedVAsAndRandomKeys(t *testing.T) {
	resp, err := NewResponder(testResponderConfig("127.0.0.1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Close()
	var mrs []MR
	for i, size := range []uint64{1, 4096, 5000, 3 << 20} {
		m, err := resp.RegisterMR(string(rune('a'+i)), newRegion(t, size), AccessRemoteWrite)
		if err != nil {
			t.Fatal(err)
		}
		if m.VA == 0 || m.VA%pageSize != 0 || m.RKey == 0 || m.Length != size {
			t.Errorf("MR %+v", m)
		}
		for _, o := range mrs {
			if m.RKey == o.RKey || m.VA < o.VA+o.Length && o.VA < m.VA+m.Length {
				t.Errorf("MRs %+v and %+v share a key or addresses", m, o)
			}
		}
		mrs = append(mrs, m)
	}
	if _, err := resp.RegisterMR("a", newRegion(t, 8), AccessRemoteWrite); err == nil {
		t.Error("a second MR named a was registered")
	}
	if _, err := resp.RegisterMR("z", newRegion(t, 8), 0); err == nil {
		t.Error("an MR without rights was registered")
	}
	if err := resp.DeregisterMR("b"); err != nil {
		t.Fatal(err)
	}
	if resp.mrs.Load().byKey[mrs[1].RKey] != nil {
		t.Error("deregistered MR still reachable")
	}
	if err := resp.DeregisterMR("b"); err == nil {
		t.Error("deregistered twice")
	}
	// Another responder picks other addresses and keys.
	other, err := NewResponder(testResponderConfig("127.0.0.1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	m, _ := other.RegisterMR("a", newRegion(t, 1), AccessRemoteWrite)
	if m.VA == mrs[0].VA && m.RKey == mrs[0].RKey {
		t.Error("two responders gave the same VA and key")
	}
}

func TestDefaultServiceID(t *testing.T) {
	if DefaultServiceID != roce.ServiceID(roce.PortSpaceTCP, roce.Port) {
		t.Errorf("DefaultServiceID %#x", DefaultServiceID)
	}
}
