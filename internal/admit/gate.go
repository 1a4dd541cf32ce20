package admit

import (
	"fmt"
	"hash/maphash"
	"math/bits"
	"net/netip"
	"sync"
	"sync/atomic"
)

// Bounds of a Policy's rate and burst and of the source table.
const (
	MaxRate      = 1_000_000_000 // datagrams per second per source
	MaxBurst     = 10_000_000
	MinTableSize = ways
	MaxTableSize = 1 << 24
)

// Policy is what a Gate enforces. A Gate keeps its own copy; the Allow set
// is immutable and may be shared.
type Policy struct {
	// Allow lists the sources let in; nil or empty lets every source in.
	Allow *Prefixes
	// Rate is the datagrams per second one source address may send on
	// average; 0 means no limit.
	Rate int
	// Burst is how many datagrams a source may send at once above Rate
	// (the depth of its bucket); 0 means one second's worth (Rate), at least 1.
	Burst int
}

// Validate reports the first field out of range, naming it.
func (p Policy) Validate() error {
	if p.Rate < 0 || p.Rate > MaxRate {
		return fmt.Errorf("rate: %d out of range [0, %d]", p.Rate, MaxRate)
	}
	if p.Burst < 0 || p.Burst > MaxBurst {
		return fmt.Errorf("burst: %d out of range [0, %d]", p.Burst, MaxBurst)
	}
	return nil
}

// Verdict is a Gate's answer for one datagram.
type Verdict uint8

// Verdicts.
const (
	Admitted    Verdict = iota
	NotAllowed          // the source is outside the allowlist
	RateLimited         // the source sent more than its rate and burst allow
)

// String returns the verdict's metric label.
func (v Verdict) String() string {
	switch v {
	case Admitted:
		return "admitted"
	case NotAllowed:
		return "not_allowed"
	case RateLimited:
		return "rate_limited"
	}
	return "unknown"
}

// Stats counts what a Gate's source table did.
type Stats struct {
	// Sources is the number of source addresses the table tracks now.
	Sources atomic.Int64
	// Evictions counts sources forgotten to make room for another while
	// their bucket was not full (their rate state was lost).
	Evictions atomic.Uint64
}

// compiled is a Policy in the form Admit uses.
type compiled struct {
	policy    Policy
	open      bool  // no allowlist and no rate: everything is admitted
	interval  int64 // ns between datagrams at Rate; 0: no rate limit
	tolerance int64 // ns a source's arrival time may run ahead of now
}

// Gate admits datagrams by source under a Policy that may be replaced at any
// time (SetPolicy); each datagram is judged wholly under the old or wholly
// under the new one. It is safe for concurrent use.
type Gate struct {
	size  int
	cur   atomic.Pointer[compiled]
	table atomic.Pointer[table] // allocated when a policy first has a rate
	mu    sync.Mutex            // serialises SetPolicy
	stats Stats
}

// NewGate returns a gate enforcing p, tracking at most tableSize sources for
// rate limits (rounded up to a power of two; the table is allocated only
// once a policy has a rate).
func NewGate(p Policy, tableSize int) (*Gate, error) {
	if tableSize < MinTableSize || tableSize > MaxTableSize {
		return nil, fmt.Errorf("table size: %d out of range [%d, %d]", tableSize, MinTableSize, MaxTableSize)
	}
	g := &Gate{size: tableSize}
	if err := g.SetPolicy(p); err != nil {
		return nil, err
	}
	return g, nil
}

// SetPolicy replaces the policy atomically. Rate state of known sources is
// kept (and judged at the new rate from now on).
func (g *Gate) SetPolicy(p Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	c := &compiled{policy: p, open: p.Allow.Any() && p.Rate == 0}
	if p.Rate > 0 {
		burst := p.Burst
		if burst == 0 {
			burst = p.Rate
		}
		c.interval = max(1, int64(1e9)/int64(p.Rate))
		c.tolerance = c.interval * int64(burst-1)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.interval > 0 && g.table.Load() == nil {
		g.table.Store(newTable(g.size))
	}
	g.cur.Store(c)
	return nil
}

// Policy returns the policy in force.
func (g *Gate) Policy() Policy { return g.cur.Load().policy }

// Stats returns the source table's counters.
func (g *Gate) Stats() *Stats { return &g.stats }

// TableSize is the most sources the rate table tracks.
func (g *Gate) TableSize() int { return tableSets(g.size) * ways }

// Admit judges one datagram from a at now (ns, any monotonic origin shared by
// every call). It allocates nothing.
func (g *Gate) Admit(a netip.Addr, now int64) Verdict {
	c := g.cur.Load()
	if c.open {
		return Admitted
	}
	if !c.policy.Allow.Allows(a) {
		return NotAllowed
	}
	if c.interval == 0 {
		return Admitted
	}
	return g.table.Load().admit(a, now, c.interval, c.tolerance, &g.stats)
}

// ways is the associativity of the source table: a source's state lives in
// one of the ways slots of the set its address hashes to.
const ways = 8

// set is one set of the table. Slots 0..n-1 are in use.
type set struct {
	mu   sync.Mutex
	n    uint8
	keys [ways][16]byte
	tat  [ways]int64 // theoretical arrival time of the source's next datagram (ns)
}

type table struct {
	seed maphash.Seed
	sets []set
	mask uint64
}

// tableSets is the number of sets for at least size sources (a power of two).
func tableSets(size int) int {
	n := (size + ways - 1) / ways
	return 1 << bits.Len(uint(n-1))
}

func newTable(size int) *table {
	n := tableSets(size)
	return &table{seed: maphash.MakeSeed(), sets: make([]set, n), mask: uint64(n - 1)}
}

// admit applies the generic cell rate algorithm to a's state: a datagram
// is admitted when the source's theoretical arrival time is at most
// tolerance ahead of now, and then moves it on by interval.
func (t *table) admit(a netip.Addr, now, interval, tolerance int64, st *Stats) Verdict {
	k := a.Unmap().As16()
	s := &t.sets[maphash.Bytes(t.seed, k[:])&t.mask]
	s.mu.Lock()
	i := s.find(&k)
	if i < 0 {
		i = s.place(&k, now, st)
	}
	tat := max(s.tat[i], now)
	if tat-now > tolerance {
		s.mu.Unlock()
		return RateLimited
	}
	s.tat[i] = tat + interval
	s.mu.Unlock()
	return Admitted
}

func (s *set) find(k *[16]byte) int {
	for i := range int(s.n) {
		if s.keys[i] == *k {
			return i
		}
	}
	return -1
}

// place takes a slot for k with a full bucket: a free one, or else the one
// whose bucket is fullest (the smallest arrival time; a bucket already full
// at now loses nothing by being forgotten).
func (s *set) place(k *[16]byte, now int64, st *Stats) int {
	i := int(s.n)
	if i < ways {
		s.n++
		st.Sources.Add(1)
	} else {
		i = 0
		for j := 1; j < ways; j++ {
			if s.tat[j] < s.tat[i] {
				i = j
			}
		}
		if s.tat[i] > now {
			st.Evictions.Add(1)
		}
	}
	s.keys[i] = *k
	s.tat[i] = now
	return i
}
