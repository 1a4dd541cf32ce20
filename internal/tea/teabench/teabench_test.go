package teabench_test

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/tea"
	"github.com/dta-go/dta/internal/tea/teabench"
)

func TestZipfDrawsRanksWithTheRightFrequencies(t *testing.T) {
	for _, alpha := range []float64{0, 0.9, 0.99, 1.2} {
		z, err := teabench.NewZipf(1000, alpha, 1)
		if err != nil {
			t.Fatal(err)
		}
		var h float64
		for i := 1; i <= 1000; i++ {
			h += math.Pow(float64(i), -alpha)
		}
		const n = 200000
		top := 0
		for range n {
			if r := z.Next(); r == 0 {
				top++
			} else if r < 0 || r >= 1000 {
				t.Fatalf("rank %d", r)
			}
		}
		want := 1 / h
		if got := float64(top) / n; math.Abs(got-want) > 4*math.Sqrt(want/n)+1e-4 {
			t.Errorf("α %v: rank 0 drawn %.4f of the time, want %.4f", alpha, got, want)
		}
		if got := z.TopShare(1); math.Abs(got-want) > 1e-12 {
			t.Errorf("α %v: TopShare(1) = %v, want %v", alpha, got, want)
		}
	}
	if _, err := teabench.NewZipf(10, -1, 1); err == nil {
		t.Error("a negative α was accepted")
	}
}

func TestFiveTuplesAreDistinctTCPOrUDP(t *testing.T) {
	b := teabench.FiveTuples(5000, 13, 3)
	seen := map[string]bool{}
	for i := range 5000 {
		k := b[i*13 : (i+1)*13]
		if seen[string(k)] || (k[12] != 6 && k[12] != 17) {
			t.Fatalf("key %d = %x", i, k)
		}
		seen[string(k)] = true
	}
	if !bytes.Equal(b, teabench.FiveTuples(5000, 13, 3)) {
		t.Error("the same seed gave other keys")
	}
}

// keysWithHomes returns one key per entry of homes, each with that home.
func keysWithHomes(spec tea.Spec, homes []uint64) []byte {
	var out []byte
	pool := teabench.FiveTuples(20000, spec.KeySize, 9)
	used := map[int]bool{}
	for _, h := range homes {
		for i := range 20000 {
			k := pool[i*spec.KeySize : (i+1)*spec.KeySize]
			if !used[i] && spec.HomeOf(k) == h {
				used[i] = true
				out = append(out, k...)
				break
			}
		}
	}
	return out
}

func TestMinStashCountsWhatNoPlacementCanFit(t *testing.T) {
	spec := tea.Spec{Buckets: 4, Cells: 1, KeySize: 13, Hash: tea.CRC64}
	for _, tc := range []struct {
		name  string
		homes []uint64
		want  int
	}{
		{"one key per bucket fits", []uint64{0, 1, 2, 3}, 0},
		{"two keys of one home fill it and the next", []uint64{2, 2}, 0},
		{"a third key of that home cannot fit", []uint64{2, 2, 2}, 1},
		{"keys pushed around the end wrap into bucket 0", []uint64{3, 3, 1}, 0},
		{"five keys in four cells leave one", []uint64{0, 1, 1, 2, 3}, 1},
		{"two crowded homes three cells apart both fit", []uint64{1, 1, 3, 3}, 0},
		{"four keys whose homes reach only three cells leave one", []uint64{1, 1, 2, 2}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := teabench.MinStash(spec, keysWithHomes(spec, tc.homes)); got != tc.want {
				t.Errorf("MinStash = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestAlgorithm1NeverStashesLessThanTheBound(t *testing.T) {
	c := teabench.DefaultStashConfig()
	c.Entries = 1 << 13
	rows, err := teabench.StashSweep(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(c.Cells)*len(c.Loads) {
		t.Fatalf("%d rows", len(rows))
	}
	for i, r := range rows {
		if r.Fraction < r.MinFraction {
			t.Errorf("cells %d load %.2f: stash %.5f below the bound %.5f", r.Cells, r.Load, r.Fraction, r.MinFraction)
		}
		if i > 0 && rows[i-1].Cells == r.Cells && r.Stashed < rows[i-1].Stashed-rows[i-1].Stashed/4 {
			t.Errorf("cells %d: the stash shrank from %d to %d as keys were added", r.Cells, rows[i-1].Stashed, r.Stashed)
		}
	}
	best := teabench.MaxLoadWithin(rows, 0.001)
	if best[16].Load < best[2].Load {
		t.Errorf("16 cells meet 0.1 %% up to load %.2f, 2 cells up to %.2f: bigger buckets should do better", best[16].Load, best[2].Load)
	}
}

func TestTheCacheEvensOutTheServersLoad(t *testing.T) {
	c := teabench.DefaultBalanceConfig()
	c.Keys, c.Warmup, c.Lookups, c.CacheSize, c.HotThreshold = 20000, 50000, 100000, 64, 16
	c.Alphas = []float64{0.99}
	rows, err := teabench.Balance(c)
	if err != nil {
		t.Fatal(err)
	}
	off, on := rows[0], rows[1]
	if off.Cache || !on.Cache {
		t.Fatalf("rows %+v", rows)
	}
	if on.Imbalance >= off.Imbalance || on.Imbalance > 1.2 {
		t.Errorf("imbalance %.3f with the cache, %.3f without", on.Imbalance, off.Imbalance)
	}
	if on.CacheShare < on.IdealCacheShare-0.05 || on.CacheShare > on.IdealCacheShare+0.01 {
		t.Errorf("the cache answered %.3f, an ideal one %.3f", on.CacheShare, on.IdealCacheShare)
	}
	for _, r := range rows {
		var sum float64
		for _, l := range r.Load {
			sum += l
		}
		if math.Abs(sum+r.CacheShare+r.StashShare-1) > 1e-9 || r.MaxReads != 1 {
			t.Errorf("cache %v: loads %.4f + cache %.4f + stash %.4f ≠ 1, or %d reads", r.Cache, sum, r.CacheShare, r.StashShare, r.MaxReads)
		}
	}
}

func TestLookupsMoveToTheReplicaAndBack(t *testing.T) {
	c := teabench.DefaultFailoverConfig()
	c.Keys, c.Duration, c.StopFirst, c.Swap = 5000, 90*time.Millisecond, 30*time.Millisecond, 60*time.Millisecond
	rows, err := teabench.Failover(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		phase := int(r.Start / (30 * time.Millisecond))
		total := r.Served[0] + r.Served[1]
		switch {
		case r.Unavailable != 0 || r.MaxReads > 1:
			t.Errorf("window %v: %d unavailable, %d reads", r.Start, r.Unavailable, r.MaxReads)
		case phase == 0 && (r.Served[0] < total/3 || r.Served[1] < total/3 || r.Retried != 0):
			t.Errorf("window %v before the failure: %+v", r.Start, r)
		case phase == 1 && r.Served[0] != 0:
			t.Errorf("window %v: the silent server 0 answered %d", r.Start, r.Served[0])
		case phase == 2 && r.Served[1] != 0:
			t.Errorf("window %v: the silent server 1 answered %d", r.Start, r.Served[1])
		case phase > 0 && r.MaxDelay > c.Timeout+c.Timeout/5:
			t.Errorf("window %v: a lookup waited %v, more than one timeout", r.Start, r.MaxDelay)
		}
	}
}

func TestConfigsRefuseValuesThatWouldPanicNamingTheField(t *testing.T) {
	stash := func(f func(*teabench.StashConfig)) error {
		c := teabench.DefaultStashConfig()
		f(&c)
		_, err := teabench.StashSweep(c) // validates first: must not panic
		return err
	}
	balance := func(f func(*teabench.BalanceConfig)) error {
		c := teabench.DefaultBalanceConfig()
		f(&c)
		return c.Validate()
	}
	for _, tc := range []struct {
		name, field string
		err         error
	}{
		{"zero cells per bucket", "cells", stash(func(c *teabench.StashConfig) { c.Cells = []int{8, 0} })},
		{"negative cells per bucket", "cells", stash(func(c *teabench.StashConfig) { c.Cells = []int{-1} })},
		{"too many cells per bucket", "cells", stash(func(c *teabench.StashConfig) { c.Cells = []int{tea.MaxCells + 1} })},
		{"2^62 entries", "entries", stash(func(c *teabench.StashConfig) { c.Entries = 1 << 62 })},
		{"a NaN load", "loads", stash(func(c *teabench.StashConfig) { c.Loads = []float64{math.NaN()} })},
		{"a NaN load among others", "loads", stash(func(c *teabench.StashConfig) { c.Loads = []float64{0.5, math.NaN(), 0.9} })},
		{"zero MaxTries", "max_tries", stash(func(c *teabench.StashConfig) { c.MaxTries = 0 })},
		{"a huge key", "key_size", stash(func(c *teabench.StashConfig) { c.KeySize = tea.MaxKeySize + 1 })},
		{"a negative value", "value_size", stash(func(c *teabench.StashConfig) { c.ValueSize = -1 })},
		{"too many servers", "servers", balance(func(c *teabench.BalanceConfig) { c.Servers = tea.MaxServers + 1 })},
		{"2^62 keys", "keys", balance(func(c *teabench.BalanceConfig) { c.Keys = 1 << 62 })},
		{"an infinite skew", "alphas", balance(func(c *teabench.BalanceConfig) { c.Alphas = []float64{math.Inf(1)} })},
		{"a NaN skew", "alphas", balance(func(c *teabench.BalanceConfig) { c.Alphas = []float64{0.99, math.NaN()} })},
	} {
		if tc.err == nil || !strings.HasPrefix(tc.err.Error(), tc.field+":") {
			t.Errorf("%s: err = %v, want one naming %s", tc.name, tc.err, tc.field)
		}
	}
}
