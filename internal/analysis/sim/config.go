package sim

import (
	"fmt"
	"runtime"

	"github.com/dta-go/dta/hashing"
	"github.com/dta-go/dta/internal/analysis"
	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/wire/dta"
)

// KeyLen is the length of the simulated keys: an IPv4 5-tuple's 13 bytes.
const KeyLen = 13

// Defaults applied by DefaultConfig.
const (
	DefaultValueSize    = 4       // Key-Write value bytes (8-byte slots)
	DefaultChecksumBits = 32      // the store's real checksum
	DefaultHops         = 5       // Postcarding B
	DefaultValues       = 1 << 20 // Postcarding |V|, as the planner's default
	DefaultBins         = 20      // equal-width age bins
	DefaultPerBin       = 50_000  // queries per bin
	DefaultSeed         = 1
)

// Config describes one simulation run: a store, the stream of keys written
// into it, and the queries.
type Config struct {
	Primitive dta.Primitive `json:"-"` // dta.KeyWrite or dta.Postcard

	// Slots is the Key-Write slot count or the Postcarding chunk count.
	Slots uint64 `json:"slots"`
	// Keys is the number of distinct keys (flows) written, in order; the
	// age of key i (0-based) is Keys−1−i.
	Keys uint64 `json:"keys"`
	// N is the redundancy: copies (chunks) written per key and read per
	// query, 1..dta.MaxRedundancy.
	N int `json:"n"`
	// Hash is the slot hash family; 0 means hashing.CRC32C.
	Hash hashing.Algorithm `json:"-"`

	// ValueSize is the Key-Write value size in bytes.
	ValueSize int `json:"value_size,omitempty"`
	// ChecksumBits is the simulated Key-Write checksum width b, 1..32 (see
	// the package doc); below 32 it needs Hash CRC32C.
	ChecksumBits int `json:"checksum_bits,omitempty"`
	// Threshold is the Key-Write query's consensus threshold (0: plurality).
	Threshold int `json:"threshold,omitempty"`
	// IfEmpty writes the Key-Write copies after the first only into empty
	// slots (DART's compare-and-swap idea). It needs 8-byte-aligned slots.
	IfEmpty bool `json:"if_empty,omitempty"`

	// Hops is the Postcarding path length B; every path has all B hops.
	Hops int `json:"hops,omitempty"`
	// Values is the Postcarding value set size |V|: hop values are drawn
	// from [0, Values−1].
	Values uint32 `json:"values,omitempty"`

	// Bins is the number of equal-width age bins over [0, Keys) that are
	// queried; together they give the average over all keys.
	Bins int `json:"bins"`
	// Probes are extra windows of ages, for the success at one age.
	Probes []Probe `json:"probes,omitempty"`
	// PerBin is the number of queries per bin and per probe. When it is at
	// least the window's width, every key of the window is queried once;
	// otherwise keys are drawn uniformly, with replacement.
	PerBin int `json:"per_bin"`

	Seed      uint64           `json:"seed"`
	Workers   int              `json:"workers"` // goroutines for both phases, up to MaxWorkers; 0 means GOMAXPROCS
	HugePages region.HugePages `json:"-"`       // the region's page backing
}

// Probe is a window of ages [Age−HalfWidth, Age+HalfWidth], clipped to
// [0, Keys). The success at Age is the window's, to within the change of the
// success over the window (the Bin reports the mean age queried).
type Probe struct {
	Age       uint64 `json:"age"`
	HalfWidth uint64 `json:"half_width"`
	Queries   int    `json:"queries,omitempty"` // 0 means Config.PerBin
}

// DefaultConfig returns a Key-Write run of N = 2 with the defaults above; Slots
// and Keys are left 0 and must be set.
func DefaultConfig() Config {
	return Config{
		Primitive:    dta.KeyWrite,
		N:            2,
		Hash:         hashing.CRC32C,
		ValueSize:    DefaultValueSize,
		ChecksumBits: DefaultChecksumBits,
		Hops:         DefaultHops,
		Values:       DefaultValues,
		Bins:         DefaultBins,
		PerBin:       DefaultPerBin,
		Seed:         DefaultSeed,
		HugePages:    region.HugePagesMadvise,
	}
}

// MaxWorkers bounds Config.Workers: each worker holds its own buffers, and
// more goroutines than this only cost memory.
const MaxWorkers = 1024

// fieldError is an error naming a field of Config, as its documentation does.
func fieldError(field, format string, a ...any) error {
	return &analysis.FieldError{Field: field, Err: fmt.Errorf(format, a...)}
}

// Validate reports the first thing wrong with c, naming the field (an
// *analysis.FieldError).
func (c *Config) Validate() error {
	if c.Primitive != dta.KeyWrite && c.Primitive != dta.Postcard {
		return fieldError("primitive", "%v is not keywrite or postcard", c.Primitive)
	}
	switch {
	case c.Keys < 1:
		return fieldError("keys", "must be at least 1")
	case c.Keys > 1<<40:
		return fieldError("keys", "%d above 2^40", c.Keys)
	case c.Bins < 1 && len(c.Probes) == 0:
		return fieldError("bins", "need at least one bin or one probe age")
	case c.Bins < 0 || uint64(c.Bins) > c.Keys:
		return fieldError("bins", "%d out of range [0, keys]", c.Bins)
	case c.PerBin < 1:
		return fieldError("per-bin queries", "must be at least 1")
	case c.Slots < 2 || c.Slots > 1<<32:
		return fieldError("slots", "%d out of range [2, 2^32]", c.Slots)
	case c.N < 1 || c.N > dta.MaxRedundancy:
		return fieldError("n", "%d out of range [1, %d]", c.N, dta.MaxRedundancy)
	case c.hash() != hashing.CRC32C && c.hash() != hashing.CRC32:
		return fieldError("hash", "%v is not a known hash", c.Hash)
	case c.hash() == hashing.CRC32 && c.Slots&(c.Slots-1) != 0:
		return fieldError("slots", "%d is not a power of two, which hash crc32 needs", c.Slots)
	case c.Workers < 0 || c.Workers > MaxWorkers:
		return fieldError("workers", "%d out of range [0, %d] (0: GOMAXPROCS)", c.Workers, MaxWorkers)
	}
	for _, p := range c.Probes {
		if p.Age >= c.Keys || p.Queries < 0 {
			return fieldError("probes", "age %d is not below keys %d, or queries %d negative", p.Age, c.Keys, p.Queries)
		}
	}
	if c.Primitive == dta.Postcard {
		switch {
		case c.IfEmpty || c.Threshold != 0 || c.ChecksumBits != 0 && c.ChecksumBits != 32:
			return fieldError("if-empty, threshold, checksum bits", "apply to keywrite only")
		case c.Values < 1 || c.Values > postcard.End:
			return fieldError("values", "%d out of range [1, %d]", c.Values, postcard.End)
		case c.Hops < 1 || c.Hops > hashing.MaxHops:
			return fieldError("hops", "%d out of range [1, %d]", c.Hops, hashing.MaxHops)
		}
		s := c.postcardSpec()
		return s.Validate()
	}
	if c.ValueSize < 1 || c.ValueSize > dta.MaxValueLen {
		return fieldError("value size", "%d out of range [1, %d]", c.ValueSize, dta.MaxValueLen)
	}
	s := c.keyWriteSpec()
	if err := s.Validate(); err != nil {
		return err
	}
	switch {
	case c.ChecksumBits < 1 || c.ChecksumBits > 32:
		return fieldError("checksum bits", "%d out of range [1, 32]", c.ChecksumBits)
	case c.ChecksumBits < 32 && c.hash() != hashing.CRC32C:
		return fieldError("checksum bits", "short checksums need hash crc32c, whose slots do not depend on the checksum")
	case c.Threshold < 0 || c.Threshold > c.N:
		return fieldError("threshold", "%d out of range [0, %d]", c.Threshold, c.N)
	case c.IfEmpty && s.SlotSize()%8 != 0:
		return fieldError("if-empty", "%d-byte slots are not 8-byte aligned, as a compare-and-swap needs", s.SlotSize())
	}
	return nil
}

func (c *Config) hash() hashing.Algorithm {
	if c.Hash == 0 {
		return hashing.CRC32C
	}
	return c.Hash
}

func (c *Config) workers() int {
	if c.Workers > 0 {
		return c.Workers
	}
	return runtime.GOMAXPROCS(0)
}

func (c *Config) keyWriteSpec() keywrite.Spec {
	return keywrite.Spec{Slots: c.Slots, ValueSize: c.ValueSize, MaxRedundancy: c.N, Hash: c.hash()}
}

func (c *Config) postcardSpec() postcard.Spec {
	return postcard.Spec{Chunks: c.Slots, Hops: c.Hops, Redundancy: c.N, MinValue: 0, MaxValue: c.Values - 1, Hash: c.hash()}
}

// RegionSize is the bytes of the run's store.
func (c *Config) RegionSize() uint64 {
	if c.Primitive == dta.Postcard {
		s := c.postcardSpec()
		return s.RegionSize()
	}
	s := c.keyWriteSpec()
	return s.RegionSize()
}
