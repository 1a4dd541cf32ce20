package rdma

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"

	"github.com/dta-go/dta/internal/memop"
)

func TestWritesLandByteExact(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "::1"} {
		for _, mtu := range []int{256, 1024, 4096} {
			t.Run(fmt.Sprintf("%s/mtu%d", host, mtu), func(t *testing.T) {
				rcfg := testResponderConfig(host)
				resp := startResponder(t, rcfg)
				reg := newRegion(t, 1<<20)
				m, err := resp.RegisterMR("a", reg, AccessRemoteWrite|AccessRemoteAtomic)
				if err != nil {
					t.Fatal(err)
				}
				resp.SetAdvertisement([]byte("hello"))
				cfg := testRequesterConfig(resp.LocalAddr())
				cfg.MTU = mtu
				q := dial(t, cfg)
				if got := string(q.Advertisement()); got != "hello" {
					t.Fatalf("advertisement %q, want %q", got, "hello")
				}
				q.SetTargets([]Target{targetOf(m)})
				want := make([]byte, reg.Size())
				rng := rand.New(rand.NewPCG(1, uint64(mtu)))
				off := uint64(0)
				var ops []memop.Op
				for _, n := range []int{1, 2, 3, 7, 8, mtu - 1, mtu, mtu + 1, 3*mtu + 5, 17} {
					data := make([]byte, n)
					for i := range data {
						data[i] = byte(rng.Uint32())
					}
					copy(want[off:], data)
					ops = append(ops, memop.Op{Kind: memop.Write, Offset: off, Data: data})
					off += uint64(n) + 3
				}
				if err := q.Apply(ops); err != nil {
					t.Fatal(err)
				}
				flush(t, q)
				if got := snapshot(t, reg); !bytes.Equal(got, want) {
					t.Fatalf("region differs from the writes")
				}
				if n := resp.Stats().Writes.Load(); n != uint64(len(ops)) {
					t.Errorf("responder counted %d writes, want %d", n, len(ops))
				}
			})
		}
	}
}

func TestFetchAddCountersAndImmediate(t *testing.T) {
	resp := startResponder(t, testResponderConfig("127.0.0.1"))
	reg := newRegion(t, 4096)
	m, err := resp.RegisterMR("c", reg, AccessRemoteWrite|AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var imms []Immediate
	resp.OnImmediate(func(im Immediate) {
		mu.Lock()
		imms = append(imms, im)
		mu.Unlock()
	})
	q := dial(t, testRequesterConfig(resp.LocalAddr()))
	q.SetTargets([]Target{targetOf(m)})
	var want [16]uint64
	for i := range 500 {
		slot := uint64(i % 16)
		d := uint64(i*7 + 1)
		want[slot] += d
		if err := q.Apply([]memop.Op{{Kind: memop.FetchAdd, Offset: slot * 8, Delta: d}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Apply([]memop.Op{{Kind: memop.WriteImm, Offset: 1024, Data: []byte("imm!"), Imm: 0xdeadbeef}}); err != nil {
		t.Fatal(err)
	}
	flush(t, q)
	for i, w := range want {
		got, _ := reg.Load64(uint64(i) * 8)
		if got != w {
			t.Errorf("counter %d = %d, want %d", i, got, w)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(imms) != 1 || imms[0] != (Immediate{QPN: imms[0].QPN, MR: "c", Offset: 1024, Length: 4, Imm: 0xdeadbeef}) {
		t.Fatalf("immediates %+v", imms)
	}
	// Each FETCH_ADD executed once; a retransmission (a loaded machine may
	// outlast the ACK timeout) draws a replayed ATOMIC ACK, never a second
	// add.
	if got := resp.Stats().Atomics.Load(); got != 500 {
		t.Errorf("responder executed %d atomics, want 500", got)
	}
	if got, sent := q.Stats().AtomicACKs.Load(), resp.Stats().AtomicACKs.Load(); got < 500 || got > sent {
		t.Errorf("requester got %d atomic ACKs, want 500 or more and at most the %d sent", got, sent)
	}
	var b [4]byte
	reg.Read(1024, b[:])
	if string(b[:]) != "imm!" {
		t.Errorf("imm write landed as %q", b)
	}
}

// TestWildcardResponder binds the responder to unspecified addresses, so
// that the destination of each packet comes from IP_PKTINFO (IPv4 socket)
// or IPV6_PKTINFO (dual-stack socket, IPv4 peers v4-mapped) and answers
// leave from it.
func TestWildcardResponder(t *testing.T) {
	for _, c := range []struct{ bind, peer string }{
		{"0.0.0.0:0", "127.0.0.1"},
		{"[::]:0", "127.0.0.1"},
		{"[::]:0", "::1"},
	} {
		t.Run(c.bind+"/"+c.peer, func(t *testing.T) {
			reg := newRegion(t, 4096)
			cfg := testResponderConfig("127.0.0.1")
			cfg.Addr = c.bind
			resp := startResponder(t, cfg)
			m, _ := resp.RegisterMR("m", reg, AccessRemoteWrite|AccessRemoteAtomic)
			to := netip.AddrPortFrom(netip.MustParseAddr(c.peer), resp.LocalAddr().Port())
			q := dial(t, testRequesterConfig(to))
			q.SetTargets([]Target{targetOf(m)})
			if err := q.Apply([]memop.Op{{Kind: memop.FetchAdd, Offset: 8, Delta: 3}, {Kind: memop.Write, Offset: 0, Data: []byte("wild")}}); err != nil {
				t.Fatal(err)
			}
			flush(t, q)
			if v, _ := reg.Load64(8); v != 3 {
				t.Errorf("counter %d", v)
			}
			if resp.Stats().BadICRC.Load() != 0 || q.Stats().BadICRC.Load() != 0 {
				t.Errorf("bad ICRCs: responder %d requester %d", resp.Stats().BadICRC.Load(), q.Stats().BadICRC.Load())
			}
		})
	}
}
