// Package appendlist is the Append primitive: many lists, each a ring buffer
// of fixed-size entries in collector memory. The translator batches B entries
// of a list into one write, keeps each list's head, flushes partial batches
// after a delay, and publishes how far it has written in a header word that
// readers poll. Readers never return a stale or torn entry as new, and count
// the entries they lost when the writer lapped them.
//
// Memory layout (docs/PROTOCOL.md): Lists lists of ListStride bytes each:
//
//	[0:8]    head: entries published so far (uint64, little-endian), written
//	         by the translator after the entries it counts
//	[8:16]   low watermark (uint64, little-endian): entries below it are not
//	         readable. Zero unless the list was restored from a checkpoint
//	         taken while the writer went on (internal/snapshot): it then
//	         excludes entries the writer overwrote during the copy. Writers
//	         never write it.
//	[16:64]  reserved, zero
//	[64:...] ring of Capacity entries of EntrySize bytes; entry i (counting
//	         from the first entry ever appended) lives at ring slot i % Capacity
//
// The writer may be placing at most one batch (B entries) beyond the head it
// has published, so a reader treats entry i as readable while
// head - Capacity + B ≤ i < head, checking the head again after copying: a
// reader can count on the last Capacity - B entries, not on all Capacity.
//
// The package does no I/O; the translator-side Writer is its only state.
package appendlist

import (
	"errors"
	"fmt"

	"github.com/dta-go/dta/wire/dta"
)

// Layout constants.
const (
	HeaderSize = 64 // bytes before a list's ring (one cache line)
	MaxBatch   = 16
	MaxLists   = 1 << 24
	// MaxPending bounds the translator memory for partial batches.
	MaxPending = 256 << 20
)

// Spec is the geometry of one Append store.
type Spec struct {
	Lists     uint32 // number of lists, 1..MaxLists
	Capacity  uint64 // entries per list's ring, ≥ 2 × Batch
	EntrySize int    // bytes per entry, 1..dta.MaxValueLen
	Batch     int    // entries per write B, 1..MaxBatch
}

// Validate reports the first thing wrong with s, naming the field.
func (s Spec) Validate() error {
	switch {
	case s.Lists < 1 || s.Lists > MaxLists:
		return fmt.Errorf("lists: %d out of range [1, %d]", s.Lists, MaxLists)
	case s.EntrySize < 1 || s.EntrySize > dta.MaxValueLen:
		return fmt.Errorf("entry_size: %d out of range [1, %d]", s.EntrySize, dta.MaxValueLen)
	case s.Batch < 1 || s.Batch > MaxBatch:
		return fmt.Errorf("batch: %d out of range [1, %d]", s.Batch, MaxBatch)
	case s.Capacity < 2*uint64(s.Batch) || s.Capacity > 1<<40/uint64(s.EntrySize):
		// Readers skip the Batch oldest entries, which the writer may be
		// overwriting; a ring of fewer than 2 batches would leave too little.
		return fmt.Errorf("capacity: %d entries out of range [2 × batch = %d, 2^40/entry_size]", s.Capacity, 2*s.Batch)
	case uint64(s.Lists)*uint64(s.Batch)*uint64(s.EntrySize) > MaxPending:
		return fmt.Errorf("lists × batch × entry_size = %d bytes of translator batches exceeds %d", uint64(s.Lists)*uint64(s.Batch)*uint64(s.EntrySize), MaxPending)
	case uint64(s.Lists)*s.ListStride() > 1<<40:
		return fmt.Errorf("lists × capacity × entry_size exceeds 1 TiB")
	}
	return nil
}

// ListStride is the bytes of one list: header plus ring, rounded up to 64.
func (s Spec) ListStride() uint64 {
	return HeaderSize + (s.Capacity*uint64(s.EntrySize)+63)&^63
}

// RegionSize is the bytes of memory the store needs.
func (s Spec) RegionSize() uint64 { return uint64(s.Lists) * s.ListStride() }

// CapacityFor returns the ring capacity per list that fits lists of spec's
// entry size in memory bytes.
func (s Spec) CapacityFor(memory uint64) uint64 {
	per := memory / uint64(max(s.Lists, 1))
	if per <= HeaderSize+63 {
		return 0
	}
	return (per - HeaderSize - 63) / uint64(s.EntrySize)
}

// HeadOffset is the offset of list's head word.
func (s Spec) HeadOffset(list uint32) uint64 { return uint64(list) * s.ListStride() }

// LowOffset is the offset of list's low watermark word.
func (s Spec) LowOffset(list uint32) uint64 { return s.HeadOffset(list) + 8 }

// MaxWriteBytes bounds the entries a writer places in one write when whole
// batches arrive together (Spec.Window).
const MaxWriteBytes = 4096

// maxGroup is the most batches a writer places before it publishes a head.
const maxGroup = 16

// Window is the most entries a writer places beyond the head it published:
// whole batches that arrive together (a run of one list's entries in one
// datagram) are written in one write of up to MaxWriteBytes, followed by one
// head, rather than a write and a head each. It is Batch times the batches
// such a write holds (at most 16, and at most a sixteenth of the ring, so a
// reader the writer laps loses little more than with one batch), and
// never less than Batch.
func (s Spec) Window() uint64 {
	b := uint64(s.Batch)
	g := min(MaxWriteBytes/(b*uint64(s.EntrySize)), maxGroup, s.Capacity/(16*b))
	return max(g, 1) * b
}

// Lowest is the oldest entry index readable in a list whose head is head and
// whose low watermark is low: the writer may be placing up to Window entries
// beyond head, overwriting the oldest Window entries of the ring, and
// nothing below low is readable. It is never above head: a low watermark
// above the head (memory no well-behaved writer leaves, e.g. from a faulty
// RDMA peer) leaves nothing readable instead of indexes past the head; and
// a head near 2^64 does not wrap.
func (s Spec) Lowest(head, low uint64) uint64 {
	lowest := low
	if room := s.Capacity - s.Window(); head > room { // Window <= Capacity/2 (Capacity >= 2 x Batch)
		lowest = max(head-room, low)
	}
	return min(lowest, head)
}

// EntryOffset is the offset of entry i (absolute index) of list.
func (s Spec) EntryOffset(list uint32, i uint64) uint64 {
	return s.HeadOffset(list) + HeaderSize + (i%s.Capacity)*uint64(s.EntrySize)
}

// Errors a report can be dropped for.
var (
	ErrList      = errors.New("list id beyond the store's lists")
	ErrEntrySize = errors.New("entry size differs from the store's")
)
