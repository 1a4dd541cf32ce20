package uplink

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/rdma"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/store/storetest"
)

// collector is a responder advertising small stores, as internal/collector
// sets one up.
type collector struct {
	resp *rdma.Responder
	stop context.CancelFunc
	done chan error
}

func startCollector(t *testing.T, addr string, cfgs []store.Config) *collector {
	t.Helper()
	descs, err := store.DescribeAll(cfgs)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := store.Open(descs, region.Config{HugePages: region.HugePagesOff}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	rc := rdma.DefaultResponderConfig()
	rc.Addr = addr
	resp, err := rdma.NewResponder(rc, nil)
	if err != nil {
		t.Fatal(err)
	}
	var adv []store.Advertised
	for _, s := range cat.Stores() {
		mr, err := resp.RegisterMR(s.Name, s.Region, rdma.AccessRemoteWrite|rdma.AccessRemoteAtomic)
		if err != nil {
			t.Fatal(err)
		}
		adv = append(adv, store.Advertised{Descriptor: s.Descriptor, VA: mr.VA, RKey: mr.RKey, Length: mr.Length})
	}
	b, err := store.AppendAdvertisement(nil, adv)
	if err != nil {
		t.Fatal(err)
	}
	resp.SetAdvertisement(b)
	ctx, cancel := context.WithCancel(context.Background())
	c := &collector{resp: resp, stop: cancel, done: make(chan error, 1)}
	go func() { c.done <- resp.Run(ctx) }()
	t.Cleanup(c.close)
	return c
}

func (c *collector) close() {
	c.stop()
	c.resp.Close()
	<-c.done
	c.done <- nil // later closes return at once
}

// smallStores are the collector's stores in these tests.
func smallStores() []store.Config { return storetest.Configs() }

func dial(t *testing.T, addr netip.AddrPort) *Uplink {
	t.Helper()
	cfg := rdma.DefaultRequesterConfig()
	cfg.Collector = addr
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u, err := Dial(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	return u
}

func TestUplinkLearnsTheStoresFromTheAdvertisement(t *testing.T) {
	c := startCollector(t, "127.0.0.1:0", smallStores())
	u := dial(t, c.resp.LocalAddr())
	want, _ := store.DescribeAll(smallStores())
	if len(u.Descriptors()) != len(want) {
		t.Fatalf("%d stores, want %d", len(u.Descriptors()), len(want))
	}
	for i := range want {
		if u.Descriptors()[i] != want[i] {
			t.Errorf("store %d: %+v, want %+v", i, u.Descriptors()[i], want[i])
		}
	}
}

func TestUplinkTellsARestartedCollectorFromChangedStores(t *testing.T) {
	t.Run("the same stores under new keys restart the append heads", func(t *testing.T) {
		c := startCollector(t, "127.0.0.1:0", smallStores())
		addr := c.resp.LocalAddr()
		u := dial(t, addr)
		restarted := make(chan struct{}, 1)
		u.OnRestart(func() { restarted <- struct{}{} })
		c.close()
		startCollector(t, addr.String(), smallStores())
		select {
		case <-restarted:
		case err := <-u.Fatal():
			t.Fatalf("the same stores were taken for changed ones: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("no restart seen within 10s")
		}
	})
	t.Run("different stores stop the translator", func(t *testing.T) {
		c := startCollector(t, "127.0.0.1:0", smallStores())
		addr := c.resp.LocalAddr()
		u := dial(t, addr)
		c.close()
		changed := smallStores()
		changed[0].Slots = 2048
		startCollector(t, addr.String(), changed)
		select {
		case err := <-u.Fatal():
			if !errors.Is(err, ErrStoresChanged) {
				t.Fatalf("err = %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no fatal error within 10s")
		}
	})
}
