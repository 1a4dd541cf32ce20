package reporter

import (
	"encoding/binary"
	"fmt"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/wire/advert"
	"github.com/dta-go/dta/wire/dta"
)

// slotLayout is a Key-Write store's geometry as a DART reporter needs it.
// It computes what internal/primitive/keywrite's Spec computes for the
// translator and the query side (a test pins the two together, byte for
// byte):
//
//	slot size  = 4-byte checksum + value, padded to a multiple of 4
//	copy n     = slot hashing.Reduce(Keyed.Slot(n), slots), at slot × slot size
//	slot bytes = checksum(key), little-endian | value | zeros
//
// A 32-bit compat key (dta.Key.Compat) is hashed as its 4-byte
// little-endian encoding (hashing's Key32), as the translator hashes compat
// reports and the query API hashes decimal keys; any other key as its
// bytes.
type slotLayout struct {
	slots     uint64
	valueSize int
	slotSize  uint64
	maxN      int
	hash      hashing.Algorithm
}

// checksumLen is the key checksum at the start of a slot.
const checksumLen = 4

// layoutOf checks an advertised Key-Write store and returns its layout. It
// does not trust the advertisement beyond what it checks: the requester
// refuses any op outside the region anyway.
func layoutOf(s *advert.Store) (slotLayout, error) {
	g := &s.KeyWrite
	l := slotLayout{slots: g.Slots, valueSize: g.ValueSize, maxN: g.MaxRedundancy, hash: s.Hash,
		slotSize: uint64(checksumLen+g.ValueSize+3) &^ 3}
	switch {
	case g.Slots < 2 || g.Slots > 1<<32:
		return l, fmt.Errorf("store %s: %d slots", s.Name, g.Slots)
	case !s.Hash.Valid() || s.Hash == hashing.CRC32 && g.Slots&(g.Slots-1) != 0:
		return l, fmt.Errorf("store %s: hash %v over %d slots", s.Name, s.Hash, g.Slots)
	case g.ValueSize < 1 || g.ValueSize > dta.MaxValueLen:
		return l, fmt.Errorf("store %s: value size %d", s.Name, g.ValueSize)
	case g.MaxRedundancy < 1 || g.MaxRedundancy > dta.MaxRedundancy:
		return l, fmt.Errorf("store %s: redundancy %d", s.Name, g.MaxRedundancy)
	case s.Length/l.slotSize < g.Slots:
		return l, fmt.Errorf("store %s: a region of %d bytes cannot hold %d slots of %d bytes", s.Name, s.Length, g.Slots, l.slotSize)
	}
	return l, nil
}

// keyed hashes key as the translator and the query API do.
func (l *slotLayout) keyed(key dta.Key) hashing.Keyed {
	if key.Compat && len(key.Bytes) == 4 {
		return l.hash.Key32(binary.BigEndian.Uint32(key.Bytes))
	}
	return l.hash.Key(key.Bytes)
}

// offset is the byte offset of copy n of k.
func (l *slotLayout) offset(k hashing.Keyed, n int) uint64 {
	return hashing.Reduce(k.Slot(n), l.slots) * l.slotSize
}

// fill writes the slot of k and value into slot (slotSize bytes).
func (l *slotLayout) fill(slot []byte, k hashing.Keyed, value []byte) {
	binary.LittleEndian.PutUint32(slot, k.Checksum())
	n := copy(slot[checksumLen:], value)
	clear(slot[checksumLen+n:])
}
