package tea

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// Decoding errors.
var (
	// ErrTruncated reports a cell, row or scratchpad shorter than the Spec says.
	ErrTruncated = errors.New("tea: truncated")
	// ErrFlags reports a cell flag byte with reserved bits set.
	ErrFlags = errors.New("tea: reserved cell flag bits set")
	// ErrKeySize reports a key whose length is not the table's key size.
	ErrKeySize = errors.New("tea: key length differs from the table's key size")
	// ErrValueSize reports a value whose length is not the table's value size.
	ErrValueSize = errors.New("tea: value length differs from the table's value size")
	// ErrPacketSize reports a packet larger than the scratchpad.
	ErrPacketSize = errors.New("tea: packet larger than the scratchpad")
)

// Cell is one decoded cell. Key and Value alias the decoded bytes.
type Cell struct {
	Valid bool
	Key   []byte
	Value []byte
}

// PutCell encodes a valid cell holding key and value into dst, which must be
// CellSize bytes, and key and value of the Spec's sizes (it panics
// otherwise, like copy into a short slice would not).
func (s Spec) PutCell(dst, key, value []byte) {
	if uint64(len(dst)) != s.CellSize() || len(key) != s.KeySize || len(value) != s.ValueSize {
		panic("tea: PutCell with sizes that differ from the Spec")
	}
	dst[0] = FlagValid
	copy(dst[1:], key)
	copy(dst[1+s.KeySize:], value)
}

// DecodeCell decodes the cell at the start of b. An invalid (empty) cell
// decodes to Cell{} whatever its other bytes. It never panics; the cell
// aliases b.
func (s Spec) DecodeCell(b []byte) (Cell, error) {
	if uint64(len(b)) < s.CellSize() {
		return Cell{}, ErrTruncated
	}
	f := b[0]
	if f&^FlagValid != 0 {
		return Cell{}, ErrFlags
	}
	if f&FlagValid == 0 {
		return Cell{}, nil
	}
	k := 1 + s.KeySize
	return Cell{Valid: true, Key: b[1:k:k], Value: b[k : k+s.ValueSize : k+s.ValueSize]}, nil
}

// Match looks for key among the 2 × Cells cells at the start of row (a
// bucket and the shadow copy of the next one, as one read returns them). It
// returns the index of the first valid cell holding key (0..Cells−1: the home
// bucket; Cells..2·Cells−1: the next one) and its value, aliasing row; or −1.
// A cell with reserved flag bits set never matches. It does not allocate.
func (s Spec) Match(row, key []byte) (cell int, value []byte) {
	cs := int(s.CellSize())
	n := 2 * s.Cells
	if len(row) < n*cs {
		n = len(row) / cs
	}
	for c := range n {
		b := row[c*cs : (c+1)*cs]
		if b[0] != FlagValid {
			continue
		}
		k := 1 + s.KeySize
		if bytes.Equal(b[1:k], key) {
			return c, b[k : k+s.ValueSize : k+s.ValueSize]
		}
	}
	return -1, nil
}

// PutScratchpadHeader writes the scratchpad header for a packet of n bytes
// parked by the lookup tagged tag into dst[:ScratchpadHeaderLen].
func PutScratchpadHeader(dst []byte, tag uint64, n int) {
	_ = dst[ScratchpadHeaderLen-1]
	binary.BigEndian.PutUint64(dst, tag)
	binary.BigEndian.PutUint16(dst[8:], uint16(n))
	clear(dst[10:ScratchpadHeaderLen])
}

// DecodeScratchpad returns the tag and the packet of the scratchpad at the
// start of b, the packet aliasing b. It fails on a short b, a length above
// max or reserved bytes that are not zero; it never panics.
func DecodeScratchpad(b []byte, max int) (tag uint64, packet []byte, err error) {
	if len(b) < ScratchpadHeaderLen {
		return 0, nil, ErrTruncated
	}
	tag = binary.BigEndian.Uint64(b)
	n := int(binary.BigEndian.Uint16(b[8:]))
	for _, z := range b[10:ScratchpadHeaderLen] {
		if z != 0 {
			return 0, nil, ErrFlags
		}
	}
	if n > max {
		return 0, nil, ErrPacketSize
	}
	if len(b) < ScratchpadHeaderLen+n {
		return 0, nil, ErrTruncated
	}
	return tag, b[ScratchpadHeaderLen : ScratchpadHeaderLen+n : ScratchpadHeaderLen+n], nil
}
