package store

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/sketch"
	"github.com/dta-go/dta/wire/dta"
)

// Advertised is one store as a collector advertises it to a remote
// translator: its descriptor plus where its region is reachable over RDMA.
type Advertised struct {
	Descriptor
	VA     uint64 // RDMA virtual address of the region's first byte
	RKey   uint32 // remote key of the region
	Length uint64 // bytes of the region
	// Heads are the Append lists whose head is not 0, in list order: a
	// translator that starts, or finds the collector restarted, resumes its
	// writers there (a collector with durable stores restores them).
	Heads []ListHead
}

// ListHead is one Append list's head in an advertisement.
type ListHead struct {
	List uint32
	Head uint64
}

// Advertisement format (docs/PROTOCOL.md, "Store advertisement"):
//
//	magic "DTAS" | version 2 | reserved 0 | count u16 | records... | heads
//
// where heads (version 2) is
//
//	flags u8 (bit 0: incomplete, the heads did not fit) | count u32 |
//	count × (store index u16 | list u32 | head u64), lists increasing per store
//
// and per store:
//
//	id u16 | primitive u8 | flags u8 (bit 0 default) | hash u8 | name length u8 | name |
//	va u64 | rkey u32 | length u64 | geometry (by primitive):
//	  keywrite:     slots u64 | value_size u16 | redundancy u8
//	  keyincrement: slots u64 | redundancy u8
//	  postcard:     chunks u64 | hops u8 | redundancy u8 | min u32 | max u32
//	  append:       lists u32 | capacity u64 | entry_size u16 | batch u8
//	  sketchmerge:  rows u8 | columns u64 | epochs u8 | kind u8 (1 count-min, 2 count-sketch)
//
// All integers are big-endian.
const (
	advertMagic   = "DTAS"
	AdvertVersion = 2
	// MaxAdvertStores bounds the stores in one advertisement.
	MaxAdvertStores = 1024
	// MaxAdvertHeads bounds the Append heads in one advertisement (14 bytes
	// each, well inside the requester's 1 MiB limit).
	MaxAdvertHeads = 65536
)

// ErrTooManyHeads is returned (wrapped) by ParseAdvertisement when the
// collector had more non-empty Append lists than an advertisement carries.
var ErrTooManyHeads = errors.New("the collector has more non-empty append lists than an advertisement carries")

// ErrAdvert is wrapped by every advertisement decoding error.
var ErrAdvert = errors.New("store advertisement")

// AppendAdvertisement appends the encoded advertisement of stores to b.
func AppendAdvertisement(b []byte, stores []Advertised) ([]byte, error) {
	if len(stores) > MaxAdvertStores {
		return b, fmt.Errorf("%w: %d stores, at most %d", ErrAdvert, len(stores), MaxAdvertStores)
	}
	b = append(b, advertMagic...)
	b = append(b, AdvertVersion, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(len(stores)))
	for i := range stores {
		s := &stores[i]
		if len(s.Name) == 0 || len(s.Name) > 255 {
			return b, fmt.Errorf("%w: store name %q", ErrAdvert, s.Name)
		}
		var flags byte
		if s.Default {
			flags |= 1
		}
		var hash hashing.Algorithm
		switch s.Primitive {
		case dta.KeyWrite:
			hash = s.KeyWrite.Hash
		case dta.KeyIncrement:
			hash = s.KeyIncrement.Hash
		case dta.Postcard:
			hash = s.Postcard.Hash
		}
		b = binary.BigEndian.AppendUint16(b, s.ID)
		b = append(b, byte(s.Primitive), flags, byte(hash), byte(len(s.Name)))
		b = append(b, s.Name...)
		b = binary.BigEndian.AppendUint64(b, s.VA)
		b = binary.BigEndian.AppendUint32(b, s.RKey)
		b = binary.BigEndian.AppendUint64(b, s.Length)
		switch s.Primitive {
		case dta.KeyWrite:
			b = binary.BigEndian.AppendUint64(b, s.KeyWrite.Slots)
			b = binary.BigEndian.AppendUint16(b, uint16(s.KeyWrite.ValueSize))
			b = append(b, byte(s.KeyWrite.MaxRedundancy))
		case dta.KeyIncrement:
			b = binary.BigEndian.AppendUint64(b, s.KeyIncrement.Slots)
			b = append(b, byte(s.KeyIncrement.Redundancy))
		case dta.Postcard:
			b = binary.BigEndian.AppendUint64(b, s.Postcard.Chunks)
			b = append(b, byte(s.Postcard.Hops), byte(s.Postcard.Redundancy))
			b = binary.BigEndian.AppendUint32(b, s.Postcard.MinValue)
			b = binary.BigEndian.AppendUint32(b, s.Postcard.MaxValue)
		case dta.Append:
			b = binary.BigEndian.AppendUint32(b, s.Append.Lists)
			b = binary.BigEndian.AppendUint64(b, s.Append.Capacity)
			b = binary.BigEndian.AppendUint16(b, uint16(s.Append.EntrySize))
			b = append(b, byte(s.Append.Batch))
		case dta.SketchMerge:
			b = append(b, byte(s.SketchMerge.Rows))
			b = binary.BigEndian.AppendUint64(b, s.SketchMerge.Columns)
			b = append(b, byte(s.SketchMerge.Epochs), byte(s.SketchMerge.Kind))
		default:
			return b, fmt.Errorf("%w: store %s: unknown primitive %v", ErrAdvert, s.Name, s.Primitive)
		}
	}
	heads := 0
	for i := range stores {
		heads += len(stores[i].Heads)
	}
	if heads > MaxAdvertHeads {
		// The translator refuses an incomplete table rather than restart
		// lists from 0 over restored entries.
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

// advReader is a sticky-error reader over an advertisement.
type advReader struct {
	b   []byte
	err error
}

func (r *advReader) take(n int) []byte {
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

func (r *advReader) u8() uint8 {
	if v := r.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (r *advReader) u16() uint16 {
	if v := r.take(2); v != nil {
		return binary.BigEndian.Uint16(v)
	}
	return 0
}

func (r *advReader) u32() uint32 {
	if v := r.take(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

func (r *advReader) u64() uint64 {
	if v := r.take(8); v != nil {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

// ParseAdvertisement decodes an advertisement and validates every store the
// way a configuration is validated: unique names and ids, one default per
// primitive, geometry that passes its Spec's Validate, and a region length
// that holds the geometry. It never trusts a count or length it has not
// bounded.
func ParseAdvertisement(b []byte) ([]Advertised, error) {
	r := &advReader{b: b}
	if string(r.take(4)) != advertMagic {
		return nil, fmt.Errorf("%w: bad magic", ErrAdvert)
	}
	if v := r.u8(); v != AdvertVersion {
		return nil, fmt.Errorf("%w: version %d, this build reads %d (collector and translator must be of the same release)", ErrAdvert, v, AdvertVersion)
	}
	r.u8()
	n := int(r.u16())
	if r.err != nil {
		return nil, r.err
	}
	if n == 0 || n > MaxAdvertStores {
		return nil, fmt.Errorf("%w: %d stores", ErrAdvert, n)
	}
	out := make([]Advertised, 0, n)
	names := map[string]bool{}
	ids := map[uint16]bool{}
	var defaults [dta.NumPrimitives]bool
	for i := 0; i < n; i++ {
		var s Advertised
		s.ID = r.u16()
		s.Primitive = dta.Primitive(r.u8())
		flags := r.u8()
		s.Default = flags&1 != 0
		hash := hashing.Algorithm(r.u8())
		s.Name = string(r.take(int(r.u8())))
		s.VA, s.RKey, s.Length = r.u64(), r.u32(), r.u64()
		switch s.Primitive {
		case dta.KeyWrite:
			s.KeyWrite.Slots = r.u64()
			s.KeyWrite.ValueSize = int(r.u16())
			s.KeyWrite.MaxRedundancy = int(r.u8())
			s.KeyWrite.Hash = hash
		case dta.KeyIncrement:
			s.KeyIncrement.Slots = r.u64()
			s.KeyIncrement.Redundancy = int(r.u8())
			s.KeyIncrement.Hash = hash
		case dta.Postcard:
			s.Postcard.Chunks = r.u64()
			s.Postcard.Hops = int(r.u8())
			s.Postcard.Redundancy = int(r.u8())
			s.Postcard.MinValue, s.Postcard.MaxValue = r.u32(), r.u32()
			s.Postcard.Hash = hash
		case dta.Append:
			s.Append.Lists = r.u32()
			s.Append.Capacity = r.u64()
			s.Append.EntrySize = int(r.u16())
			s.Append.Batch = int(r.u8())
		case dta.SketchMerge:
			s.SketchMerge.Rows = int(r.u8())
			s.SketchMerge.Columns = r.u64()
			s.SketchMerge.Epochs = int(r.u8())
			s.SketchMerge.Kind = sketch.Kind(r.u8())
		default:
			if r.err == nil {
				return nil, fmt.Errorf("%w: store %d: unknown primitive %d", ErrAdvert, i, s.Primitive)
			}
		}
		if r.err != nil {
			return nil, r.err
		}
		if !nameRE.MatchString(s.Name) || names[s.Name] {
			return nil, fmt.Errorf("%w: store %d: bad or repeated name %q", ErrAdvert, i, s.Name)
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
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("%w: store %s: %w", ErrAdvert, s.Name, err)
		}
		if s.Length < s.RegionSize() {
			return nil, fmt.Errorf("%w: store %s: region of %d bytes cannot hold the %d its geometry needs", ErrAdvert, s.Name, s.Length, s.RegionSize())
		}
		names[s.Name], ids[s.ID] = true, true
		out = append(out, s)
	}
	if err := parseHeads(r, out); err != nil {
		return nil, err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrAdvert, len(r.b))
	}
	return out, nil
}

// parseHeads reads the heads section into the Append stores of out.
func parseHeads(r *advReader, out []Advertised) error {
	flags := r.u8()
	n := r.u32()
	if r.err != nil {
		return r.err
	}
	if flags&^1 != 0 {
		return fmt.Errorf("%w: heads flags %#x", ErrAdvert, flags)
	}
	if flags&1 != 0 {
		return fmt.Errorf("%w: %w (more than %d)", ErrAdvert, ErrTooManyHeads, MaxAdvertHeads)
	}
	if n > MaxAdvertHeads || uint64(n)*14 > uint64(len(r.b)) {
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
