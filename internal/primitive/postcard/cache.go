package postcard

import (
	"bytes"
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/wire/dta"
)

// DefaultCacheEntries is the paper's and the prototype's cache size.
const DefaultCacheEntries = 32768

// cacheStripes is the number of locks over the cache's entries.
const cacheStripes = 256

// CacheStats counts what the cache did. Fields are updated atomically.
type CacheStats struct {
	Postcards atomic.Uint64 // postcards cached
	Complete  atomic.Uint64 // paths written because every hop arrived
	Evicted   atomic.Uint64 // partial paths written early because another flow took the entry
	Expired   atomic.Uint64 // partial paths written because they aged out
	Chunks    atomic.Uint64 // chunk writes emitted (paths × N)
}

// entry caches the postcards of one flow.
type entry struct {
	spec    *Spec
	store   uint16
	used    bool
	imm     bool
	keyLen  uint8
	pathLen uint8 // 0 until a postcard carries it
	present uint8 // bit i: hop i+1 arrived
	first   int64 // arrival of the first postcard, ns
	key     [dta.MaxKeyLen]byte
	vals    [hashing.MaxHops]uint32
}

// Cache is the translator-side postcard cache, shared by all translation
// workers and all Postcarding stores. Each entry holds one flow; a postcard of
// another flow that maps to an occupied entry writes the occupant out early.
type Cache struct {
	entries  []entry
	inUse    []atomic.Uint64 // bit i: entry i holds a flow (changed under its lock)
	locks    [cacheStripes]paddedMutex
	stats    CacheStats
	observer func(Path) // set before use; nil: none
}

// Cause is why a cached path was written out.
type Cause uint8

// The causes of a path write.
const (
	Complete Cause = iota + 1 // every hop of the path arrived
	Evicted                   // another flow took the cache entry
	Expired                   // the first postcard aged out (or the cache was flushed)
)

// String names the cause as metrics and exported records do.
func (c Cause) String() string {
	switch c {
	case Complete:
		return "complete"
	case Evicted:
		return "evicted"
	case Expired:
		return "expired"
	}
	return "unknown"
}

// Path is a flow's path as the cache writes it out, for an observer (an
// exporter of completed paths). Key and Values alias the cache's entry: they
// are valid only during the observer's call.
type Path struct {
	Store   uint16 // index in the translator's store table
	Key     []byte // the hashed key bytes
	Values  *[hashing.MaxHops]uint32
	Present uint8 // bit i: hop i+1 reported
	PathLen uint8 // the path's length if a postcard carried it, else 0
	Cause   Cause
	// Now is the time (ns) of the Add or Flush that writes the path out: the
	// arrival of the postcard that completed or evicted it, or the flush's
	// now (0 for a flush of everything).
	Now int64
}

// SetObserver makes the cache call fn with every path it writes out, under
// the path's entry lock and before its chunks reach the sink. fn runs on the
// translation workers' hot path: it must not block or allocate (copy what it
// keeps into a bounded queue and drop when it is full). Call it before the
// cache is used; nil removes the observer. There is one observer: the
// translator sets it to its own, which runs its rules and then every
// observer added with Translator.AddPathObserver.
func (c *Cache) SetObserver(fn func(Path)) { c.observer = fn }

// NewCache returns a cache of n entries (n ≥ 1).
func NewCache(n int) (*Cache, error) {
	if n < 1 || n > 1<<26 {
		return nil, fmt.Errorf("postcard cache: %d entries out of range [1, 2^26]", n)
	}
	return &Cache{entries: make([]entry, n), inUse: make([]atomic.Uint64, (n+63)/64)}, nil
}

// Stats returns the cache's counters.
func (c *Cache) Stats() *CacheStats { return &c.stats }

// Len is the number of entries.
func (c *Cache) Len() int { return len(c.entries) }

func (c *Cache) index(store uint16, key []byte) int {
	h := hashing.CRC32C.Checksum(key) ^ uint32(store)*0x9E3779B9
	return int(hashing.Reduce(h, uint64(len(c.entries))))
}

// paddedMutex is a lock alone on its cache line, so that workers taking
// different stripes do not contend for the line.
type paddedMutex struct {
	sync.Mutex
	_ [56]byte
}

func (c *Cache) lockFor(i int) *sync.Mutex { return &c.locks[i%cacheStripes].Mutex }

// Add caches one postcard for the store with spec (index store in the
// translator's store table). Whatever the postcard completes or evicts is
// encoded into b (which Add resets) and applied to sink before Add returns,
// under the entry's lock so that writes of one flow reach the sink in order.
// key is the hashed key bytes (CompatKey for compat reports); hop is 1-based;
// pathLen 0 means unknown. now is the arrival time in ns.
func (c *Cache) Add(spec *Spec, store uint16, key []byte, hop, pathLen int, value uint32, imm bool, now int64, b *memop.Batch, sink memop.Sink) error {
	switch {
	case pathLen > spec.Hops:
		return ErrPathLen
	case hop < 1 || hop > spec.Hops || (pathLen != 0 && hop > pathLen):
		return ErrHop
	case value < spec.MinValue || value > spec.MaxValue:
		return ErrValue
	case len(key) == 0 || len(key) > dta.MaxKeyLen:
		return dta.ErrKeyLen
	}
	i := c.index(store, key)
	mu := c.lockFor(i)
	mu.Lock()
	defer mu.Unlock()
	b.Reset()
	e := &c.entries[i]
	if e.used && (e.store != store || !bytes.Equal(e.key[:e.keyLen], key)) {
		c.stats.Evicted.Add(1)
		c.emit(i, b, Evicted, now)
	}
	if !e.used {
		*e = entry{spec: spec, store: store, used: true, keyLen: uint8(len(key)), first: now}
		copy(e.key[:], key)
		c.inUse[i/64].Or(1 << (i % 64))
	}
	if pathLen != 0 {
		e.pathLen = uint8(pathLen)
	}
	e.imm = e.imm || imm
	e.vals[hop-1] = value
	e.present |= 1 << (hop - 1)
	c.stats.Postcards.Add(1)
	want := spec.Hops
	if e.pathLen != 0 {
		want = int(e.pathLen)
	}
	if bits.OnesCount8(e.present&uint8(1<<want-1)) == want {
		c.stats.Complete.Add(1)
		c.emit(i, b, Complete, now)
	}
	return c.apply(b, sink)
}

func (c *Cache) apply(b *memop.Batch, sink memop.Sink) error {
	if len(b.Ops) == 0 {
		return nil
	}
	err := sink.Apply(b.Ops)
	b.Reset()
	return err
}

// emit encodes entry i's path into b (N chunk writes), shows it to the
// observer and frees the entry. The caller holds the entry's lock.
func (c *Cache) emit(i int, b *memop.Batch, cause Cause, now int64) {
	e := &c.entries[i]
	s := e.spec
	key := e.key[:e.keyLen]
	present := e.present
	if e.pathLen != 0 {
		present &= uint8(1<<e.pathLen - 1)
	}
	if c.observer != nil {
		c.observer(Path{Store: e.store, Key: key, Values: &e.vals, Present: present, PathLen: e.pathLen, Cause: cause, Now: now})
	}
	data := b.Alloc(int(s.ChunkSize()))
	s.encodeChunk(data, key, &e.vals, present, int(e.pathLen))
	k := s.Hash.Key(key)
	for n := range s.Redundancy {
		off := s.Offset(k, n)
		if e.imm && n == 0 {
			b.WriteImm(e.store, off, data, uint32(off/s.ChunkSize()))
		} else {
			b.Write(e.store, off, data)
		}
	}
	c.stats.Chunks.Add(uint64(s.Redundancy))
	e.used = false
	c.inUse[i/64].And(^(uint64(1) << (i % 64)))
}

// Holding reports whether any entry holds a flow's postcards (a path that a
// later Flush may have to write). It reads the in-use bitmap atomically: an
// Add that happened before the call is seen.
func (c *Cache) Holding() bool {
	for i := range c.inUse {
		if c.inUse[i].Load() != 0 {
			return true
		}
	}
	return false
}

// ErrSink wraps the first error a sink returned during a flush.
var ErrSink = errors.New("postcard flush: sink")

// Flush writes out every cached path whose first postcard arrived at or before
// now-maxAge (all of them when maxAge ≤ 0), as partial paths. It returns the
// number of paths written and the first sink error. It visits only the
// entries in use (a bitmap of them), so that a mostly idle cache costs a scan
// of Len/64 words, not of every entry.
func (c *Cache) Flush(now, maxAge int64, b *memop.Batch, sink memop.Sink) (int, error) {
	var n int
	var first error
	for w := range c.inUse {
		set := c.inUse[w].Load()
		for set != 0 {
			bit := bits.TrailingZeros64(set)
			set &^= 1 << bit
			i := w*64 + bit
			mu := c.lockFor(i)
			mu.Lock()
			if e := &c.entries[i]; e.used && (maxAge <= 0 || now-e.first >= maxAge) {
				b.Reset()
				c.stats.Expired.Add(1)
				c.emit(i, b, Expired, now)
				n++
				if err := c.apply(b, sink); err != nil && first == nil {
					first = fmt.Errorf("%w: %w", ErrSink, err)
				}
			}
			mu.Unlock()
		}
	}
	return n, first
}
