package tea

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// Control-plane errors.
var (
	// ErrExists reports an insert of a key the table already holds.
	ErrExists = errors.New("tea: key already in the table")
	// ErrNotFound reports an update or delete of a key the table does not hold.
	ErrNotFound = errors.New("tea: key not in the table")
	// ErrStashFull reports an insert refused because the stash is at its
	// limit (an insert may leave one more entry there).
	ErrStashFull = errors.New("tea: stash full")
)

// DefaultMaxTries is Algorithm 1's MaxTries unless configured: the victims
// one insert may displace before the last one stays in the stash.
const DefaultMaxTries = 100

// DefaultCacheSize is the popularity cache's entries unless configured: the
// paper's prototype cache (§5.1).
const DefaultCacheSize = 1024

// TableConfig configures the control plane.
type TableConfig struct {
	MaxTries   int           // victims one insert may displace (Algorithm 1); default DefaultMaxTries
	StashLimit int           // most entries in the SRAM stash; 0: no limit
	CacheSize  int           // entries of the popularity cache; 0: no cache
	Seed       uint64        // seed of the victim choice; equal seeds, equal tables
	Grace      time.Duration // wait between making an entry unreachable and reusing its bytes; see Table
	// Sleep waits Grace; nil means time.Sleep. Tests inject their own.
	Sleep func(time.Duration)
}

// DefaultTableConfig returns the defaults: MaxTries DefaultMaxTries, no
// stash limit, a cache of DefaultCacheSize entries, seed 1, no grace period
// (right for memory the readers share a lock with, as LocalMemory).
func DefaultTableConfig() TableConfig {
	return TableConfig{MaxTries: DefaultMaxTries, CacheSize: DefaultCacheSize, Seed: 1}
}

// Validate reports the first thing wrong with c, naming the field.
func (c TableConfig) Validate() error {
	switch {
	case c.MaxTries < 1:
		return fmt.Errorf("max_tries: %d, want at least 1", c.MaxTries)
	case c.StashLimit < 0:
		return fmt.Errorf("stash_limit: %d is negative", c.StashLimit)
	case c.CacheSize < 0:
		return fmt.Errorf("cache_size: %d is negative", c.CacheSize)
	case c.Grace < 0:
		return fmt.Errorf("grace: %v is negative", c.Grace)
	}
	return nil
}

// Location says where the control plane keeps an entry.
type Location struct {
	Stash  bool   // in the SRAM stash (then Bucket and Cell are zero)
	Bucket uint64 // the bucket holding it: its home or the next one
	Cell   int    // the cell in that bucket
}

// TableStats counts the control plane's work.
type TableStats struct {
	Inserts    uint64 // entries inserted
	Updates    uint64 // values changed
	Deletes    uint64 // entries deleted
	Kicks      uint64 // victims displaced by inserts
	Stashed    uint64 // inserts that left an entry in the stash
	Promotions uint64 // entries copied into the cache
	Evictions  uint64 // entries the cache dropped for more popular ones
}

// Table is TEA-TABLE's control plane: it places entries in a Memory laid out
// by a Spec, keeps the stash and fills the cache. Its methods are safe for
// concurrent use (they run one at a time); lookups run concurrently in an
// Engine sharing the Stash and Cache.
//
// Writes to a cell follow one order, so that a lookup's read racing them
// never returns a wrong entry and never misses one:
//
//   - into an empty cell: key and value (bytes 1..), then the flag byte; the
//     original bucket, then its shadow copy.
//   - over an entry (an update, or a victim displaced by an insert): the old
//     and the new entry are put in the stash; Grace; the flag byte is
//     cleared in the original and the shadow; Grace; then as into an empty
//     cell; then the new entry leaves the stash (a displaced victim stays
//     until it is placed).
//   - a delete: cache and stash first, then the flag byte cleared in both
//     copies; Grace; key and value zeroed.
//
// Grace must exceed the time a read may take from its issue (after the
// engine checked the stash) until its data is read: the engine's read
// timeout when the reader is RDMA. With LocalMemory it can be zero.
type Table struct {
	mu      sync.Mutex
	spec    Spec
	mem     Memory
	cfg     TableConfig
	stash   *Stash
	cache   *Cache
	rng     *rand.Rand
	row     []byte // 2 buckets as one read returns them
	cell    []byte
	zero    []byte
	a, b    []byte // the entry being placed and a displaced victim, key ‖ value
	entries uint64 // entries in memory (not in the stash)
	stats   TableStats
}

// NewTable returns the control plane of an empty table in mem, which must be
// spec.TableSize() bytes of zeros (or a ClusterMemory over such memories).
func NewTable(spec Spec, mem Memory, cfg TableConfig) (*Table, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxTries == 0 {
		cfg.MaxTries = DefaultMaxTries
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if mem == nil {
		return nil, errors.New("tea: nil memory")
	}
	t := &Table{
		spec:  spec,
		mem:   mem,
		cfg:   cfg,
		stash: NewStash(cfg.StashLimit),
		rng:   rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x7EA7AB1E)),
		row:   make([]byte, 2*spec.BucketSize()),
		cell:  make([]byte, spec.CellSize()),
		zero:  make([]byte, spec.CellSize()),
		a:     make([]byte, spec.KeySize+spec.ValueSize),
		b:     make([]byte, spec.KeySize+spec.ValueSize),
	}
	if cfg.CacheSize > 0 {
		t.cache = NewCache(cfg.CacheSize)
	}
	return t, nil
}

// Spec returns the table's layout.
func (t *Table) Spec() Spec { return t.spec }

// Stash returns the table's stash, for an Engine.
func (t *Table) Stash() *Stash { return t.stash }

// Cache returns the table's cache, for an Engine; nil without one.
func (t *Table) Cache() *Cache { return t.cache }

// Len returns the entries the table holds, in memory and in the stash.
func (t *Table) Len() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.entries + uint64(t.stash.Len())
}

// LoadFactor returns the entries in memory over the cells.
func (t *Table) LoadFactor() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return float64(t.entries) / float64(t.spec.Entries())
}

// Stats returns a copy of the counters.
func (t *Table) Stats() TableStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats
}

func (t *Table) check(key, value []byte) error {
	if len(key) != t.spec.KeySize {
		return ErrKeySize
	}
	if value != nil && len(value) != t.spec.ValueSize {
		return ErrValueSize
	}
	return nil
}

// Insert adds key with value, per Algorithm 1: into a free cell of the key's
// home bucket or the next one; otherwise over a random cell of the two,
// whose entry (the victim) is placed the same way, at most MaxTries times;
// the last victim stays in the stash. A nil error means the entry is
// reachable, in memory or in the stash.
func (t *Table) Insert(key, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	if err := t.check(key, value); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stash.has(key) {
		return ErrExists
	}
	if _, _, ok, err := t.locate(key); err != nil {
		return err
	} else if ok {
		return ErrExists
	}
	if t.stash.full() {
		return ErrStashFull
	}
	k := t.spec.KeySize
	copy(t.a, key)
	copy(t.a[k:], value)
	entry, victim := t.a, t.b
	t.stash.put(entry[:k], entry[k:]) // line 4: visible from SRAM while it is placed
	t.stats.Inserts++
	for range t.cfg.MaxTries {
		home := t.spec.HomeOf(entry[:k])
		if err := t.readRow(home); err != nil {
			return err
		}
		if j := t.freeCell(); j >= 0 {
			b, c := t.cellOf(home, j)
			if err := t.writeCell(b, c, entry[:k], entry[k:]); err != nil {
				return err
			}
			t.stash.remove(entry[:k])
			t.entries++
			return nil
		}
		j := t.rng.IntN(2 * t.spec.Cells)
		b, c := t.cellOf(home, j)
		cs := int(t.spec.CellSize())
		copy(victim, t.row[j*cs+1:(j+1)*cs])
		// Unlike Algorithm 1, which stashes the victim at the top of the next
		// round, it enters the stash before its cell is overwritten, so that
		// it is never out of reach.
		t.stash.put(victim[:k], victim[k:])
		if err := t.rewriteCell(b, c, entry[:k], entry[k:]); err != nil {
			return err
		}
		t.stash.remove(entry[:k])
		t.stats.Kicks++
		entry, victim = victim, entry
	}
	t.stats.Stashed++
	return nil
}

// Update changes the value of key, in place (in memory or in the stash);
// the cache's copy, if any, changes first.
func (t *Table) Update(key, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	if err := t.check(key, value); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stash.has(key) {
		t.stash.put(key, value)
		if t.cache != nil {
			t.cache.replace(key, value)
		}
		t.stats.Updates++
		return nil
	}
	b, c, ok, err := t.locate(key)
	if err != nil {
		return err
	}
	if !ok {
		return ErrNotFound
	}
	t.stash.put(key, value)
	if t.cache != nil {
		t.cache.replace(key, value)
	}
	if err := t.rewriteCell(b, c, key, value); err != nil {
		return err
	}
	t.stash.remove(key)
	t.stats.Updates++
	return nil
}

// Delete removes key: from the cache, then from the stash or its cell.
func (t *Table) Delete(key []byte) error {
	if err := t.check(key, nil); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cache != nil {
		t.cache.remove(key)
	}
	if t.stash.remove(key) {
		t.stats.Deletes++
		return nil
	}
	b, c, ok, err := t.locate(key)
	if err != nil {
		return err
	}
	if !ok {
		return ErrNotFound
	}
	orig, shadow := t.spec.CellOffset(b, c), t.spec.ShadowCellOffset(b, c)
	if err := t.write(orig, t.zero[:1]); err != nil {
		return err
	}
	if err := t.write(shadow, t.zero[:1]); err != nil {
		return err
	}
	t.grace()
	if err := t.write(orig+1, t.zero[1:]); err != nil {
		return err
	}
	if err := t.write(shadow+1, t.zero[1:]); err != nil {
		return err
	}
	t.entries--
	t.stats.Deletes++
	return nil
}

// Get returns a copy of key's value and where the control plane keeps it.
func (t *Table) Get(key []byte) ([]byte, Location, error) {
	if err := t.check(key, nil); err != nil {
		return nil, Location{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.get(key)
}

func (t *Table) get(key []byte) ([]byte, Location, error) {
	if v, ok := t.stash.Get(key, nil); ok {
		return v, Location{Stash: true}, nil
	}
	home := t.spec.HomeOf(key)
	if err := t.readRow(home); err != nil {
		return nil, Location{}, err
	}
	j, v := t.spec.Match(t.row, key)
	if j < 0 {
		return nil, Location{}, ErrNotFound
	}
	b, c := t.cellOf(home, j)
	return append([]byte{}, v...), Location{Bucket: b, Cell: c}, nil
}

// Promote copies key's entry into the cache if it is not there yet. When
// the cache is full, the cached entry with the smallest popularity leaves
// for it, if that is below key's popularity; otherwise nothing changes.
// popularity is the engine's estimate (Engine.Estimate). It reports whether
// key entered the cache.
func (t *Table) Promote(key []byte, popularity func(key []byte) uint64) (bool, error) {
	if t.cache == nil {
		return false, nil
	}
	if err := t.check(key, nil); err != nil {
		return false, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cache.has(key) {
		return false, nil
	}
	v, _, err := t.get(key)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if t.cache.full() {
		p := popularity(key)
		var coldest []byte
		var cold uint64
		for _, k := range t.cache.Keys() {
			if q := popularity(k); coldest == nil || q < cold {
				coldest, cold = k, q
			}
		}
		if p <= cold {
			return false, nil
		}
		t.cache.remove(coldest)
		t.stats.Evictions++
	}
	t.cache.put(key, v)
	t.stats.Promotions++
	return true, nil
}

// ClearCache drops every cached entry (a new popularity epoch, or a new
// workload); lookups read memory again until keys are promoted.
func (t *Table) ClearCache() {
	if t.cache == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cache.mu.Lock()
	clear(t.cache.m)
	t.cache.mu.Unlock()
}

// locate finds key in memory (not the stash): its bucket and cell.
func (t *Table) locate(key []byte) (bucket uint64, cell int, ok bool, err error) {
	home := t.spec.HomeOf(key)
	if err := t.readRow(home); err != nil {
		return 0, 0, false, err
	}
	j, _ := t.spec.Match(t.row, key)
	if j < 0 {
		return 0, 0, false, nil
	}
	b, c := t.cellOf(home, j)
	return b, c, true, nil
}

// readRow reads the two buckets of row i into t.row.
func (t *Table) readRow(i uint64) error {
	if err := t.mem.Read(t.spec.RowOffset(i), t.row); err != nil {
		return fmt.Errorf("tea: read row %d: %w", i, err)
	}
	return nil
}

// freeCell returns the first empty cell of t.row (home bucket first), or −1.
func (t *Table) freeCell() int {
	cs := int(t.spec.CellSize())
	for j := range 2 * t.spec.Cells {
		if t.row[j*cs]&FlagValid == 0 {
			return j
		}
	}
	return -1
}

// cellOf turns cell j of row home into a bucket and a cell.
func (t *Table) cellOf(home uint64, j int) (uint64, int) {
	if j < t.spec.Cells {
		return home, j
	}
	return t.spec.Next(home), j - t.spec.Cells
}

// writeCell writes an entry into empty cell c of bucket b: key and value,
// then the flag; the original, then the shadow.
func (t *Table) writeCell(b uint64, c int, key, value []byte) error {
	t.spec.PutCell(t.cell, key, value)
	for _, off := range [2]uint64{t.spec.CellOffset(b, c), t.spec.ShadowCellOffset(b, c)} {
		if err := t.write(off+1, t.cell[1:]); err != nil {
			return err
		}
		if err := t.write(off, t.cell[:1]); err != nil {
			return err
		}
	}
	return nil
}

// rewriteCell replaces the entry in cell c of bucket b; both the old and the
// new entry are in the stash.
func (t *Table) rewriteCell(b uint64, c int, key, value []byte) error {
	t.grace()
	if err := t.write(t.spec.CellOffset(b, c), t.zero[:1]); err != nil {
		return err
	}
	if err := t.write(t.spec.ShadowCellOffset(b, c), t.zero[:1]); err != nil {
		return err
	}
	t.grace()
	return t.writeCell(b, c, key, value)
}

func (t *Table) write(off uint64, b []byte) error {
	if err := t.mem.Write(off, b); err != nil {
		return fmt.Errorf("tea: write %d bytes at %d: %w", len(b), off, err)
	}
	return nil
}

func (t *Table) grace() {
	if t.cfg.Grace <= 0 {
		return
	}
	if t.cfg.Sleep != nil {
		t.cfg.Sleep(t.cfg.Grace)
		return
	}
	time.Sleep(t.cfg.Grace)
}
