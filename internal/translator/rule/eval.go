package rule

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/wire/dta"
)

// PathAggregate reduces the hop values of a path (vals[i] for every hop i+1
// whose bit is set in present) with the rule's aggregate. Over no hops
// every aggregate is 0.
func (r *Rule) PathAggregate(vals *[hashing.MaxHops]uint32, present uint8) uint64 {
	if present == 0 {
		return 0
	}
	switch r.Aggregate {
	case Count:
		return uint64(bits.OnesCount8(present))
	case Max:
		var m uint32
		for p := present; p != 0; p &= p - 1 {
			m = max(m, vals[bits.TrailingZeros8(p)])
		}
		return uint64(m)
	case Min:
		m := uint32(math.MaxUint32)
		for p := present; p != 0; p &= p - 1 {
			m = min(m, vals[bits.TrailingZeros8(p)])
		}
		return uint64(m)
	}
	var s uint64
	for p := present; p != 0; p &= p - 1 {
		s += uint64(vals[bits.TrailingZeros8(p)])
	}
	return s
}

// ReportAggregate is the aggregate of one report whose value is v: v itself,
// or 1 for count.
func (r *Rule) ReportAggregate(v uint64) uint64 {
	if r.Aggregate == Count {
		return 1
	}
	return v
}

// ReportValue interprets a report's value (a Key-Write value, an Append
// entry) as a big-endian unsigned number. A value of more than 8 bytes whose
// leading bytes are not all zero saturates at 2^64-1.
func ReportValue(b []byte) uint64 {
	if len(b) > 8 {
		for _, c := range b[:len(b)-8] {
			if c != 0 {
				return math.MaxUint64
			}
		}
		b = b[len(b)-8:]
	}
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

// Rule entry layout (docs/PROTOCOL.md, "Rule result entries"), in an Append
// entry of E bytes:
//
//	[0]       key length L, 1..64: the length of the key that fired
//	[1:E-8]   the key's first min(L, E-9) bytes, zero-padded to E-9 bytes
//	[E-8:E]   the aggregate, uint64 big-endian
//
// A key longer than E-9 bytes is truncated; L still says how long it was.
const (
	entryOverhead = 1 + 8
	// MinEntrySize is the smallest Append entry a rule writes to: room for a
	// whole 32-bit key.
	MinEntrySize = entryOverhead + 4
)

// PutEntry fills dst (the target store's entry size, at least MinEntrySize
// bytes) with the entry of key and aggregate agg.
func PutEntry(dst []byte, key []byte, agg uint64) {
	n := len(dst) - entryOverhead
	dst[0] = byte(len(key))
	c := copy(dst[1:1+n], key)
	clear(dst[1+c : 1+n])
	binary.BigEndian.PutUint64(dst[1+n:], agg)
}

// Entry is a decoded rule entry.
type Entry struct {
	KeyLen    int    // the length of the key that fired
	Key       []byte // the key's bytes as stored: all KeyLen, or the first E-9 when Truncated
	Truncated bool   // the key was longer than the entry holds
	Aggregate uint64
}

// ErrEntry is returned for bytes that are not a rule entry.
var ErrEntry = errors.New("not a rule entry")

// ParseEntry decodes a rule entry. Key aliases b.
func ParseEntry(b []byte) (Entry, error) {
	if len(b) < MinEntrySize {
		return Entry{}, fmt.Errorf("%w: %d bytes, at least %d", ErrEntry, len(b), MinEntrySize)
	}
	n := len(b) - entryOverhead
	l := int(b[0])
	if l < 1 || l > dta.MaxKeyLen {
		return Entry{}, fmt.Errorf("%w: key length %d outside 1..%d", ErrEntry, l, dta.MaxKeyLen)
	}
	e := Entry{KeyLen: l, Aggregate: binary.BigEndian.Uint64(b[1+n:])}
	if l > n {
		e.Key, e.Truncated = b[1:1+n], true
	} else {
		e.Key = b[1 : 1+l]
	}
	return e, nil
}

// ListFor is the list of an Append store with lists lists that an entry of
// key goes to when a rule spreads its entries by key: the CRC-32C
// (Castagnoli) of the key bytes, mod lists.
func ListFor(key []byte, lists uint32) uint32 {
	return hashing.CRC32C.Checksum(key) % lists
}

// Key is the key a rule evaluated on a report files the report under: the
// key as the reporter sent it (for a compat report its 4 big-endian wire
// bytes), or for an Append report, which has none, its list id as 4
// big-endian bytes written into buf. A path's key is postcard.Path.Key, the
// key as its postcards carried it.
func Key(r *dta.Report, buf *[4]byte) []byte {
	if r.Primitive() == dta.Append {
		binary.BigEndian.PutUint32(buf[:], r.List)
		return buf[:]
	}
	return r.Key
}
