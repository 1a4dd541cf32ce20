package tea

import (
	"fmt"
	"math"
)

// DefaultLoadFactor is the share of cells a planned table fills.
const DefaultLoadFactor = 0.9

// DefaultCells is the cells per bucket of a planned table.
const DefaultCells = 8

// Plan is the memory a table of Entries entries needs, part by part.
type Plan struct {
	Spec       Spec    // the table: Buckets = ⌈Entries / (Cells × LoadFactor)⌉
	Entries    uint64  // entries it is planned for
	LoadFactor float64 // Entries / cells

	RawBytes        uint64 // Entries × (key + value): how the paper's Table 2 counts
	BucketBytes     uint64 // the original buckets: cells with their flag bytes, empty ones included
	ShadowBytes     uint64 // the shadow copies (as much again)
	ScratchpadBytes uint64 // one scratchpad per row
	PadBytes        uint64 // rows rounded up to 8 bytes
	TableBytes      uint64 // all of it: Spec.TableSize()
}

// PlanTable plans a table for entries entries of keySize and valueSize
// bytes, cells per bucket, filled to loadFactor, with a scratchpad of
// scratchpad bytes per row (0: none).
func PlanTable(entries uint64, keySize, valueSize, cells int, loadFactor float64, scratchpad int) (Plan, error) {
	if entries == 0 {
		return Plan{}, fmt.Errorf("entries: zero")
	}
	if !(loadFactor > 0 && loadFactor <= 1) {
		return Plan{}, fmt.Errorf("load_factor: %v out of range (0, 1]", loadFactor)
	}
	if cells < 1 {
		return Plan{}, fmt.Errorf("cells: %d out of range [1, %d]", cells, MaxCells)
	}
	buckets := uint64(math.Ceil(float64(entries) / (float64(cells) * loadFactor)))
	s := Spec{Buckets: max(buckets, 2), Cells: cells, KeySize: keySize, ValueSize: valueSize, Scratchpad: scratchpad, Hash: CRC64}
	if err := s.Validate(); err != nil {
		return Plan{}, err
	}
	p := Plan{
		Spec:            s,
		Entries:         entries,
		LoadFactor:      float64(entries) / float64(s.Entries()),
		RawBytes:        entries * uint64(keySize+valueSize),
		BucketBytes:     s.Buckets * s.BucketSize(),
		ShadowBytes:     s.Buckets * s.BucketSize(),
		ScratchpadBytes: s.Buckets * s.ScratchpadSize(),
		TableBytes:      s.TableSize(),
	}
	p.PadBytes = p.TableBytes - p.BucketBytes - p.ShadowBytes - p.ScratchpadBytes
	return p, nil
}

// PaperNF is a network function of the paper's Table 2: its entry and the
// table size the paper estimates for 10 million entries with IPv6
// addresses.
type PaperNF struct {
	Name      string
	State     string
	KeySize   int     // bytes
	ValueSize int     // bytes
	PaperMiB  float64 // the paper's "Table size (MB)", which matches MiB of entries × (key + value)
}

// PaperTable2 returns the paper's Table 2 with the entry sizes that give its
// sizes: an IPv6 5-tuple key is 16+16+2+2+1 = 37 bytes; a NAT or load
// balancer value an IPv6 address and port (18); the firewall keeps the flow
// (no value); for the VPN gateway the paper gives 36 bytes per entry but not
// the split, taken here as a 20-byte key (tunnel ID, VM IPv6 address) and a
// 16-byte value.
func PaperTable2() []PaperNF {
	return []PaperNF{
		{"nat", "per-flow address mapping", 37, 18, 525},
		{"firewall", "per-flow connection state", 37, 0, 353},
		{"lb", "per-flow connection mapping", 37, 18, 525},
		{"vpn", "external-to-internal tunnel mapping", 20, 16, 343},
	}
}
