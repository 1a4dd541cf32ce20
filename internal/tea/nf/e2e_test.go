package nf_test

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/rdma"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/tea"
	"github.com/dta-go/dta/internal/tea/nf"
	"github.com/dta-go/dta/internal/tea/remote"
	"github.com/dta-go/dta/rdma/requester"
)

// backend is where a test's table lives.
type backend struct {
	tab     *tea.Table
	p       *tea.Placement
	readers []tea.Reader
	timeout time.Duration
	reads   func() uint64 // RDMA READs the responder executed; nil locally
	hot     uint32        // lookups of a key before the engine's digest reports it; 0: never
}

// natSpec is the NAT table of the tests: 5-tuple keys, address values,
// scratchpads for the parked packets.
var natSpec = tea.Spec{Buckets: 1024, Cells: 4, KeySize: 13, ValueSize: 6, Scratchpad: 256, Hash: tea.CRC64}

// localBackend keeps the table in this process's memory (the server-based
// baseline).
func localBackend(tb testing.TB, spec tea.Spec) backend {
	p, err := tea.PlaceEqual(spec, 1, 1)
	if err != nil {
		tb.Fatal(err)
	}
	mem := tea.NewLocalMemory(spec.TableSize())
	tab, err := tea.NewTable(spec, mem, tea.TableConfig{MaxTries: 20, Seed: 1})
	if err != nil {
		tb.Fatal(err)
	}
	return backend{tab: tab, p: p, readers: []tea.Reader{tea.MemoryReader{Mem: mem}}, timeout: time.Second}
}

// rdmaBackend keeps the table in a region registered with a software
// RoCEv2 responder on loopback, written and read over RDMA.
func rdmaBackend(tb testing.TB, spec tea.Spec) backend { return rdmaBackendCache(tb, spec, 0) }

// rdmaCacheBackend is rdmaBackend with TEA's popularity cache: 64 entries,
// filled by promoting the keys the engine's sketch reports after 16
// lookups (see promote).
func rdmaCacheBackend(tb testing.TB, spec tea.Spec) backend {
	be := rdmaBackendCache(tb, spec, 64)
	be.hot = 16
	return be
}

func rdmaBackendCache(tb testing.TB, spec tea.Spec, cacheSize int) backend {
	p, err := tea.PlaceEqual(spec, 1, 1)
	if err != nil {
		tb.Fatal(err)
	}
	rc := region.DefaultConfig()
	rc.HugePages, rc.Size = region.HugePagesOff, p.Used(0)
	mem, err := region.New(rc, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { mem.Close() })
	cfg := rdma.DefaultResponderConfig()
	cfg.Addr = "127.0.0.1:0"
	resp, err := rdma.NewResponder(cfg, nil)
	if err != nil {
		tb.Fatal(err)
	}
	mr, err := resp.RegisterMR("tea", mem, rdma.AccessRemoteWrite|rdma.AccessRemoteRead)
	if err != nil {
		tb.Fatal(err)
	}
	resp.SetAdvertisement([]byte("tea"))
	done := make(chan error, 1)
	go func() { done <- resp.Run(context.Background()) }()
	tb.Cleanup(func() { resp.Close(); <-done })
	qc := requester.DefaultConfig()
	qc.Collector = resp.LocalAddr()
	qc.Timeout = 50 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q, err := requester.Dial(ctx, qc, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { q.Close() })
	q.SetTargets([]requester.Target{{VA: mr.VA, RKey: mr.RKey, Length: mr.Length}})
	tab, err := tea.NewTable(spec, remote.NewMemory(q, 0), tea.TableConfig{MaxTries: 20, CacheSize: cacheSize, Seed: 1})
	if err != nil {
		tb.Fatal(err)
	}
	srv := remote.NewServer(q, 0)
	tb.Cleanup(srv.Close)
	return backend{tab: tab, p: p, readers: []tea.Reader{srv}, timeout: 200 * time.Millisecond,
		reads: func() uint64 { return resp.Stats().Reads.Load() }}
}

func newNF(tb testing.TB, kind nf.Kind, be backend, t *topo) *nf.NF {
	tb.Helper()
	n, err := nf.New(nf.Config{Kind: kind, Placement: be.p, Readers: be.readers, Stash: be.tab.Stash(), Cache: be.tab.Cache(),
		Engine: tea.Config{Timeout: be.timeout, HotThreshold: be.hot}, Send: nf.Sender(t.in, t.out)})
	if err != nil {
		tb.Fatal(err)
	}
	if be.hot > 0 {
		promote(tb, n, be.tab)
	}
	return n
}

// promote is the control plane's cache loop: every key the engine's
// digest reports popular is promoted into the table's cache (the coldest
// entry leaving when it is full), until the test ends.
func promote(tb testing.TB, n *nf.NF, tab *tea.Table) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		eng := n.Engine()
		for {
			select {
			case d := <-eng.Digests():
				tab.Promote(d.Key(), eng.Estimate)
			case <-stop:
				return
			}
		}
	}()
	tb.Cleanup(func() { close(stop); <-done })
}

// exchange sends one datagram from the client and has the server answer
// it; it returns the source the server saw and whether the client got the
// answer from the server's address.
func exchange(t *testing.T, cli, srv *net.UDPConn, payload string) (seen netip.AddrPort, ok bool) {
	t.Helper()
	if _, err := cli.WriteToUDPAddrPort([]byte(payload), serverAddr); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1500)
	srv.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	n, from, err := srv.ReadFromUDPAddrPort(buf)
	if err != nil {
		return netip.AddrPort{}, false
	}
	if string(buf[:n]) != payload {
		t.Fatalf("the server got %q, want %q", buf[:n], payload)
	}
	if _, err := srv.WriteToUDPAddrPort([]byte("re:"+payload), from); err != nil {
		t.Fatal(err)
	}
	cli.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	n, back, err := cli.ReadFromUDPAddrPort(buf)
	if err != nil {
		return from, false
	}
	return from, back == serverAddr && string(buf[:n]) == "re:"+payload
}

func TestNATTranslatesRealPacketsBetweenNamespacesUntilItsEntryIsDeleted(t *testing.T) {
	for _, c := range []struct {
		name string
		be   func(testing.TB, tea.Spec) backend
	}{
		{"with the table in local memory", localBackend},
		{"with the table in a server's memory over RDMA", rdmaBackend},
	} {
		t.Run(c.name, func(t *testing.T) {
			tp := newTopo(t)
			be := c.be(t, natSpec)
			es := nf.NATEntries(nf.ProtoUDP, clientAddr, publicAddr, serverAddr)
			for _, e := range es {
				if err := be.tab.Insert(e.Key, e.Value); err != nil {
					t.Fatal(err)
				}
			}
			n := newNF(t, nf.NAT, be, tp)
			tp.serve(t, n)
			cli, srv := listen(t, tp.cli, clientAddr), listen(t, tp.srv, serverAddr)
			var reads0 uint64
			if be.reads != nil {
				reads0 = be.reads()
			}
			const rounds = 20
			for i := range rounds {
				seen, ok := exchange(t, cli, srv, "ping")
				if seen != publicAddr || !ok {
					t.Fatalf("round %d: the server saw the client as %v (want %v), reply translated back: %v; stats %+v",
						i, seen, publicAddr, ok, statsOf(n))
				}
			}
			st := n.Stats()
			// The NF counts a packet after sending it on: the last reply can
			// reach the client a moment before its count.
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if st.Translated[nf.Outbound].Load() >= rounds && st.Translated[nf.Inbound].Load() >= rounds {
					break
				}
			}
			if got := st.Translated[nf.Outbound].Load(); got != rounds {
				t.Errorf("%d packets translated outbound, want %d", got, rounds)
			}
			if got := st.Translated[nf.Inbound].Load(); got != rounds {
				t.Errorf("%d packets translated inbound, want %d", got, rounds)
			}
			if be.reads != nil {
				if got := be.reads() - reads0; got != 2*rounds {
					t.Errorf("the responder executed %d RDMA READs for %d lookups", got, 2*rounds)
				}
			}
			// Deleting the outbound entry stops the translation: the
			// server hears nothing, and the NF counts the drops.
			if err := be.tab.Delete(es[0].Key); err != nil {
				t.Fatal(err)
			}
			noEntry := st.NoEntry.Load()
			const dropped = 5
			for i := range dropped {
				if seen, _ := exchange(t, cli, srv, "after delete"); seen.IsValid() {
					t.Fatalf("packet %d after the delete reached the server from %v", i, seen)
				}
			}
			if got := st.NoEntry.Load() - noEntry; got != dropped {
				t.Errorf("%d packets dropped for want of an entry, want %d", got, dropped)
			}
			t.Logf("%+v", statsOf(n))
		})
	}
}

// statsOf copies an NF's counters for printing.
func statsOf(n *nf.NF) map[string]uint64 {
	s := n.Stats()
	return map[string]uint64{"received": s.Received.Load(), "out": s.Translated[0].Load(), "in": s.Translated[1].Load(),
		"no_entry": s.NoEntry.Load(), "malformed": s.Malformed.Load(), "unsupported": s.Unsupported.Load(),
		"busy": s.Busy.Load(), "unavailable": s.Unavailable.Load(), "lost": s.Lost.Load(), "send_errors": s.SendErrors.Load()}
}

func TestTheLoadBalancerSendsRealPacketsForAVIPToItsBackend(t *testing.T) {
	for _, c := range []struct {
		name string
		be   func(testing.TB, tea.Spec) backend
	}{
		{"with the table in local memory", localBackend},
		{"with the table in a server's memory over RDMA", rdmaBackend},
	} {
		t.Run(c.name, func(t *testing.T) {
			tp := newTopo(t)
			be := c.be(t, tea.Spec{Buckets: 64, Cells: 4, KeySize: 7, ValueSize: 6, Scratchpad: 256, Hash: tea.CRC64})
			vip := netip.MustParseAddrPort("198.51.100.10:80")
			for _, e := range nf.LBEntries(nf.ProtoUDP, vip, serverAddr) {
				if err := be.tab.Insert(e.Key, e.Value); err != nil {
					t.Fatal(err)
				}
			}
			n := newNF(t, nf.LB, be, tp)
			tp.serve(t, n)
			cli, srv := listen(t, tp.cli, clientAddr), listen(t, tp.srv, serverAddr)
			buf := make([]byte, 1500)
			for i := range 10 {
				if _, err := cli.WriteToUDPAddrPort([]byte("req"), vip); err != nil {
					t.Fatal(err)
				}
				srv.SetReadDeadline(time.Now().Add(time.Second))
				_, from, err := srv.ReadFromUDPAddrPort(buf)
				if err != nil || from != clientAddr {
					t.Fatalf("request %d: the backend got one from %v (%v), want %v; %v", i, from, err, clientAddr, statsOf(n))
				}
				srv.WriteToUDPAddrPort([]byte("resp"), from)
				cli.SetReadDeadline(time.Now().Add(time.Second))
				_, back, err := cli.ReadFromUDPAddrPort(buf)
				if err != nil || back != vip {
					t.Fatalf("reply %d came from %v (%v), want the VIP %v; %v", i, back, err, vip, statsOf(n))
				}
			}
		})
	}
}
