// Package storetest opens small store catalogues for the tests of other
// packages: the default stores shrunk to a few KiB, on 4 KiB pages. Only
// tests import it; it must not grow anything a running system would use.
package storetest

import (
	"testing"

	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/store"
)

// Configs returns the default stores, shrunk: 1024 Key-Write and
// Key-Increment slots, 256 Postcarding chunks, Append lists of 64 entries,
// Sketch-Merge rows of 256 columns, and a TEA table store "tea" of 256
// buckets × 4 cells.
func Configs() []store.Config {
	cfgs := store.DefaultConfigs()
	cfgs[0].Slots, cfgs[1].Slots, cfgs[2].Chunks, cfgs[3].Capacity, cfgs[4].Columns = 1024, 1024, 256, 64, 256
	// A TEA table, a store no report feeds.
	return append(cfgs, store.Config{Name: "tea", ID: 60, Primitive: "teatable", Buckets: 256, Cells: 4})
}

// Open opens the stores of Configs on 4 KiB pages and closes them when the
// test ends.
func Open(t testing.TB) *store.Catalog { return OpenConfigs(t, Configs()) }

// OpenConfigs opens the stores of cfgs (Configs changed, or a test's own
// stores) on 4 KiB pages and closes them when the test ends.
func OpenConfigs(t testing.TB, cfgs []store.Config) *store.Catalog {
	t.Helper()
	descs, err := store.DescribeAll(cfgs)
	if err != nil {
		t.Fatal(err)
	}
	rc := region.DefaultConfig()
	rc.HugePages = region.HugePagesOff
	cat, err := store.Open(descs, rc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	return cat
}
