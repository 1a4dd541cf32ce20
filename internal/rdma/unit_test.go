package rdma

import (
	"testing"
	"time"

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

func TestTokenBucket(t *testing.T) {
	if newTokenBucket(0, 10, 0) != nil {
		t.Fatal("rate 0 should mean no bucket")
	}
	b := newTokenBucket(1000, 10, 0) // 1000/s, burst 10
	var waited time.Duration
	for range 10 {
		waited += b.take(1, 0)
	}
	if waited != 0 {
		t.Errorf("the burst waited %v", waited)
	}
	if d := b.take(1, 0); d < 900*time.Microsecond || d > 1100*time.Microsecond {
		t.Errorf("the 11th packet waits %v, want 1ms", d)
	}
	// After a second the bucket is full again, not fuller.
	if d := b.take(10, int64(time.Second)); d != 0 {
		t.Errorf("after a second, a burst waits %v", d)
	}
	if d := b.take(1, int64(time.Second)); d == 0 {
		t.Error("the bucket holds more than its burst")
	}
}

func TestDefaultServiceID(t *testing.T) {
	if DefaultServiceID != roce.ServiceID(roce.PortSpaceTCP, roce.Port) {
		t.Errorf("DefaultServiceID %#x", DefaultServiceID)
	}
}

func TestTimeoutCode(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want uint8
	}{{0, 0}, {4096 * time.Nanosecond, 0}, {5 * time.Microsecond, 1}, {100 * time.Millisecond, 15}, {time.Hour, 30}, {100 * time.Hour, 31}} {
		if got := timeoutCode(c.d); got != c.want {
			t.Errorf("timeoutCode(%v) = %d, want %d", c.d, got, c.want)
		}
	}
}
