package teabench

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/dta-go/dta/internal/tea"
)

// BalanceConfig is the load-balance experiment (Fig. 9a): Keys random
// 5-tuples in a table placed over Servers servers of equal memory, looked
// up Lookups times with Zipf(α) popularity, once without the cache and once
// with it (the control plane promoting the sketch's digests every
// DrainEvery lookups), for each α.
type BalanceConfig struct {
	Servers      int
	Keys         int
	Alphas       []float64
	Warmup       int     // lookups before counting, so the cache is warm
	Lookups      int     // lookups counted per α and mode
	CacheSize    int     // entries of the cache
	HotThreshold uint32  // the sketch's threshold for a digest
	DrainEvery   int     // lookups between two passes of the control plane over the digests
	Cells        int     // cells per bucket
	Load         float64 // load factor of the table
	KeySize      int
	ValueSize    int
	Seed         uint64
}

// DefaultBalanceConfig is the paper's setting: 8 servers, 1 M keys, α 0.99,
// 0.95 and 0.90, a cache of 1024 entries.
func DefaultBalanceConfig() BalanceConfig {
	return BalanceConfig{
		Servers: 8, Keys: 1_000_000, Alphas: []float64{0.99, 0.95, 0.90},
		Warmup: 1_000_000, Lookups: 4_000_000, CacheSize: tea.DefaultCacheSize, HotThreshold: 64,
		DrainEvery: 1000, Cells: 8, Load: 0.7, KeySize: 13, ValueSize: 6, Seed: 1,
	}
}

// Validate reports the first thing wrong with c, naming the field.
func (c BalanceConfig) Validate() error {
	switch {
	case c.Servers < 1 || c.Servers > tea.MaxServers:
		return fmt.Errorf("servers: %d out of range [1, %d]", c.Servers, tea.MaxServers)
	case c.Keys < c.Servers || c.Keys > MaxEntries:
		return fmt.Errorf("keys: %d, want at least one per server and at most 2^32", c.Keys)
	case len(c.Alphas) == 0:
		return fmt.Errorf("alphas: none")
	case slices.ContainsFunc(c.Alphas, func(a float64) bool { return !(a >= 0) || math.IsInf(a, 0) }):
		return fmt.Errorf("alphas: %v, want finite values ≥ 0", c.Alphas)
	case c.Lookups < 1 || c.Warmup < 0:
		return fmt.Errorf("lookups: %d (warm-up %d), want at least 1", c.Lookups, c.Warmup)
	case c.CacheSize < 1:
		return fmt.Errorf("cache_size: %d, want at least 1", c.CacheSize)
	case c.DrainEvery < 1:
		return fmt.Errorf("drain_every: %d, want at least 1", c.DrainEvery)
	case c.KeySize < 13:
		return fmt.Errorf("key_size: %d, want at least 13 (a 5-tuple)", c.KeySize)
	}
	return nil
}

// BalanceRow is one α with or without the cache.
type BalanceRow struct {
	Alpha   float64 `json:"alpha"`
	Cache   bool    `json:"cache"`
	Lookups uint64  `json:"lookups"`
	// Load is each server's share of all lookups (reads it answered /
	// lookups); with the cache they sum to less than 1.
	Load []float64 `json:"load"`
	// Imbalance is the busiest server's load over the mean server load.
	Imbalance float64 `json:"imbalance"`
	// CacheShare, StashShare: lookups answered by the cache, the stash.
	CacheShare float64 `json:"cache_share"`
	StashShare float64 `json:"stash_share"`
	// IdealCacheShare is the Zipf mass of the CacheSize most popular keys:
	// what a cache that always held exactly them would answer.
	IdealCacheShare float64 `json:"ideal_cache_share"`
	MaxReads        int     `json:"max_reads_per_lookup"`
}

// Balance runs the load-balance experiment.
func Balance(c BalanceConfig) ([]BalanceRow, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	plan, err := tea.PlanTable(uint64(c.Keys), c.KeySize, c.ValueSize, c.Cells, c.Load, 0)
	if err != nil {
		return nil, err
	}
	p, err := tea.PlaceEqual(plan.Spec, c.Servers, 1)
	if err != nil {
		return nil, err
	}
	mems := make([]tea.Memory, c.Servers)
	readers := make([]tea.Reader, c.Servers)
	for i := range mems {
		mems[i] = tea.NewLocalMemory(p.Used(i))
		readers[i] = tea.MemoryReader{Mem: mems[i]}
	}
	cm, err := tea.NewClusterMemory(p, mems)
	if err != nil {
		return nil, err
	}
	keys := FiveTuples(c.Keys, c.KeySize, c.Seed)
	key := func(i int) []byte { return keys[i*c.KeySize : (i+1)*c.KeySize] }
	value := make([]byte, c.ValueSize)
	tab, err := tea.NewTable(plan.Spec, cm, tea.TableConfig{MaxTries: tea.DefaultMaxTries, CacheSize: c.CacheSize, Seed: c.Seed})
	if err != nil {
		return nil, err
	}
	for i := range c.Keys {
		if err := tab.Insert(key(i), value); err != nil {
			return nil, fmt.Errorf("insert key %d: %w", i, err)
		}
	}
	var rows []BalanceRow
	for _, alpha := range c.Alphas {
		for _, cached := range []bool{false, true} {
			tab.ClearCache()
			maxReads := 0
			cfg := tea.Config{
				Placement: p, Readers: readers, Stash: tab.Stash(), HotThreshold: c.HotThreshold,
				InFlight: 1, DigestQueue: c.DrainEvery + 1,
				Now:  func() time.Time { return time.Unix(0, 0) }, // counts only: no read is ever late
				Done: func(r *tea.Result) { maxReads = max(maxReads, r.Reads) },
			}
			if cached {
				cfg.Cache = tab.Cache()
			} else {
				cfg.HotThreshold = math.MaxUint32
			}
			eng, err := tea.New(cfg)
			if err != nil {
				return nil, err
			}
			z, err := NewZipf(c.Keys, alpha, c.Seed+1)
			if err != nil {
				return nil, err
			}
			run := func(n int) error {
				for i := range n {
					if err := eng.Lookup(key(z.Next()), uint64(i)); err != nil {
						return err
					}
					if cached && (i+1)%c.DrainEvery == 0 {
						for len(eng.Digests()) > 0 {
							d := <-eng.Digests()
							if _, err := tab.Promote(d.Key(), eng.Estimate); err != nil {
								return err
							}
						}
					}
				}
				return nil
			}
			if err := run(c.Warmup); err != nil {
				return nil, err
			}
			before := snapshot(eng, c.Servers)
			if err := run(c.Lookups); err != nil {
				return nil, err
			}
			after := snapshot(eng, c.Servers)
			row := BalanceRow{Alpha: alpha, Cache: cached, Lookups: uint64(c.Lookups), Load: make([]float64, c.Servers),
				IdealCacheShare: z.TopShare(c.CacheSize), MaxReads: maxReads}
			if !cached {
				row.IdealCacheShare = 0
			}
			var sum, peak float64
			for s := range c.Servers {
				row.Load[s] = float64(after.served[s]-before.served[s]) / float64(c.Lookups)
				sum += row.Load[s]
				peak = max(peak, row.Load[s])
			}
			row.Imbalance = peak / (sum / float64(c.Servers))
			row.CacheShare = float64(after.cache-before.cache) / float64(c.Lookups)
			row.StashShare = float64(after.stash-before.stash) / float64(c.Lookups)
			rows = append(rows, row)
		}
	}
	return rows, nil
}

type counts struct {
	served       []uint64
	cache, stash uint64
}

func snapshot(e *tea.Engine, servers int) counts {
	c := counts{served: make([]uint64, servers), cache: e.Stats().CacheHits.Load(), stash: e.Stats().StashHits.Load()}
	for s := range servers {
		c.served[s] = e.ServerStats(s).Served.Load()
	}
	return c
}
