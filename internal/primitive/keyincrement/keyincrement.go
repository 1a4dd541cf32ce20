// Package keyincrement is the Key-Increment primitive: a count-min sketch of
// 64-bit counters. A report adds its delta to N hash-chosen counters with
// fetch-and-add; a query returns the minimum of the key's N counters, which
// never underestimates a key's true sum (when queried with the N it was
// written with) and overestimates it only by the sums of colliding keys.
//
// Memory layout: Slots counters of 8 bytes, little-endian (the byte order a
// responder's atomics use), 8-byte aligned. Slot hashes are Key-Write's, so a
// 32-bit compat key hashes as its little-endian bytes, as in the prototype.
//
// The package does no I/O and keeps no state beyond a Store's region.
package keyincrement

import (
	"errors"
	"fmt"
	"math"

	"github.com/dta-go/dta/internal/hashing"
	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/wire/dta"
)

// CounterSize is the size of one counter.
const CounterSize = 8

// MaxSlots is the largest counter count (slot hashes are 32-bit).
const MaxSlots = 1 << 32

// Spec is the geometry of one Key-Increment store.
type Spec struct {
	Slots         uint64            // counters; a power of two for Hash CRC32
	MaxRedundancy int               // largest N a report may ask for, 1..8; the query default
	Hash          hashing.Algorithm // slot family
}

// Validate reports the first thing wrong with s, naming the field.
func (s Spec) Validate() error {
	switch {
	case s.Slots < 2 || s.Slots > MaxSlots:
		return fmt.Errorf("slots: %d out of range [2, 2^32]", s.Slots)
	case !s.Hash.Valid():
		return fmt.Errorf("hash: %v is not a known hash", s.Hash)
	case s.Hash == hashing.CRC32 && s.Slots&(s.Slots-1) != 0:
		return fmt.Errorf("slots: %d is not a power of two, which hash crc32 (the prototype's mask) needs", s.Slots)
	case s.MaxRedundancy < 1 || s.MaxRedundancy > dta.MaxRedundancy:
		return fmt.Errorf("redundancy: %d out of range [1, %d]", s.MaxRedundancy, dta.MaxRedundancy)
	}
	return nil
}

// RegionSize is the bytes of memory the store needs.
func (s Spec) RegionSize() uint64 { return s.Slots * CounterSize }

// SlotsFor returns how many counters fit in memory bytes, rounded down to a
// power of two when the hash needs it.
func (s Spec) SlotsFor(memory uint64) uint64 {
	n := min(memory/CounterSize, MaxSlots)
	if s.Hash == hashing.CRC32 && n > 0 {
		for n&(n-1) != 0 {
			n &= n - 1
		}
	}
	return n
}

// Offset returns the byte offset of counter copy n of a key hashed as k.
func (s Spec) Offset(k hashing.Keyed, n int) uint64 {
	return hashing.Reduce(k.Slot(n), s.Slots) * CounterSize
}

// ErrRedundancy is returned for a report asking for more copies than the
// store allows.
var ErrRedundancy = errors.New("redundancy above the store's maximum")

// Translate appends n fetch-and-add ops of delta for key to b. key is the
// hashed key bytes (keywrite.CompatKey for compat reports).
func (s *Spec) Translate(b *memop.Batch, store uint16, key []byte, delta uint64, n int) error {
	if n < 1 || n > s.MaxRedundancy {
		return ErrRedundancy
	}
	k := s.Hash.Key(key)
	for i := range n {
		b.FetchAdd(store, s.Offset(k, i), delta)
	}
	return nil
}

// Store is a Key-Increment store: a Spec bound to a region.
type Store struct {
	spec Spec
	mem  *region.Region
}

// NewStore binds spec to mem, which must be at least spec.RegionSize() bytes.
func NewStore(spec Spec, mem *region.Region) (*Store, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if mem.Size() < spec.RegionSize() {
		return nil, fmt.Errorf("region of %d bytes is smaller than the %d the store needs", mem.Size(), spec.RegionSize())
	}
	return &Store{spec: spec, mem: mem}, nil
}

// Spec returns the store's geometry.
func (s *Store) Spec() Spec { return s.spec }

// Query returns the count-min estimate of key's sum over n counters (0 means
// the store's MaxRedundancy). Query with the N the key was reported with: a
// larger n can only lower the estimate below the truth, a smaller one raises
// the overestimate.
func (s *Store) Query(key []byte, n int) (uint64, error) {
	if n == 0 {
		n = s.spec.MaxRedundancy
	}
	if n < 1 || n > s.spec.MaxRedundancy {
		return 0, fmt.Errorf("redundancy %d out of range [1, %d]", n, s.spec.MaxRedundancy)
	}
	k := s.spec.Hash.Key(key)
	est := uint64(math.MaxUint64)
	for i := range n {
		v, err := s.mem.Load64(s.spec.Offset(k, i))
		if err != nil {
			return 0, err
		}
		est = min(est, v)
	}
	return est, nil
}

// Reset zeroes every counter. Increments that race with a reset may survive it.
func (s *Store) Reset() { s.mem.Zero() }
