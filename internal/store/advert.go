package store

import (
	"fmt"

	"github.com/dta-go/dta/internal/tea"
	"github.com/dta-go/dta/sketch"
	"github.com/dta-go/dta/wire/advert"
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
type ListHead = advert.ListHead

// The advertisement's format (docs/PROTOCOL.md, "Store advertisement") is
// package wire/advert's, the one codec that collectors, translators and DART
// reporters share; this file maps it onto Descriptors and validates every
// store as a configuration is validated.
const (
	// AdvertVersion is the advertisement version this build speaks.
	AdvertVersion = advert.Version
	// MaxAdvertStores bounds the stores in one advertisement.
	MaxAdvertStores = advert.MaxStores
	// MaxAdvertHeads bounds the Append heads in one advertisement (14 bytes
	// each, well inside the requester's 1 MiB limit).
	MaxAdvertHeads = advert.MaxHeads
)

// ErrTooManyHeads is returned (wrapped) by ParseAdvertisement when the
// collector had more non-empty Append lists than an advertisement carries.
var ErrTooManyHeads = advert.ErrTooManyHeads

// ErrAdvert is wrapped by every advertisement decoding error.
var ErrAdvert = advert.ErrAdvert

// AppendAdvertisement appends the encoded advertisement of stores to b.
func AppendAdvertisement(b []byte, stores []Advertised) ([]byte, error) {
	if len(stores) > MaxAdvertStores {
		return b, fmt.Errorf("%w: %d stores, at most %d", ErrAdvert, len(stores), MaxAdvertStores)
	}
	out := make([]advert.Store, len(stores))
	for i := range stores {
		out[i] = toWire(&stores[i])
	}
	return advert.Encode(b, out)
}

// toWire maps a store onto its advertisement record.
func toWire(s *Advertised) advert.Store {
	w := advert.Store{ID: s.ID, Primitive: s.Primitive, Default: s.Default, Name: s.Name,
		VA: s.VA, RKey: s.RKey, Length: s.Length, Heads: s.Heads}
	switch s.Primitive {
	case dta.KeyWrite:
		g := &s.KeyWrite
		w.Hash = g.Hash
		w.KeyWrite = advert.KeyWrite{Slots: g.Slots, ValueSize: g.ValueSize, MaxRedundancy: g.MaxRedundancy}
	case dta.KeyIncrement:
		g := &s.KeyIncrement
		w.Hash = g.Hash
		w.KeyIncrement = advert.KeyIncrement{Slots: g.Slots, Redundancy: g.Redundancy}
	case dta.Postcard:
		g := &s.Postcard
		w.Hash = g.Hash
		w.Postcard = advert.Postcard{Chunks: g.Chunks, Hops: g.Hops, Redundancy: g.Redundancy, MinValue: g.MinValue, MaxValue: g.MaxValue}
	case dta.Append:
		g := &s.Append
		w.Append = advert.Append{Lists: g.Lists, Capacity: g.Capacity, EntrySize: g.EntrySize, Batch: g.Batch}
	case dta.SketchMerge:
		g := &s.SketchMerge
		w.SketchMerge = advert.SketchMerge{Rows: g.Rows, Columns: g.Columns, Epochs: g.Epochs, Kind: uint8(g.Kind)}
	case dta.TeaTable:
		g := &s.TeaTable
		w.TeaTable = advert.TeaTable{Buckets: g.Buckets, Cells: g.Cells, KeySize: g.KeySize, ValueSize: g.ValueSize, Scratchpad: g.Scratchpad, TableHash: uint8(g.Hash)}
	}
	return w
}

// fromWire maps an advertisement record onto a store.
func fromWire(w *advert.Store) Advertised {
	s := Advertised{VA: w.VA, RKey: w.RKey, Length: w.Length, Heads: w.Heads}
	d := &s.Descriptor
	d.Name, d.ID, d.Primitive, d.Default = w.Name, w.ID, w.Primitive, w.Default
	switch w.Primitive {
	case dta.KeyWrite:
		g := &w.KeyWrite
		d.KeyWrite.Slots, d.KeyWrite.ValueSize, d.KeyWrite.MaxRedundancy, d.KeyWrite.Hash = g.Slots, g.ValueSize, g.MaxRedundancy, w.Hash
	case dta.KeyIncrement:
		g := &w.KeyIncrement
		d.KeyIncrement.Slots, d.KeyIncrement.Redundancy, d.KeyIncrement.Hash = g.Slots, g.Redundancy, w.Hash
	case dta.Postcard:
		g := &w.Postcard
		p := &d.Postcard
		p.Chunks, p.Hops, p.Redundancy, p.MinValue, p.MaxValue, p.Hash = g.Chunks, g.Hops, g.Redundancy, g.MinValue, g.MaxValue, w.Hash
	case dta.Append:
		g := &w.Append
		d.Append.Lists, d.Append.Capacity, d.Append.EntrySize, d.Append.Batch = g.Lists, g.Capacity, g.EntrySize, g.Batch
	case dta.SketchMerge:
		g := &w.SketchMerge
		d.SketchMerge.Rows, d.SketchMerge.Columns, d.SketchMerge.Epochs, d.SketchMerge.Kind = g.Rows, g.Columns, g.Epochs, sketch.Kind(g.Kind)
	case dta.TeaTable:
		g := &w.TeaTable
		d.TeaTable = tea.Spec{Buckets: g.Buckets, Cells: g.Cells, KeySize: g.KeySize, ValueSize: g.ValueSize, Scratchpad: g.Scratchpad, Hash: tea.Hash(g.TableHash)}
	}
	return s
}

// ParseAdvertisement decodes an advertisement (advert.Decode: every count
// and length bounded, unique names and ids, one default per primitive) and
// validates every store the way a configuration is validated: a valid
// name, geometry that passes its Spec's Validate, and a region length that
// holds the geometry.
func ParseAdvertisement(b []byte) ([]Advertised, error) {
	ws, err := advert.Decode(b)
	if err != nil {
		return nil, err
	}
	out := make([]Advertised, len(ws))
	for i := range ws {
		s := fromWire(&ws[i])
		if !nameRE.MatchString(s.Name) {
			return nil, fmt.Errorf("%w: store %d: bad name %q", ErrAdvert, i, s.Name)
		}
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("%w: store %s: %w", ErrAdvert, s.Name, err)
		}
		if s.Length < s.RegionSize() {
			return nil, fmt.Errorf("%w: store %s: region of %d bytes cannot hold the %d its geometry needs", ErrAdvert, s.Name, s.Length, s.RegionSize())
		}
		out[i] = s
	}
	return out, nil
}
