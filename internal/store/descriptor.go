// Package store is the collector's catalogue of stores: it turns store
// configurations into Descriptors (name, id, primitive, geometry), maps their
// regions, binds each to its primitive's query Store, and applies memory ops
// to them as the local sink.
//
// A Descriptor is pure data: it is what a translator needs to know about a
// store (and what a collector advertises to a remote translator). The package
// holds no global state and never logs per operation.
package store

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/primitive/appendlist"
	"github.com/dta-go/dta/internal/primitive/keyincrement"
	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/internal/primitive/sketchmerge"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/tea"
	"github.com/dta-go/dta/sketch"
	"github.com/dta-go/dta/wire/dta"
)

// Config is one store as configured (YAML keys in the tags). Only the fields
// of the store's primitive may be set; Memory is an alternative to the
// primitive's count field (slots, chunks or capacity). A zero field is
// unset (its default), so YAML leaves it out (omitempty): a configuration
// file may not write it as 0 (internal/config refuses that), and what dta up
// --print-config prints must read back.
type Config struct {
	Name      string   `yaml:"name"`
	ID        uint16   `yaml:"id"`
	Primitive string   `yaml:"primitive"`
	Default   bool     `yaml:"default,omitempty"`
	Memory    ByteSize `yaml:"memory,omitempty"`
	Hash      string   `yaml:"hash,omitempty"`

	// Key-Write, Key-Increment (value_size: Key-Write and TEA table).
	Slots     uint64 `yaml:"slots,omitempty"`
	ValueSize int    `yaml:"value_size,omitempty"`
	// Key-Write: the largest N a report may ask for, and the query default;
	// Key-Increment, Postcarding: the N of every write and query.
	Redundancy int `yaml:"redundancy,omitempty"`

	// Postcarding.
	Chunks   uint64  `yaml:"chunks,omitempty"`
	Hops     int     `yaml:"hops,omitempty"`
	MinValue *uint32 `yaml:"min_value,omitempty"`
	MaxValue *uint32 `yaml:"max_value,omitempty"`

	// Append.
	Lists     uint32 `yaml:"lists,omitempty"`
	Capacity  uint64 `yaml:"capacity,omitempty"`
	EntrySize int    `yaml:"entry_size,omitempty"`
	Batch     int    `yaml:"batch,omitempty"`

	// Sketch-Merge.
	Rows    int    `yaml:"rows,omitempty"`
	Columns uint64 `yaml:"columns,omitempty"`
	Epochs  int    `yaml:"epochs,omitempty"`
	Kind    string `yaml:"kind,omitempty"`

	// TEA table (primitive teatable, a store no report feeds; value_size
	// above; hash crc64, the default).
	Buckets    uint64 `yaml:"buckets,omitempty"`
	Cells      int    `yaml:"cells,omitempty"`
	KeySize    int    `yaml:"key_size,omitempty"`
	Scratchpad int    `yaml:"scratchpad,omitempty"`
}

// Descriptor is a store's identity and geometry: everything a writer or
// reader needs, and nothing about where it lives.
type Descriptor struct {
	Name      string
	ID        uint16
	Primitive dta.Primitive
	Default   bool // receives compat reports and extended reports with store id 0

	KeyWrite     keywrite.Spec
	KeyIncrement keyincrement.Spec
	Postcard     postcard.Spec
	Append       appendlist.Spec
	SketchMerge  sketchmerge.Spec
	TeaTable     tea.Spec
}

// RegionSize is the bytes of memory the store needs.
func (d *Descriptor) RegionSize() uint64 {
	switch d.Primitive {
	case dta.KeyWrite:
		return d.KeyWrite.RegionSize()
	case dta.KeyIncrement:
		return d.KeyIncrement.RegionSize()
	case dta.Postcard:
		return d.Postcard.RegionSize()
	case dta.Append:
		return d.Append.RegionSize()
	case dta.SketchMerge:
		return d.SketchMerge.RegionSize()
	case dta.TeaTable:
		return d.TeaTable.TableSize()
	}
	return 0
}

// Validate checks the descriptor's geometry.
func (d *Descriptor) Validate() error {
	switch d.Primitive {
	case dta.KeyWrite:
		return d.KeyWrite.Validate()
	case dta.KeyIncrement:
		return d.KeyIncrement.Validate()
	case dta.Postcard:
		return d.Postcard.Validate()
	case dta.Append:
		return d.Append.Validate()
	case dta.SketchMerge:
		return d.SketchMerge.Validate()
	case dta.TeaTable:
		return d.TeaTable.Validate()
	}
	return fmt.Errorf("primitive: %v unknown", d.Primitive)
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// Defaults used when a field is not configured.
const (
	DefaultSlots        = 1 << 20
	DefaultChunks       = 1 << 18
	DefaultRedundancy   = 2
	DefaultHops         = 5
	DefaultLists        = 16
	DefaultCapacity     = 1 << 16
	DefaultBatch        = 4
	DefaultValueSize    = 4
	DefaultPostcardMaxV = 1<<20 - 1
	DefaultRows         = 4
	DefaultColumns      = 1 << 16
	DefaultEpochs       = 3
	DefaultBuckets      = 1 << 14 // TEA table
	DefaultCells        = 8       // TEA table
	DefaultKeySize      = 13      // TEA table: an IPv4 5-tuple
	DefaultTeaValueSize = 6       // TEA table: the paper's NAT value
)

// Describe validates c and returns its descriptor, with defaults filled in.
// Errors name the offending key.
func (c *Config) Describe() (Descriptor, error) {
	d := Descriptor{Name: c.Name, ID: c.ID, Default: c.Default}
	if !nameRE.MatchString(c.Name) {
		return d, fmt.Errorf("name: %q must be 1-63 of [a-z0-9_.-], starting with a letter or digit", c.Name)
	}
	if c.ID == 0 {
		return d, errors.New("id: must be 1..65535 (0 addresses the default store on the wire)")
	}
	p, err := dta.ParsePrimitive(c.Primitive)
	if err != nil {
		return d, fmt.Errorf("primitive: %w", err)
	}
	d.Primitive = p
	// crc32c by default: its addresses are independent of the checksum.
	// crc32 reproduces the original prototype's memory byte for byte, which
	// matters only to read memory written by the Tofino translator.
	hash := hashing.CRC32C
	if c.Hash != "" && p != dta.TeaTable {
		if hash, err = hashing.ParseAlgorithm(c.Hash); err != nil {
			return d, fmt.Errorf("hash: %w", err)
		}
	}
	if err := c.onlyFieldsOf(p); err != nil {
		return d, err
	}
	red := orDefault(c.Redundancy, DefaultRedundancy)
	mem := uint64(c.Memory)
	if mem != 0 && (c.Slots != 0 || c.Chunks != 0 || c.Capacity != 0 || c.Columns != 0 || c.Buckets != 0) {
		return d, errors.New("memory: give either memory or the primitive's count (slots, chunks, capacity, columns, buckets), not both")
	}
	if mem > region.MaxSize {
		return d, fmt.Errorf("memory: %v is above the largest region, %v", c.Memory, ByteSize(region.MaxSize))
	}
	// small says why memory is too small for the primitive's count, which is
	// then set to its minimum so that other fields are still validated.
	var small string
	switch p {
	case dta.KeyWrite:
		d.KeyWrite = keywrite.Spec{Slots: c.Slots, ValueSize: orDefault(c.ValueSize, DefaultValueSize), MaxRedundancy: red, Hash: hash}
		if mem != 0 {
			d.KeyWrite.Slots = d.KeyWrite.SlotsFor(mem)
			if d.KeyWrite.Slots < 2 {
				d.KeyWrite.Slots, small = 2, fmt.Sprintf("%d slots of %d bytes, at least 2 are needed", d.KeyWrite.Slots, d.KeyWrite.SlotSize())
			}
		} else if c.Slots == 0 {
			d.KeyWrite.Slots = DefaultSlots
		}
	case dta.KeyIncrement:
		d.KeyIncrement = keyincrement.Spec{Slots: c.Slots, Redundancy: red, Hash: hash}
		if mem != 0 {
			d.KeyIncrement.Slots = d.KeyIncrement.SlotsFor(mem)
			if d.KeyIncrement.Slots < 2 {
				d.KeyIncrement.Slots, small = 2, fmt.Sprintf("%d counters, at least 2 are needed", d.KeyIncrement.Slots)
			}
		} else if c.Slots == 0 {
			d.KeyIncrement.Slots = DefaultSlots
		}
	case dta.Postcard:
		d.Postcard = postcard.Spec{Chunks: c.Chunks, Hops: orDefault(c.Hops, DefaultHops), Redundancy: red, MaxValue: DefaultPostcardMaxV, Hash: hash}
		if c.MinValue != nil {
			d.Postcard.MinValue = *c.MinValue
		}
		if c.MaxValue != nil {
			d.Postcard.MaxValue = *c.MaxValue
		}
		if mem != 0 {
			d.Postcard.Chunks = d.Postcard.ChunksFor(mem)
			if d.Postcard.Chunks < 2 {
				d.Postcard.Chunks, small = 2, fmt.Sprintf("%d chunks of %d bytes, at least 2 are needed", d.Postcard.Chunks, d.Postcard.ChunkSize())
			}
		} else if c.Chunks == 0 {
			d.Postcard.Chunks = DefaultChunks
		}
	case dta.Append:
		d.Append = appendlist.Spec{Lists: c.Lists, Capacity: c.Capacity, EntrySize: orDefault(c.EntrySize, DefaultValueSize), Batch: orDefault(c.Batch, DefaultBatch)}
		if d.Append.Lists == 0 {
			d.Append.Lists = DefaultLists
		}
		if mem != 0 {
			d.Append.Capacity = d.Append.CapacityFor(mem)
			if d.Append.Capacity < 2*uint64(d.Append.Batch) {
				small = fmt.Sprintf("%d entries in each of %d lists, at least 2 batches (%d) are needed", d.Append.Capacity, d.Append.Lists, 2*d.Append.Batch)
				d.Append.Capacity = 2 * uint64(d.Append.Batch)
			}
		} else if c.Capacity == 0 {
			d.Append.Capacity = DefaultCapacity
		}
	case dta.SketchMerge:
		kind := sketch.CountMin
		if c.Kind != "" {
			if kind, err = sketch.ParseKind(c.Kind); err != nil {
				return d, fmt.Errorf("kind: %w", err)
			}
		}
		d.SketchMerge = sketchmerge.Spec{Geometry: sketch.Geometry{Rows: orDefault(c.Rows, DefaultRows), Columns: c.Columns, Kind: kind},
			Epochs: orDefault(c.Epochs, DefaultEpochs)}
		if mem != 0 {
			d.SketchMerge.Columns = d.SketchMerge.ColumnsFor(mem)
			if d.SketchMerge.Columns < 2 {
				small = fmt.Sprintf("%d columns of %d rows in %d epochs, at least 2 are needed", d.SketchMerge.Columns, d.SketchMerge.Rows, d.SketchMerge.Epochs)
				d.SketchMerge.Columns = 2
			}
		} else if c.Columns == 0 {
			d.SketchMerge.Columns = DefaultColumns
		}
	case dta.TeaTable:
		th := tea.CRC64
		if c.Hash != "" {
			if th, err = tea.ParseHash(c.Hash); err != nil {
				return d, fmt.Errorf("hash: %w", err)
			}
		}
		d.TeaTable = tea.Spec{Buckets: c.Buckets, Cells: orDefault(c.Cells, DefaultCells), KeySize: orDefault(c.KeySize, DefaultKeySize),
			ValueSize: orDefault(c.ValueSize, DefaultTeaValueSize), Scratchpad: c.Scratchpad, Hash: th}
		if mem != 0 {
			probe := d.TeaTable
			probe.Buckets = 2
			if err := probe.Validate(); err != nil {
				return d, err
			}
			d.TeaTable.Buckets = mem / d.TeaTable.RowSize()
			if d.TeaTable.Buckets < 2 {
				small = fmt.Sprintf("%d buckets of %d bytes, at least 2 are needed", d.TeaTable.Buckets, d.TeaTable.RowSize())
				d.TeaTable.Buckets = 2
			}
		} else if c.Buckets == 0 {
			d.TeaTable.Buckets = DefaultBuckets
		}
	}
	if err := d.Validate(); err != nil {
		return d, err
	}
	if small != "" {
		return d, fmt.Errorf("memory: %v holds %s", c.Memory, small)
	}
	// A count rounds memory down (to a power of two for some hashes: never
	// below half), unless it hit the primitive's largest count.
	if mem != 0 && d.RegionSize() < mem/2 {
		return d, fmt.Errorf("memory: %v is more than %s store can use: its largest geometry takes %v", c.Memory, article(p), ByteSize(d.RegionSize()))
	}
	return d, nil
}

// article prefixes a primitive's name with its indefinite article.
func article(p dta.Primitive) string {
	if p == dta.Append {
		return "an append"
	}
	return "a " + p.String()
}

// onlyFieldsOf rejects fields that belong to another primitive.
func (c *Config) onlyFieldsOf(p dta.Primitive) error {
	type field struct {
		name string
		set  bool
		ok   bool
	}
	kv := p == dta.KeyWrite || p == dta.KeyIncrement
	for _, f := range []field{
		{"slots", c.Slots != 0, kv},
		{"value_size", c.ValueSize != 0, p == dta.KeyWrite || p == dta.TeaTable},
		{"redundancy", c.Redundancy != 0, p != dta.Append && p != dta.SketchMerge && p != dta.TeaTable},
		{"hash", c.Hash != "", p != dta.Append && p != dta.SketchMerge},
		{"chunks", c.Chunks != 0, p == dta.Postcard},
		{"hops", c.Hops != 0, p == dta.Postcard},
		{"min_value", c.MinValue != nil, p == dta.Postcard},
		{"max_value", c.MaxValue != nil, p == dta.Postcard},
		{"lists", c.Lists != 0, p == dta.Append},
		{"capacity", c.Capacity != 0, p == dta.Append},
		{"entry_size", c.EntrySize != 0, p == dta.Append},
		{"batch", c.Batch != 0, p == dta.Append},
		{"rows", c.Rows != 0, p == dta.SketchMerge},
		{"columns", c.Columns != 0, p == dta.SketchMerge},
		{"epochs", c.Epochs != 0, p == dta.SketchMerge},
		{"kind", c.Kind != "", p == dta.SketchMerge},
		{"buckets", c.Buckets != 0, p == dta.TeaTable},
		{"cells", c.Cells != 0, p == dta.TeaTable},
		{"key_size", c.KeySize != 0, p == dta.TeaTable},
		{"scratchpad", c.Scratchpad != 0, p == dta.TeaTable},
	} {
		if f.set && !f.ok {
			return fmt.Errorf("%s: not a setting of a %v store", f.name, p)
		}
	}
	return nil
}

func orDefault(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

// DefaultConfigs are the stores `dta up` creates when none are configured:
// one default store per primitive, named after it, each a few MiB.
func DefaultConfigs() []Config {
	return []Config{
		{Name: "keywrite", ID: 1, Primitive: "keywrite", Default: true, Slots: DefaultSlots, ValueSize: 4, Redundancy: 4},
		{Name: "keyincrement", ID: 2, Primitive: "keyincrement", Default: true, Slots: DefaultSlots, Redundancy: 4},
		{Name: "postcard", ID: 3, Primitive: "postcard", Default: true, Chunks: DefaultChunks, Hops: DefaultHops, Redundancy: 2},
		{Name: "append", ID: 4, Primitive: "append", Default: true, Lists: DefaultLists, Capacity: DefaultCapacity, EntrySize: 4, Batch: DefaultBatch},
		{Name: "sketchmerge", ID: 10, Primitive: "sketchmerge", Default: true, Rows: DefaultRows, Columns: DefaultColumns, Epochs: DefaultEpochs, Kind: "countmin"},
	}
}

// DescribeAll validates a whole store list: unique names and ids, at most one
// default per primitive. Errors name the store by its position and name.
func DescribeAll(cfgs []Config) ([]Descriptor, error) {
	if len(cfgs) == 0 {
		return nil, errors.New("stores: none configured")
	}
	if len(cfgs) > 1024 {
		return nil, fmt.Errorf("stores: %d configured, at most 1024", len(cfgs))
	}
	out := make([]Descriptor, 0, len(cfgs))
	names := map[string]bool{}
	ids := map[uint16]bool{}
	var defaults [dta.NumPrimitives]string
	for i := range cfgs {
		d, err := cfgs[i].Describe()
		if err != nil {
			return nil, fmt.Errorf("stores[%d] (%s): %w", i, cfgs[i].Name, err)
		}
		if names[d.Name] {
			return nil, fmt.Errorf("stores[%d] (%s): name: used twice", i, d.Name)
		}
		if ids[d.ID] {
			return nil, fmt.Errorf("stores[%d] (%s): id: %d used twice", i, d.Name, d.ID)
		}
		if d.Default {
			if prev := defaults[d.Primitive]; prev != "" {
				return nil, fmt.Errorf("stores[%d] (%s): default: %s is already the default %v store", i, d.Name, prev, d.Primitive)
			}
			defaults[d.Primitive] = d.Name
		}
		names[d.Name], ids[d.ID] = true, true
		out = append(out, d)
	}
	return out, nil
}
