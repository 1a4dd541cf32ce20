// Package keyincrement is the Key-Increment primitive: a count-min sketch of
// 64-bit counters. A report adds its delta to N hash-chosen counters with
// fetch-and-add; a query returns the minimum of the key's N counters, which
// never underestimates a key's true sum and overestimates it only by the sums
// of colliding keys. N is fixed per store (Spec.Redundancy).
//
// Memory layout: Slots counters of 8 bytes, little-endian (the byte order a
// responder's atomics use), 8-byte aligned. Slot hashes are Key-Write's, so a
// 32-bit compat key hashes as its little-endian bytes, as in the prototype.
//
// The package does no I/O and keeps no state beyond a Store's region.
package keyincrement

import (
	"fmt"
	"math"

	"github.com/dta-go/dta/hashing"
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
	Slots      uint64            // counters; a power of two for Hash CRC32
	Redundancy int               // N: counters every report increments and every query reads, 1..8
	Hash       hashing.Algorithm // slot family
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
	case s.Redundancy < 1 || s.Redundancy > dta.MaxRedundancy:
		return fmt.Errorf("redundancy: %d out of range [1, %d]", s.Redundancy, dta.MaxRedundancy)
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

// Translate appends the store's N fetch-and-add ops of delta for key to b.
// key is the hashed key bytes (keywrite.CompatKey for compat reports).
//
// Every report of a store increments the same N counters whatever N it
// carries: a count-min estimate is only sound when writes and queries use
// the same hash positions, and a report's N is a prototype artefact (it shared
// Key-Write's pipeline). The report's N is validated on the wire (1..8).
func (s *Spec) Translate(b *memop.Batch, store uint16, key []byte, delta uint64) {
	s.TranslateKeyed(b, store, s.Hash.Key(key), delta)
}

// TranslateKeyed is Translate for a key already hashed with s.Hash (for a
// compat key: s.Hash.Key32, which skips building its bytes).
func (s *Spec) TranslateKeyed(b *memop.Batch, store uint16, k hashing.Keyed, delta uint64) {
	for i := range s.Redundancy {
		b.FetchAdd(store, s.Offset(k, i), delta)
	}
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

// Query returns the count-min estimate of key's sum: the minimum of its first
// n counters (0 means all N). Every report incremented all N, so any n gives
// an estimate at or above the true sum; n = N gives the tightest.
func (s *Store) Query(key []byte, n int) (uint64, error) {
	if n == 0 {
		n = s.spec.Redundancy
	}
	if n < 1 || n > s.spec.Redundancy {
		return 0, fmt.Errorf("redundancy %d out of range [1, %d]", n, s.spec.Redundancy)
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
