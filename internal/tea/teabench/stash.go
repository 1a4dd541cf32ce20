package teabench

import (
	"fmt"
	"slices"

	"github.com/dta-go/dta/internal/tea"
)

// StashConfig is the stash experiment: for each geometry (cells per
// bucket), a table of Cells-sized buckets holding about Entries cells is
// filled with random keys through Table.Insert, and the stash is counted
// each time the load factor passes one of Loads.
type StashConfig struct {
	Entries   uint64    // cells per table (the scale); buckets = Entries / cells
	Cells     []int     // geometries compared
	Loads     []float64 // load factors (keys inserted / cells) at which to count, increasing, ≤ 1
	MaxTries  int       // Algorithm 1's MaxTries
	KeySize   int       // bytes; keys are random 5-tuples, so ≥ 13 keeps them distinct
	ValueSize int       // bytes
	Seed      uint64
}

// DefaultStashConfig is the experiment of docs/REPRODUCTION.md: 2^20
// cells, 2 to 16 cells per bucket, loads 0.5 to 0.98, the defaults of the
// control plane.
func DefaultStashConfig() StashConfig {
	return StashConfig{
		Entries:   1 << 20,
		Cells:     []int{2, 4, 8, 16},
		Loads:     []float64{0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.98},
		MaxTries:  tea.DefaultMaxTries,
		KeySize:   13,
		ValueSize: 6,
		Seed:      1,
	}
}

// StashRow is the stash of one geometry at one load factor.
type StashRow struct {
	Cells          int     `json:"cells"`
	Buckets        uint64  `json:"buckets"`
	Load           float64 `json:"load_factor"`    // keys inserted / cells
	Inserted       uint64  `json:"inserted"`       // keys inserted so far
	Stashed        int     `json:"stashed"`        // entries in the stash
	Fraction       float64 `json:"stash_fraction"` // Stashed / Inserted
	KicksPerInsert float64 `json:"kicks_per_insert"`
	// MinFraction is the smallest stash fraction any placement of the same
	// keys could reach (MinStash): what is left above it is Algorithm 1's
	// search giving up after MaxTries, the rest is the geometry.
	MinFraction float64 `json:"min_stash_fraction"`
}

// MaxEntries is the most cells of a stash experiment's table (and keys
// drawn for it): beyond it the keys alone would not fit a machine's memory.
const MaxEntries = 1 << 32

// Validate reports the first thing wrong with c, naming the field.
func (c StashConfig) Validate() error {
	switch {
	case c.Entries < 16 || c.Entries > MaxEntries:
		return fmt.Errorf("entries: %d out of range [16, 2^32]", c.Entries)
	case len(c.Cells) == 0:
		return fmt.Errorf("cells: none")
	case len(c.Loads) == 0 || !slices.IsSorted(c.Loads) || !(c.Loads[0] > 0) || !(c.Loads[len(c.Loads)-1] <= 1):
		return fmt.Errorf("loads: %v, want increasing values in (0, 1]", c.Loads)
	case c.MaxTries < 1:
		return fmt.Errorf("max_tries: %d, want at least 1", c.MaxTries)
	case c.KeySize < 13 || c.KeySize > tea.MaxKeySize:
		return fmt.Errorf("key_size: %d out of range [13 (a 5-tuple), %d]", c.KeySize, tea.MaxKeySize)
	case c.ValueSize < 0 || c.ValueSize > tea.MaxValueSize:
		return fmt.Errorf("value_size: %d out of range [0, %d]", c.ValueSize, tea.MaxValueSize)
	}
	for _, cells := range c.Cells {
		if cells < 1 || cells > tea.MaxCells {
			return fmt.Errorf("cells: %d out of range [1, %d]", cells, tea.MaxCells)
		}
	}
	for _, l := range c.Loads {
		if !(l > 0 && l <= 1) { // NaN too: slices.IsSorted does not see it
			return fmt.Errorf("loads: %v, want increasing values in (0, 1]", c.Loads)
		}
	}
	return nil
}

// StashSweep runs the stash experiment.
func StashSweep(c StashConfig) ([]StashRow, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	n := int(float64(c.Entries) * c.Loads[len(c.Loads)-1])
	keys := FiveTuples(n, c.KeySize, c.Seed)
	value := make([]byte, c.ValueSize)
	var rows []StashRow
	for _, cells := range c.Cells {
		spec := tea.Spec{Buckets: max(2, c.Entries/uint64(cells)), Cells: cells, KeySize: c.KeySize, ValueSize: c.ValueSize, Hash: tea.CRC64}
		if err := spec.Validate(); err != nil {
			return nil, err
		}
		tab, err := tea.NewTable(spec, tea.NewLocalMemory(spec.TableSize()), tea.TableConfig{MaxTries: c.MaxTries, Seed: c.Seed})
		if err != nil {
			return nil, err
		}
		var i uint64
		for _, load := range c.Loads {
			for target := uint64(load * float64(spec.Entries())); i < target && i < uint64(n); i++ {
				if err := tab.Insert(keys[i*uint64(c.KeySize):(i+1)*uint64(c.KeySize)], value); err != nil {
					return nil, fmt.Errorf("cells %d, key %d: %w", cells, i, err)
				}
			}
			st, stashed := tab.Stats(), tab.Stash().Len()
			rows = append(rows, StashRow{
				Cells: cells, Buckets: spec.Buckets, Load: float64(i) / float64(spec.Entries()), Inserted: i,
				Stashed: stashed, Fraction: float64(stashed) / float64(max(i, 1)),
				KicksPerInsert: float64(st.Kicks) / float64(max(i, 1)),
				MinFraction:    float64(MinStash(spec, keys[:i*uint64(c.KeySize)])) / float64(max(i, 1)),
			})
		}
	}
	return rows, nil
}

// MaxLoadWithin returns, per geometry, the highest load factor of rows whose
// stash fraction is at most target (and below it at every lower load);
// geometries that never meet it are absent.
func MaxLoadWithin(rows []StashRow, target float64) map[int]StashRow {
	best := map[int]StashRow{}
	failed := map[int]bool{}
	for _, r := range rows {
		if failed[r.Cells] {
			continue
		}
		if r.Fraction > target {
			failed[r.Cells] = true
			continue
		}
		best[r.Cells] = r
	}
	return best
}

// MinStash returns the fewest of keys (flat, spec.KeySize bytes each) that
// any placement into spec's table must leave in the stash, whatever the
// insertion algorithm. A key fits only its home bucket or the next one, so
// bucket by bucket around the table, each takes first the keys pushed out
// of the one before (they have no other place), then its own, and pushes
// the rest on; a key pushed out twice cannot be placed. Earliest deadline
// first is optimal for such interval constraints; around the circle the
// turn is repeated until what the last bucket pushes into the first agrees.
func MinStash(spec tea.Spec, keys []byte) int {
	count := make([]int, spec.Buckets)
	for i := 0; i+spec.KeySize <= len(keys); i += spec.KeySize {
		count[spec.HomeOf(keys[i:i+spec.KeySize])]++
	}
	// One turn around the table from bucket 0, with spill keys pushed into
	// it from the last bucket; the turn's own spill is what the last bucket
	// pushes into bucket 0, so turns repeat until the two agree.
	turn := func(spill int) (stash, out int) {
		for b := range spec.Buckets {
			free := spec.Cells
			in := min(spill, free)
			stash += spill - in
			free -= in
			own := min(count[b], free)
			spill = count[b] - own
		}
		return stash, spill
	}
	stash, out := turn(0)
	for range 4 {
		var next int
		stash, next = turn(out)
		if next == out {
			break
		}
		out = next
	}
	return stash
}
