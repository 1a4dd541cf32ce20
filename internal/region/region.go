package region

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Errors returned, unwrapped, by the data-path methods of [Region].
var (
	// ErrOutOfBounds reports an access that does not lie entirely within the region.
	ErrOutOfBounds = errors.New("region: access out of bounds")
	// ErrMisaligned reports an atomic access whose offset is not a multiple of 8.
	ErrMisaligned = errors.New("region: atomic access not 8-byte aligned")
)

// Backing names reported by [Region.Backing].
const (
	backing4K      = "4k"
	backingTHP     = "thp"
	backingHugeTLB = "hugetlb"
)

// Region is a fixed-size byte range mapped outside the Go heap.
//
// All data-path methods are safe for concurrent use and do not allocate.
// Plain copies (Write, Read, Slice) are not atomic with respect to each other;
// the 8-byte word operations are. Close must not run concurrently with any
// other method.
type Region struct {
	buf     []byte // [0, size) of the mapping; nil after Close
	mem     []byte // the whole mapping, for munmap; nil after Close
	size    uint64
	backing string
	logger  *slog.Logger

	closeMu sync.Mutex
	trackState
}

// New maps a region as described by cfg. logger receives one line per region
// created and a warning on fallbacks; it may be nil.
func New(cfg Config, logger *slog.Logger) (*Region, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	mem, backing, err := mapMemory(cfg.Size, cfg.HugePages, logger)
	if err != nil {
		return nil, fmt.Errorf("region: map %d bytes (huge pages %v): %w", cfg.Size, cfg.HugePages, err)
	}
	if cfg.Prefault {
		if err := prefault(mem); err != nil {
			_ = unmap(mem)
			return nil, fmt.Errorf("region: prefault %d bytes (%s): %w", len(mem), backing, err)
		}
	}
	r := &Region{
		buf:     mem[:cfg.Size:cfg.Size],
		mem:     mem,
		size:    cfg.Size,
		backing: backing,
		logger:  logger,
	}
	logger.Info("region mapped",
		"size", cfg.Size, "mapped", len(mem), "backing", backing,
		"prefault", cfg.Prefault, "elapsed", time.Since(start))
	return r, nil
}

// Size returns the size of the region in bytes, as requested in [Config.Size].
func (r *Region) Size() uint64 { return r.size }

// Backing returns the page backing that was obtained: "4k" for base pages,
// "thp" for transparent huge pages (MADV_HUGEPAGE accepted; the kernel
// allocates them when it can), or "hugetlb" for MAP_HUGETLB pages.
func (r *Region) Backing() string { return r.backing }

// span returns buf[off:off+n] if that range lies within the region.
func (r *Region) span(off, n uint64) ([]byte, bool) {
	buf := r.buf
	size := uint64(len(buf))
	if off > size || n > size-off {
		return nil, false
	}
	return buf[off : off+n : off+n], true
}

// Write copies b to [off, off+len(b)). On error nothing is written.
func (r *Region) Write(off uint64, b []byte) error {
	dst, ok := r.span(off, uint64(len(b)))
	if !ok {
		return ErrOutOfBounds
	}
	copy(dst, b)
	return nil
}

// Read copies [off, off+len(b)) into b. On error b is unchanged.
func (r *Region) Read(off uint64, b []byte) error {
	src, ok := r.span(off, uint64(len(b)))
	if !ok {
		return ErrOutOfBounds
	}
	copy(b, src)
	return nil
}

// Slice returns a view of [off, off+n), without copying. Its capacity is n, so
// appending to it cannot write into the region. The view aliases the mapping:
// it may change under concurrent writers and must not be used after Close.
// It is for reading: bytes written through it are not seen by trackers.
func (r *Region) Slice(off, n uint64) ([]byte, error) {
	s, ok := r.span(off, n)
	if !ok {
		return nil, ErrOutOfBounds
	}
	return s, nil
}

// Prefetch asks the CPU to bring the cache lines at offs into its caches,
// without waiting for them: a later access to them is then a cache hit, and
// many lines come in at once instead of one miss at a time. Offsets outside
// the region are ignored. It is a hint, with no effect on the contents and
// none at all on CPUs where the package has no prefetch instruction (only
// amd64 has one).
func (r *Region) Prefetch(offs []uint64) {
	buf := r.buf
	if len(buf) == 0 || len(offs) == 0 {
		return
	}
	prefetch(unsafe.Pointer(unsafe.SliceData(buf)), uint64(len(buf)), offs)
}

// word returns the 8-byte word at off. Bounds are checked before alignment.
func (r *Region) word(off uint64) (*uint64, error) {
	buf := r.buf
	size := uint64(len(buf))
	if size < 8 || off > size-8 {
		return nil, ErrOutOfBounds
	}
	if off%8 != 0 {
		return nil, ErrMisaligned
	}
	// The mapping is page aligned, so an 8-aligned offset is an 8-aligned address.
	return (*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(buf)), off)), nil
}

// Load64 atomically loads the little-endian word at off, which must be a
// multiple of 8.
func (r *Region) Load64(off uint64) (uint64, error) {
	p, err := r.word(off)
	if err != nil {
		return 0, err
	}
	return atomic.LoadUint64(p), nil
}

// Store64 atomically stores v as the little-endian word at off, which must be
// a multiple of 8.
func (r *Region) Store64(off uint64, v uint64) error {
	p, err := r.word(off)
	if err != nil {
		return err
	}
	atomic.StoreUint64(p, v)
	return nil
}

// Write64 stores v as the little-endian word at off with a plain store, at
// any alignment. Unlike Store64 it is not atomic: a concurrent reader may see
// the word torn (an aligned word is not, on amd64 and arm64, but Go does not
// promise it). It is for words no reader polls, and it is much faster than
// Store64 for random writes, whose locked exchange waits for every cache miss
// while plain stores overlap theirs.
func (r *Region) Write64(off uint64, v uint64) error {
	dst, ok := r.span(off, 8)
	if !ok {
		return ErrOutOfBounds
	}
	binary.LittleEndian.PutUint64(dst, v)
	return nil
}

// Add64 atomically adds delta (modulo 2^64) to the little-endian word at off,
// which must be a multiple of 8, and returns the value before the add.
func (r *Region) Add64(off uint64, delta uint64) (old uint64, err error) {
	p, err := r.word(off)
	if err != nil {
		return 0, err
	}
	return atomic.AddUint64(p, delta) - delta, nil
}

// CompareAndSwap64 atomically replaces the little-endian word at off, which
// must be a multiple of 8, with new if it equals old. It returns whether the
// swap happened and the value found (equal to old when swapped).
func (r *Region) CompareAndSwap64(off uint64, old, new uint64) (swapped bool, prev uint64, err error) {
	p, err := r.word(off)
	if err != nil {
		return false, 0, err
	}
	for {
		if atomic.CompareAndSwapUint64(p, old, new) {
			return true, old, nil
		}
		// The swap failed, so the word differed from old at that instant. Report
		// a value that differs from old; retry if the word changed back to old.
		if cur := atomic.LoadUint64(p); cur != old {
			return false, cur, nil
		}
	}
}

// Zero sets every byte of the region to 0. It is not atomic: concurrent
// writers may leave non-zero bytes, and concurrent readers may see a mix of
// old and zero bytes. Callers that reset a store quiesce its writers first.
func (r *Region) Zero() {
	clear(r.buf)
	r.markAll()
}

// Close unmaps the region. It is idempotent. The caller guarantees that no
// goroutine still uses the region or a view returned by Slice; accesses made
// after Close (not concurrently with it) fail with ErrOutOfBounds.
func (r *Region) Close() error {
	r.closeMu.Lock()
	defer r.closeMu.Unlock()
	if r.mem == nil {
		return nil
	}
	mem := r.mem
	r.buf, r.mem = nil, nil
	if err := unmap(mem); err != nil {
		return fmt.Errorf("region: munmap %d bytes: %w", len(mem), err)
	}
	return nil
}
