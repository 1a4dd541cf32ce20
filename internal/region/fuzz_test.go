package region

import (
	"bytes"
	"errors"
	"math/bits"
	"testing"
)

// FuzzWriteRead writes random bytes at random offsets of a small region:
// nothing panics, out-of-range accesses fail with ErrOutOfBounds and change
// nothing, and in-range writes read back and change only their own bytes.
func FuzzWriteRead(f *testing.F) {
	f.Add(uint64(0), []byte("hello"))
	f.Add(uint64(testSize-1), []byte{1})
	f.Add(uint64(testSize-1), []byte{1, 2})
	f.Add(uint64(testSize), []byte{})
	f.Add(uint64(testSize+1), []byte{})
	f.Add(maxU64, []byte{1})
	f.Add(maxU64-2, []byte{1, 2, 3, 4})
	f.Add(uint64(992), []byte{8, 7, 6, 5, 4, 3, 2, 1})

	r := newTestRegion(f, testSize)
	fillPattern(r)
	f.Fuzz(func(t *testing.T, off uint64, data []byte) {
		before := snapshot(r)
		end, carry := bits.Add64(off, uint64(len(data)), 0)
		inRange := carry == 0 && end <= testSize

		err := r.Write(off, data)
		if !inRange {
			if !errors.Is(err, ErrOutOfBounds) {
				t.Fatalf("Write(%d, %d bytes) = %v; want ErrOutOfBounds", off, len(data), err)
			}
			assertUnchanged(t, r, before)
			if err := r.Read(off, make([]byte, len(data))); !errors.Is(err, ErrOutOfBounds) {
				t.Fatalf("Read(%d, %d bytes) = %v; want ErrOutOfBounds", off, len(data), err)
			}
			if _, err := r.Slice(off, uint64(len(data))); !errors.Is(err, ErrOutOfBounds) {
				t.Fatalf("Slice(%d, %d) = %v; want ErrOutOfBounds", off, len(data), err)
			}
		} else {
			if err != nil {
				t.Fatalf("Write(%d, %d bytes) = %v; want nil", off, len(data), err)
			}
			want := before
			copy(want[off:end], data)
			assertUnchanged(t, r, want)
			got := make([]byte, len(data))
			if err := r.Read(off, got); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("Read(%d, %d bytes) = %x, %v; want %x, nil", off, len(data), got, err, data)
			}
			if s, err := r.Slice(off, uint64(len(data))); err != nil || !bytes.Equal(s, data) {
				t.Fatalf("Slice(%d, %d) = %x, %v; want %x, nil", off, len(data), s, err, data)
			}
		}

		// The same offset as a word.
		before = snapshot(r)
		_, err = r.Add64(off, 1)
		switch {
		case off > testSize-8:
			if !errors.Is(err, ErrOutOfBounds) {
				t.Fatalf("Add64(%d) = %v; want ErrOutOfBounds", off, err)
			}
		case off%8 != 0:
			if !errors.Is(err, ErrMisaligned) {
				t.Fatalf("Add64(%d) = %v; want ErrMisaligned", off, err)
			}
		default:
			if err != nil {
				t.Fatalf("Add64(%d) = %v; want nil", off, err)
			}
			_, _ = r.Add64(off, maxU64) // undo
		}
		assertUnchanged(t, r, before)
	})
}
