package region

import (
	"encoding/binary"
	"errors"
	"testing"
)

func TestWrite64(t *testing.T) {
	t.Run("it writes the little-endian word at any offset inside the region", func(t *testing.T) {
		r := newTestRegion(t, testSize)
		fillPattern(r)
		for _, off := range []uint64{0, 3, 8, 1000 - 5, testSize - 8} {
			want := snapshot(r)
			v := 0x0102030405060708 ^ off
			if err := r.Write64(off, v); err != nil {
				t.Fatalf("Write64(%d) = %v", off, err)
			}
			binary.LittleEndian.PutUint64(want[off:], v)
			assertUnchanged(t, r, want)
		}
	})
	t.Run("it refuses a word that does not fit, writing nothing", func(t *testing.T) {
		r := newTestRegion(t, testSize)
		fillPattern(r)
		before := snapshot(r)
		for _, off := range []uint64{testSize - 7, testSize, maxU64 - 3, maxU64} {
			if err := r.Write64(off, 1); !errors.Is(err, ErrOutOfBounds) {
				t.Errorf("Write64(%d) = %v; want ErrOutOfBounds", off, err)
			}
		}
		assertUnchanged(t, r, before)
	})
	t.Run("it allocates nothing", func(t *testing.T) {
		r := newTestRegion(t, testSize)
		if n := testing.AllocsPerRun(100, func() { _ = r.Write64(8, 1); _ = r.Write64(maxU64, 1) }); n != 0 {
			t.Errorf("%v allocations per call; want 0", n)
		}
	})
}

func TestPrefetchChangesNothing(t *testing.T) {
	r := newTestRegion(t, testSize)
	fillPattern(r)
	before := snapshot(r)
	r.Prefetch([]uint64{0, 64, testSize - 1, testSize, maxU64, maxU64 - 63})
	r.Prefetch(nil)
	assertUnchanged(t, r, before)
	if n := testing.AllocsPerRun(100, func() { r.Prefetch([]uint64{0, 8}) }); n != 0 {
		t.Errorf("Prefetch: %v allocations; want 0", n)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r.Prefetch([]uint64{0}) // after Close: nothing to prefetch, no fault
}
