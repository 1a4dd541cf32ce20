package advert

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/wire/dta"
)

// Format constants.
const (
	// Magic opens every advertisement.
	Magic = "DTAS"
	// Version is the only version this build encodes and decodes.
	Version = 2
	// MaxStores bounds the stores in one advertisement.
	MaxStores = 1024
	// MaxHeads bounds the Append heads in one advertisement (14 bytes
	// each).
	MaxHeads = 65536
	// MaxNameLen is the longest store name the format carries.
	MaxNameLen = 255
)

// Errors. Every decoding and encoding error wraps ErrAdvert.
var (
	// ErrAdvert is wrapped by every error of this package.
	ErrAdvert = errors.New("store advertisement")
	// ErrTooManyHeads is wrapped by Decode when the collector had more
	// non-empty Append lists than an advertisement carries: a translator
	// refuses the table rather than restart lists at 0.
	ErrTooManyHeads = errors.New("the collector has more non-empty append lists than an advertisement carries")
)

// Store is one advertised store: its identity, where its region is, and its
// geometry. Only the geometry field of its Primitive is meaningful.
type Store struct {
	ID        uint16            // wire store id of extended reports, 1..65535
	Primitive dta.Primitive     // 1 Key-Write, 2 Append, 3 Key-Increment, 4 Postcarding, 5 Sketch-Merge, 6 TEA table
	Default   bool              // the default store of its primitive
	Hash      hashing.Algorithm // Key-Write, Key-Increment, Postcarding; 0 otherwise
	Name      string            // 1..MaxNameLen bytes

	VA     uint64 // RDMA virtual address of the region's first byte
	RKey   uint32 // remote key of the region
	Length uint64 // bytes of the region

	KeyWrite     KeyWrite
	KeyIncrement KeyIncrement
	Postcard     Postcard
	Append       Append
	SketchMerge  SketchMerge
	TeaTable     TeaTable

	// Heads are the Append lists whose head is not 0, lists increasing
	// (Append stores only).
	Heads []ListHead
}

// KeyWrite is a Key-Write store's geometry.
type KeyWrite struct {
	Slots         uint64 // number of slots
	ValueSize     int    // bytes of a value (u16 on the wire)
	MaxRedundancy int    // largest N a report may ask for (u8)
}

// KeyIncrement is a Key-Increment store's geometry.
type KeyIncrement struct {
	Slots      uint64 // number of 8-byte counters
	Redundancy int    // counters per key (u8)
}

// Postcard is a Postcarding store's geometry.
type Postcard struct {
	Chunks             uint64 // number of chunks
	Hops               int    // slots per chunk (u8)
	Redundancy         int    // chunks per key (u8)
	MinValue, MaxValue uint32 // the value set
}

// Append is an Append store's geometry.
type Append struct {
	Lists     uint32 // number of lists
	Capacity  uint64 // entries per list
	EntrySize int    // bytes of an entry (u16)
	Batch     int    // entries per translator batch (u8)
}

// SketchMerge is a Sketch-Merge store's geometry.
type SketchMerge struct {
	Rows    int    // u8
	Columns uint64 // counters per row
	Epochs  int    // u8
	Kind    uint8  // 1 count-min, 2 count-sketch (package sketch's Kind)
}

// TeaTable is a TEA table's geometry (internal/tea's Spec). Its hash is
// not a hashing.Algorithm: the record's hash byte is 0 and TableHash names
// the bucket hash.
type TeaTable struct {
	Buckets    uint64 // buckets (rows) of the table
	Cells      int    // cells per bucket (u8)
	KeySize    int    // bytes of a key (u8)
	ValueSize  int    // bytes of a value (u16)
	Scratchpad int    // bytes of packet a row's scratchpad holds, 0: none (u16)
	TableHash  uint8  // the bucket hash: 1 CRC-64/XZ
}

// ListHead is one Append list's head.
type ListHead struct {
	List uint32
	Head uint64
}

// headLen is the bytes of one encoded head.
const headLen = 2 + 4 + 8

// Encode appends the advertisement of stores to b. Geometry fields are
// written in their wire widths (a value that does not fit is an error). If
// the stores hold more than MaxHeads heads, the heads section is marked
// incomplete and left empty, so that the receiver refuses the table.
func Encode(b []byte, stores []Store) ([]byte, error) {
	if len(stores) == 0 || len(stores) > MaxStores {
		return b, fmt.Errorf("%w: %d stores, want 1 to %d", ErrAdvert, len(stores), MaxStores)
	}
	b = append(b, Magic...)
	b = append(b, Version, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(len(stores)))
	heads := 0
	for i := range stores {
		s := &stores[i]
		if len(s.Name) == 0 || len(s.Name) > MaxNameLen {
			return b, fmt.Errorf("%w: store name %q: want 1 to %d bytes", ErrAdvert, s.Name, MaxNameLen)
		}
		var flags byte
		if s.Default {
			flags |= 1
		}
		b = binary.BigEndian.AppendUint16(b, s.ID)
		b = append(b, byte(s.Primitive), flags, byte(s.Hash), byte(len(s.Name)))
		b = append(b, s.Name...)
		b = binary.BigEndian.AppendUint64(b, s.VA)
		b = binary.BigEndian.AppendUint32(b, s.RKey)
		b = binary.BigEndian.AppendUint64(b, s.Length)
		var err error
		switch s.Primitive {
		case dta.KeyWrite:
			g := &s.KeyWrite
			b = binary.BigEndian.AppendUint64(b, g.Slots)
			b, err = appendU16(b, "value_size", g.ValueSize)
			if err == nil {
				b, err = appendU8(b, "redundancy", g.MaxRedundancy)
			}
		case dta.KeyIncrement:
			g := &s.KeyIncrement
			b = binary.BigEndian.AppendUint64(b, g.Slots)
			b, err = appendU8(b, "redundancy", g.Redundancy)
		case dta.Postcard:
			g := &s.Postcard
			b = binary.BigEndian.AppendUint64(b, g.Chunks)
			b, err = appendU8(b, "hops", g.Hops)
			if err == nil {
				b, err = appendU8(b, "redundancy", g.Redundancy)
			}
			b = binary.BigEndian.AppendUint32(b, g.MinValue)
			b = binary.BigEndian.AppendUint32(b, g.MaxValue)
		case dta.Append:
			g := &s.Append
			b = binary.BigEndian.AppendUint32(b, g.Lists)
			b = binary.BigEndian.AppendUint64(b, g.Capacity)
			b, err = appendU16(b, "entry_size", g.EntrySize)
			if err == nil {
				b, err = appendU8(b, "batch", g.Batch)
			}
		case dta.SketchMerge:
			g := &s.SketchMerge
			b, err = appendU8(b, "rows", g.Rows)
			b = binary.BigEndian.AppendUint64(b, g.Columns)
			if err == nil {
				b, err = appendU8(b, "epochs", g.Epochs)
			}
			b = append(b, g.Kind)
		case dta.TeaTable:
			g := &s.TeaTable
			b = binary.BigEndian.AppendUint64(b, g.Buckets)
			b, err = appendU8(b, "cells", g.Cells)
			if err == nil {
				b, err = appendU8(b, "key_size", g.KeySize)
			}
			if err == nil {
				b, err = appendU16(b, "value_size", g.ValueSize)
			}
			if err == nil {
				b, err = appendU16(b, "scratchpad", g.Scratchpad)
			}
			b = append(b, g.TableHash)
		default:
			err = fmt.Errorf("unknown primitive %v", s.Primitive)
		}
		if err != nil {
			return b, fmt.Errorf("%w: store %s: %w", ErrAdvert, s.Name, err)
		}
		heads += len(s.Heads)
	}
	if heads > MaxHeads {
		b = append(b, 1)
		return binary.BigEndian.AppendUint32(b, 0), nil
	}
	b = append(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(heads))
	for i := range stores {
		for _, h := range stores[i].Heads {
			b = binary.BigEndian.AppendUint16(b, uint16(i))
			b = binary.BigEndian.AppendUint32(b, h.List)
			b = binary.BigEndian.AppendUint64(b, h.Head)
		}
	}
	return b, nil
}

func appendU8(b []byte, field string, v int) ([]byte, error) {
	if v < 0 || v > 0xFF {
		return b, fmt.Errorf("%s %d does not fit in a byte", field, v)
	}
	return append(b, byte(v)), nil
}

func appendU16(b []byte, field string, v int) ([]byte, error) {
	if v < 0 || v > 0xFFFF {
		return b, fmt.Errorf("%s %d does not fit in 16 bits", field, v)
	}
	return binary.BigEndian.AppendUint16(b, uint16(v)), nil
}

// reader is a sticky-error reader over an advertisement.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if len(r.b) < n {
		r.err = fmt.Errorf("%w: truncated", ErrAdvert)
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8() uint8 {
	if v := r.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if v := r.take(2); v != nil {
		return binary.BigEndian.Uint16(v)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if v := r.take(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if v := r.take(8); v != nil {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

// minRecord is the fewest bytes a store record takes (a one-byte name and
// the shortest geometry), used to bound the store count by the bytes left.
const minRecord = 2 + 1 + 1 + 1 + 1 + 1 + 8 + 4 + 8 + 9

// Decode decodes an advertisement. It checks what the package doc lists and
// returns an error wrapping ErrAdvert (and ErrTooManyHeads for an incomplete
// heads section) for anything else. The stores are in the collector's order:
// a requester's target index.
func Decode(b []byte) ([]Store, error) {
	r := &reader{b: b}
	if string(r.take(len(Magic))) != Magic {
		return nil, fmt.Errorf("%w: bad magic", ErrAdvert)
	}
	if v := r.u8(); v != Version {
		return nil, fmt.Errorf("%w: version %d, this build reads %d (collector and translator must be of the same release)", ErrAdvert, v, Version)
	}
	if v := r.u8(); v != 0 && r.err == nil {
		return nil, fmt.Errorf("%w: reserved byte %#x", ErrAdvert, v)
	}
	n := int(r.u16())
	if r.err != nil {
		return nil, r.err
	}
	if n == 0 || n > MaxStores || n*minRecord > len(r.b) {
		return nil, fmt.Errorf("%w: %d stores", ErrAdvert, n)
	}
	out := make([]Store, n)
	names := make(map[string]bool, n)
	ids := make(map[uint16]bool, n)
	var defaults [dta.NumPrimitives]bool
	for i := range out {
		s := &out[i]
		s.ID = r.u16()
		s.Primitive = dta.Primitive(r.u8())
		flags := r.u8()
		s.Hash = hashing.Algorithm(r.u8())
		s.Name = string(r.take(int(r.u8())))
		s.VA, s.RKey, s.Length = r.u64(), r.u32(), r.u64()
		switch s.Primitive {
		case dta.KeyWrite:
			s.KeyWrite = KeyWrite{Slots: r.u64(), ValueSize: int(r.u16()), MaxRedundancy: int(r.u8())}
		case dta.KeyIncrement:
			s.KeyIncrement = KeyIncrement{Slots: r.u64(), Redundancy: int(r.u8())}
		case dta.Postcard:
			s.Postcard = Postcard{Chunks: r.u64(), Hops: int(r.u8()), Redundancy: int(r.u8()), MinValue: r.u32(), MaxValue: r.u32()}
		case dta.Append:
			s.Append = Append{Lists: r.u32(), Capacity: r.u64(), EntrySize: int(r.u16()), Batch: int(r.u8())}
		case dta.SketchMerge:
			s.SketchMerge = SketchMerge{Rows: int(r.u8()), Columns: r.u64(), Epochs: int(r.u8()), Kind: r.u8()}
		case dta.TeaTable:
			s.TeaTable = TeaTable{Buckets: r.u64(), Cells: int(r.u8()), KeySize: int(r.u8()), ValueSize: int(r.u16()), Scratchpad: int(r.u16()), TableHash: r.u8()}
		default:
			if r.err == nil {
				return nil, fmt.Errorf("%w: store %d: unknown primitive %d", ErrAdvert, i, s.Primitive)
			}
		}
		if r.err != nil {
			return nil, r.err
		}
		if flags&^1 != 0 {
			return nil, fmt.Errorf("%w: store %s: flags %#x", ErrAdvert, s.Name, flags)
		}
		s.Default = flags&1 != 0
		if s.Name == "" || names[s.Name] {
			return nil, fmt.Errorf("%w: store %d: empty or repeated name %q", ErrAdvert, i, s.Name)
		}
		if s.ID == 0 || ids[s.ID] {
			return nil, fmt.Errorf("%w: store %s: bad or repeated id %d", ErrAdvert, s.Name, s.ID)
		}
		if s.Default {
			if defaults[s.Primitive] {
				return nil, fmt.Errorf("%w: store %s: second default %v store", ErrAdvert, s.Name, s.Primitive)
			}
			defaults[s.Primitive] = true
		}
		names[s.Name], ids[s.ID] = true, true
	}
	if err := decodeHeads(r, out); err != nil {
		return nil, err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrAdvert, len(r.b))
	}
	return out, nil
}

// decodeHeads reads the heads section into the Append stores of out.
func decodeHeads(r *reader, out []Store) error {
	flags := r.u8()
	n := r.u32()
	if r.err != nil {
		return r.err
	}
	if flags&^1 != 0 {
		return fmt.Errorf("%w: heads flags %#x", ErrAdvert, flags)
	}
	if flags&1 != 0 {
		return fmt.Errorf("%w: %w (more than %d)", ErrAdvert, ErrTooManyHeads, MaxHeads)
	}
	if n > MaxHeads || uint64(n)*headLen > uint64(len(r.b)) {
		return fmt.Errorf("%w: %d heads", ErrAdvert, n)
	}
	for range n {
		i, list, head := int(r.u16()), r.u32(), r.u64()
		if i >= len(out) || out[i].Primitive != dta.Append || list >= out[i].Append.Lists {
			return fmt.Errorf("%w: head of store %d list %d: no such append list", ErrAdvert, i, list)
		}
		s := &out[i]
		if k := len(s.Heads); k > 0 && s.Heads[k-1].List >= list {
			return fmt.Errorf("%w: store %s: heads not in increasing list order", ErrAdvert, s.Name)
		}
		s.Heads = append(s.Heads, ListHead{List: list, Head: head})
	}
	return r.err
}

// Find returns the index of the store named name, or, for an empty name,
// of the default store of primitive p; -1 if there is none (or the named
// store is of another primitive).
func Find(stores []Store, p dta.Primitive, name string) int {
	for i := range stores {
		s := &stores[i]
		if s.Primitive != p {
			continue
		}
		if name == "" && s.Default || name != "" && s.Name == name {
			return i
		}
	}
	return -1
}
