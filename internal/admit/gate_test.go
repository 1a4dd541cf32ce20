package admit

import (
	"net/netip"
	"sync"
	"testing"
	"time"
)

var (
	src1 = netip.MustParseAddr("192.0.2.1")
	src2 = netip.MustParseAddr("192.0.2.2")
	out  = netip.MustParseAddr("203.0.113.1")
)

func mustGate(t *testing.T, p Policy, size int) *Gate {
	t.Helper()
	g, err := NewGate(p, size)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestAnOpenGateAdmitsEverything(t *testing.T) {
	g := mustGate(t, Policy{}, 64)
	for _, a := range []netip.Addr{src1, out, netip.MustParseAddr("2001:db8::1"), {}} {
		if v := g.Admit(a, 0); v != Admitted {
			t.Errorf("%s: %v", a, v)
		}
	}
	if g.table.Load() != nil {
		t.Error("a gate without a rate allocated its source table")
	}
}

func TestTheAllowlistRefusesOtherSources(t *testing.T) {
	g := mustGate(t, Policy{Allow: MustParsePrefixes("192.0.2.0/24", "2001:db8::/32")}, 64)
	for _, tc := range []struct {
		addr string
		want Verdict
	}{
		{"192.0.2.200", Admitted},
		{"::ffff:192.0.2.200", Admitted},
		{"203.0.113.1", NotAllowed},
		{"2001:db8::9", Admitted},
		{"2001:db9::9", NotAllowed},
	} {
		if v := g.Admit(netip.MustParseAddr(tc.addr), 0); v != tc.want {
			t.Errorf("%s: %v, want %v", tc.addr, v, tc.want)
		}
	}
}

func TestASourceGetsItsBurstThenItsRate(t *testing.T) {
	// 1000 datagrams/s (one per ms), bursts of 5.
	g := mustGate(t, Policy{Rate: 1000, Burst: 5}, 64)
	now := int64(time.Hour)
	for i := range 5 {
		if v := g.Admit(src1, now); v != Admitted {
			t.Fatalf("datagram %d of the burst: %v", i+1, v)
		}
	}
	if v := g.Admit(src1, now); v != RateLimited {
		t.Fatalf("the sixth datagram at once: %v", v)
	}
	if v := g.Admit(src2, now); v != Admitted {
		t.Fatalf("another source is limited by the first: %v", v)
	}
	// One interval later exactly one more is let in.
	now += int64(time.Millisecond)
	if v := g.Admit(src1, now); v != Admitted {
		t.Fatalf("after 1 ms: %v", v)
	}
	if v := g.Admit(src1, now); v != RateLimited {
		t.Fatalf("a second datagram after 1 ms: %v", v)
	}
	// A long pause refills the bucket to its depth, not beyond.
	now += int64(time.Minute)
	n := 0
	for g.Admit(src1, now) == Admitted {
		n++
	}
	if n != 5 {
		t.Fatalf("after a pause %d datagrams were admitted at once, want the burst of 5", n)
	}
	// At a steady 1000/s nothing is refused.
	for i := range 10000 {
		now += int64(time.Millisecond)
		if v := g.Admit(src2, now); v != Admitted {
			t.Fatalf("datagram %d at the exact rate: %v", i, v)
		}
	}
}

func TestBurstDefaultsToOneSecondOfRate(t *testing.T) {
	g := mustGate(t, Policy{Rate: 50}, 64)
	n := 0
	for g.Admit(src1, 1) == Admitted {
		n++
	}
	if n != 50 {
		t.Fatalf("burst %d, want 50", n)
	}
}

func TestTheAllowlistIsCheckedBeforeTheRate(t *testing.T) {
	g := mustGate(t, Policy{Allow: MustParsePrefixes("192.0.2.0/24"), Rate: 1, Burst: 1}, 64)
	if v := g.Admit(out, 0); v != NotAllowed {
		t.Fatalf("outside source: %v", v)
	}
	if g.stats.Sources.Load() != 0 {
		t.Fatal("a refused source took a slot in the rate table")
	}
}

func TestASpoofingFloodCannotGrowTheTable(t *testing.T) {
	g := mustGate(t, Policy{Rate: 10, Burst: 1}, 1024)
	now := int64(time.Hour)
	// A real source keeps within its rate while a million spoofed ones pass.
	var b [4]byte
	for i := range 1 << 20 {
		b[0], b[1], b[2], b[3] = 10, byte(i>>16), byte(i>>8), byte(i)
		g.Admit(netip.AddrFrom4(b), now)
	}
	if n := g.stats.Sources.Load(); n > int64(g.TableSize()) || g.TableSize() != 1024 {
		t.Fatalf("%d sources tracked in a table of %d", n, g.TableSize())
	}
	if g.stats.Evictions.Load() == 0 {
		t.Fatal("a million sources in 1024 slots evicted nobody")
	}
}

func TestEvictionPrefersFullBuckets(t *testing.T) {
	// One set of 8 ways: the smallest table.
	g := mustGate(t, Policy{Rate: 1, Burst: 1}, ways)
	now := int64(time.Hour)
	for i := range ways {
		g.Admit(netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), now) // each spends its one token
	}
	// A ninth source while all buckets are spent: one source's state is lost.
	g.Admit(netip.AddrFrom4([4]byte{198, 51, 100, 1}), now)
	if e := g.stats.Evictions.Load(); e != 1 {
		t.Fatalf("%d evictions, want 1", e)
	}
	// Two seconds later every bucket has refilled: a tenth source takes a
	// slot without losing anything.
	now += int64(2 * time.Second)
	g.Admit(netip.AddrFrom4([4]byte{198, 51, 100, 2}), now)
	if e := g.stats.Evictions.Load(); e != 1 {
		t.Fatalf("%d evictions after a source with a full bucket was replaced, want still 1", e)
	}
	if n := g.stats.Sources.Load(); n != ways {
		t.Fatalf("%d sources tracked in %d slots", n, ways)
	}
}

func TestAdmitAllocatesNothing(t *testing.T) {
	g := mustGate(t, Policy{Allow: MustParsePrefixes("192.0.2.0/24", "2001:db8::/32"), Rate: 1e6}, 1024)
	now := int64(0)
	a6 := netip.MustParseAddr("2001:db8::1")
	if n := testing.AllocsPerRun(1000, func() {
		now += 1e6
		g.Admit(src1, now)
		g.Admit(a6, now)
		g.Admit(out, now)
	}); n != 0 {
		t.Fatalf("Admit allocated %v times", n)
	}
}

func TestAPolicySwapJudgesEachDatagramByOneWholePolicy(t *testing.T) {
	// Policy A admits only src1, policy B only src2; whatever the timing of
	// the swap, no datagram is admitted for both or refused by both.
	a := Policy{Allow: MustParsePrefixes("192.0.2.1")}
	b := Policy{Allow: MustParsePrefixes("192.0.2.2")}
	g := mustGate(t, a, 64)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%2 == 0 {
				g.SetPolicy(b)
			} else {
				g.SetPolicy(a)
			}
		}
	}()
	for range 100000 {
		c := g.cur.Load()
		v1 := c.policy.Allow.Allows(src1)
		v2 := c.policy.Allow.Allows(src2)
		if v1 == v2 {
			t.Fatal("a policy in force admits both or neither source")
		}
		g.Admit(src1, 0)
	}
	close(stop)
	wg.Wait()
}

func TestBadPoliciesAreRefusedAndTheOldOneStays(t *testing.T) {
	g := mustGate(t, Policy{Rate: 10}, 64)
	for _, p := range []Policy{{Rate: -1}, {Rate: MaxRate + 1}, {Burst: -1}, {Burst: MaxBurst + 1}} {
		if err := g.SetPolicy(p); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
	if g.Policy().Rate != 10 {
		t.Fatalf("a refused policy replaced the old one: %+v", g.Policy())
	}
	for _, size := range []int{0, 7, MaxTableSize + 1} {
		if _, err := NewGate(Policy{}, size); err == nil {
			t.Errorf("table size %d accepted", size)
		}
	}
}

func BenchmarkAdmit(b *testing.B) {
	for _, tc := range []struct {
		name string
		p    Policy
	}{
		{"open", Policy{}},
		{"allowlist", Policy{Allow: MustParsePrefixes("10.0.0.0/8", "192.0.2.0/24", "2001:db8::/32")}},
		{"allowlist+rate", Policy{Allow: MustParsePrefixes("10.0.0.0/8", "192.0.2.0/24", "2001:db8::/32"), Rate: MaxRate}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			g, _ := NewGate(tc.p, 1<<16)
			now := int64(0)
			b.ReportAllocs()
			for b.Loop() {
				now++
				g.Admit(src1, now)
			}
		})
	}
}
