package region

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

const maxU64 = ^uint64(0)

// rangeCases are byte ranges [off, off+n) on a region of testSize bytes.
var rangeCases = []struct {
	name string
	off  uint64
	n    uint64
	ok   bool
}{
	{"access at offset 0 succeeds", 0, 16, true},
	{"access of the whole region succeeds", 0, testSize, true},
	{"access ending exactly at the end succeeds", testSize - 4, 4, true},
	{"empty access at the end succeeds", testSize, 0, true},
	{"empty access at offset 0 succeeds", 0, 0, true},
	{"access one byte past the end fails", testSize - 3, 4, false},
	{"access starting at the end fails", testSize, 1, false},
	{"empty access past the end fails", testSize + 1, 0, false},
	{"access into the page padding after the end fails", testSize + 5, 1, false},
	{"access one byte larger than the region fails", 0, testSize + 1, false},
	{"offset near 2^64 does not wrap", maxU64, 1, false},
	{"offset plus length wrapping to a small value fails", maxU64 - 1, 4, false},
	{"length near 2^64 does not wrap", 8, maxU64 - 7, false},
	{"length of 2^64-1 from offset 1 does not wrap to the start", 1, maxU64, false},
}

func TestWriteBounds(t *testing.T) {
	for _, tt := range rangeCases {
		if tt.n > 2*testSize { // cannot build such a slice; covered by Slice and Read
			continue
		}
		t.Run("write: "+tt.name, func(t *testing.T) {
			r := newTestRegion(t, testSize)
			fillPattern(r)
			before := snapshot(r)
			data := bytes.Repeat([]byte{0xEE}, int(tt.n))
			err := r.Write(tt.off, data)
			if !tt.ok {
				if !errors.Is(err, ErrOutOfBounds) {
					t.Fatalf("Write(%d, %d bytes) = %v; want ErrOutOfBounds", tt.off, tt.n, err)
				}
				assertUnchanged(t, r, before)
				return
			}
			if err != nil {
				t.Fatalf("Write(%d, %d bytes) = %v; want nil", tt.off, tt.n, err)
			}
			want := before
			copy(want[tt.off:tt.off+tt.n], data)
			assertUnchanged(t, r, want)
		})
	}
}

func TestReadBounds(t *testing.T) {
	for _, tt := range rangeCases {
		if tt.n > 2*testSize {
			continue
		}
		t.Run("read: "+tt.name, func(t *testing.T) {
			r := newTestRegion(t, testSize)
			fillPattern(r)
			dst := bytes.Repeat([]byte{0xAA}, int(tt.n))
			err := r.Read(tt.off, dst)
			if !tt.ok {
				if !errors.Is(err, ErrOutOfBounds) {
					t.Fatalf("Read(%d, %d bytes) = %v; want ErrOutOfBounds", tt.off, tt.n, err)
				}
				if !bytes.Equal(dst, bytes.Repeat([]byte{0xAA}, int(tt.n))) {
					t.Fatal("failed Read changed the destination")
				}
				return
			}
			if err != nil {
				t.Fatalf("Read(%d, %d bytes) = %v; want nil", tt.off, tt.n, err)
			}
			if !bytes.Equal(dst, r.mem[tt.off:tt.off+tt.n]) {
				t.Fatal("Read returned different bytes than the region holds")
			}
		})
	}
}

func TestSliceBounds(t *testing.T) {
	for _, tt := range rangeCases {
		t.Run("slice: "+tt.name, func(t *testing.T) {
			r := newTestRegion(t, testSize)
			s, err := r.Slice(tt.off, tt.n)
			if !tt.ok {
				if !errors.Is(err, ErrOutOfBounds) || s != nil {
					t.Fatalf("Slice(%d, %d) = %d bytes, %v; want nil, ErrOutOfBounds", tt.off, tt.n, len(s), err)
				}
				return
			}
			if err != nil || uint64(len(s)) != tt.n || uint64(cap(s)) != tt.n {
				t.Fatalf("Slice(%d, %d) = len %d cap %d, %v; want len and cap %d, nil", tt.off, tt.n, len(s), cap(s), err, tt.n)
			}
		})
	}
}

func TestSliceIsAViewWhoseAppendCannotReachTheRegion(t *testing.T) {
	r := newTestRegion(t, testSize)
	s, err := r.Slice(8, 4)
	if err != nil {
		t.Fatal(err)
	}
	copy(s, "abcd")
	got := make([]byte, 5)
	_ = r.Read(8, got)
	if string(got) != "abcd\x00" {
		t.Fatalf("region holds %q after writing through the view; want %q", got, "abcd\x00")
	}
	_ = append(s, 'X')
	_ = r.Read(8, got)
	if got[4] != 0 {
		t.Fatal("append to a view wrote into the region")
	}
}

func TestAtomicBounds(t *testing.T) {
	tests := []struct {
		name    string
		size    uint64
		off     uint64
		wantErr error
	}{
		{"word at offset 0 succeeds", testSize, 0, nil},
		{"last whole word succeeds", testSize, 992, nil},
		{"word crossing the end fails", testSize, 1000, ErrOutOfBounds},
		{"word in the page padding after the end fails", testSize, 1008, ErrOutOfBounds},
		{"word ending exactly at the end of a word-multiple region succeeds", 1024, 1016, nil},
		{"word starting at the end fails", 1024, 1024, ErrOutOfBounds},
		{"misaligned offset inside the region fails", testSize, 4, ErrMisaligned},
		{"misaligned offset past the end reports out of bounds", testSize, 1001, ErrOutOfBounds},
		{"aligned offset near 2^64 does not wrap", testSize, maxU64 - 7, ErrOutOfBounds},
		{"offset 2^64-1 does not wrap", testSize, maxU64, ErrOutOfBounds},
		{"region smaller than a word has no words", 5, 0, ErrOutOfBounds},
	}
	ops := []struct {
		name string
		do   func(r *Region, off uint64) error
	}{
		{"Load64", func(r *Region, off uint64) error { _, err := r.Load64(off); return err }},
		{"Store64", func(r *Region, off uint64) error { return r.Store64(off, 0xFEEDFACE) }},
		{"Add64", func(r *Region, off uint64) error { _, err := r.Add64(off, 3); return err }},
		{"CompareAndSwap64", func(r *Region, off uint64) error {
			old, _ := r.Load64(off)
			_, _, err := r.CompareAndSwap64(off, old, 42)
			return err
		}},
	}
	for _, tt := range tests {
		for _, op := range ops {
			t.Run(op.name+": "+tt.name, func(t *testing.T) {
				r := newTestRegion(t, tt.size)
				fillPattern(r)
				before := snapshot(r)
				err := op.do(r, tt.off)
				if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
					t.Fatalf("%s(%d) = %v; want %v", op.name, tt.off, err, tt.wantErr)
				}
				if err != nil || op.name == "Load64" {
					assertUnchanged(t, r, before)
				}
			})
		}
	}
}

// TestHostIsLittleEndian documents an assumption of the package: words are
// little-endian because the atomic operations use the native byte order and
// the supported hosts (amd64, arm64) are little-endian.
func TestHostIsLittleEndian(t *testing.T) {
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], 0x0102)
	if b[0] != 0x02 {
		t.Fatal("host is big-endian: region words would not be little-endian; the package does not support this host")
	}
}

func TestWordsAreLittleEndian(t *testing.T) {
	r := newTestRegion(t, testSize)
	if err := r.Store64(16, 0x0102030405060708); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 8)
	_ = r.Read(16, got)
	if want := binary.LittleEndian.AppendUint64(nil, 0x0102030405060708); !bytes.Equal(got, want) {
		t.Fatalf("Store64 wrote % x; want % x", got, want)
	}
	_ = r.Write(24, binary.LittleEndian.AppendUint64(nil, 0xA1B2C3D4E5F60718))
	if v, _ := r.Load64(24); v != 0xA1B2C3D4E5F60718 {
		t.Fatalf("Load64 = %#x; want %#x", v, uint64(0xA1B2C3D4E5F60718))
	}
}

func TestAtomicOperations(t *testing.T) {
	r := newTestRegion(t, testSize)
	const off = 40
	if v, err := r.Load64(off); v != 0 || err != nil {
		t.Fatalf("new region: Load64 = %d, %v; want 0, nil", v, err)
	}
	_ = r.Store64(off, 10)
	if old, err := r.Add64(off, 5); old != 10 || err != nil {
		t.Fatalf("Add64 = %d, %v; want the old value 10", old, err)
	}
	if old, _ := r.Add64(off, maxU64); old != 15 { // adding 2^64-1 subtracts 1
		t.Fatalf("Add64 = %d; want 15", old)
	}
	if v, _ := r.Load64(off); v != 14 {
		t.Fatalf("after adding 2^64-1: Load64 = %d; want 14 (wraps modulo 2^64)", v)
	}
	if swapped, prev, err := r.CompareAndSwap64(off, 99, 1); swapped || prev != 14 || err != nil {
		t.Fatalf("CAS with a wrong old value = %v, %d, %v; want false, 14, nil", swapped, prev, err)
	}
	if swapped, prev, err := r.CompareAndSwap64(off, 14, 1); !swapped || prev != 14 || err != nil {
		t.Fatalf("CAS with the right old value = %v, %d, %v; want true, 14, nil", swapped, prev, err)
	}
	if v, _ := r.Load64(off); v != 1 {
		t.Fatalf("after CAS: Load64 = %d; want 1", v)
	}
	for _, neighbour := range []uint64{off - 8, off + 8} {
		if v, _ := r.Load64(neighbour); v != 0 {
			t.Fatalf("neighbouring word at %d = %d; want 0", neighbour, v)
		}
	}
}

func TestZeroClearsTheRegion(t *testing.T) {
	r := newTestRegion(t, testSize)
	fillPattern(r)
	r.Zero()
	for i, b := range r.mem[:testSize] {
		if b != 0 {
			t.Fatalf("byte %d = %#x after Zero; want 0", i, b)
		}
	}
}

func TestCloseIsIdempotentAndLaterAccessesFail(t *testing.T) {
	r, err := New(Config{Size: testSize}, nil)
	if err != nil {
		t.Skipf("New: %v", err)
	}
	for i := range 2 {
		if err := r.Close(); err != nil {
			t.Fatalf("Close #%d = %v; want nil", i+1, err)
		}
	}
	if err := r.Write(0, []byte{1}); !errors.Is(err, ErrOutOfBounds) {
		t.Errorf("Write after Close = %v; want ErrOutOfBounds", err)
	}
	if err := r.Read(0, make([]byte, 1)); !errors.Is(err, ErrOutOfBounds) {
		t.Errorf("Read after Close = %v; want ErrOutOfBounds", err)
	}
	if _, err := r.Add64(0, 1); !errors.Is(err, ErrOutOfBounds) {
		t.Errorf("Add64 after Close = %v; want ErrOutOfBounds", err)
	}
	r.Zero() // must not fault
}

func TestDataPathDoesNotAllocate(t *testing.T) {
	r := newTestRegion(t, testSize)
	buf := make([]byte, 64)
	var sink uint64
	tests := []struct {
		name string
		fn   func()
	}{
		{"Write", func() { _ = r.Write(8, buf) }},
		{"Read", func() { _ = r.Read(8, buf) }},
		{"Slice", func() { s, _ := r.Slice(8, 64); sink += uint64(len(s)) }},
		{"Load64", func() { v, _ := r.Load64(8); sink += v }},
		{"Store64", func() { _ = r.Store64(8, sink) }},
		{"Add64", func() { v, _ := r.Add64(8, 1); sink += v }},
		{"CompareAndSwap64", func() { _, v, _ := r.CompareAndSwap64(8, sink, 7); sink += v }},
		{"Write out of bounds", func() { _ = r.Write(maxU64, buf) }},
		{"Read out of bounds", func() { _ = r.Read(testSize, buf) }},
		{"Slice out of bounds", func() { _, _ = r.Slice(1, maxU64) }},
		{"Load64 misaligned", func() { _, _ = r.Load64(3) }},
		{"Store64 out of bounds", func() { _ = r.Store64(1000, 1) }},
		{"Add64 out of bounds", func() { _, _ = r.Add64(maxU64-7, 1) }},
	}
	for _, tt := range tests {
		if n := testing.AllocsPerRun(100, tt.fn); n != 0 {
			t.Errorf("%s: %v allocations per call; want 0", tt.name, n)
		}
	}
}
