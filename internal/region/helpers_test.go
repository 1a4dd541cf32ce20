package region

import (
	"bytes"
	"runtime"
	"testing"
)

// testSize is deliberately neither a page nor a word multiple: the mapping has
// padding after the end that no access may reach, and the last 3 bytes do not
// form a whole word.
const testSize = 1003

// newTestRegion creates a region on base pages that is closed when t ends.
func newTestRegion(tb testing.TB, size uint64) *Region {
	tb.Helper()
	r, err := New(Config{Size: size, HugePages: HugePagesOff}, nil)
	if err != nil {
		if runtime.GOOS != "linux" {
			tb.Skipf("regions are not supported on %s: %v", runtime.GOOS, err)
		}
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() {
		if err := r.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return r
}

// fillPattern writes a recognisable non-zero pattern over the whole mapping,
// including the padding after the end of the region.
func fillPattern(r *Region) {
	for i := range r.mem {
		r.mem[i] = byte(i*7 + 1)
	}
}

// snapshot copies the whole mapping, including the padding.
func snapshot(r *Region) []byte { return bytes.Clone(r.mem) }

// assertUnchanged fails if any byte of the mapping differs from before.
func assertUnchanged(tb testing.TB, r *Region, before []byte) {
	tb.Helper()
	for i := range before {
		if r.mem[i] != before[i] {
			tb.Fatalf("byte %d changed from %#x to %#x (region size %d, mapping %d)",
				i, before[i], r.mem[i], r.size, len(r.mem))
		}
	}
}
