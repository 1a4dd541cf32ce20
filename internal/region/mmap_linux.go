package region

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// defaultHugePageSize is used when the kernel does not say (2 MiB on amd64 and
// on arm64 with 4 KiB base pages).
const defaultHugePageSize = 2 << 20

// mapMemory maps an anonymous private read-write region of at least size bytes
// with the requested backing and returns the whole mapping and the backing
// obtained.
func mapMemory(size uint64, hp HugePages, logger *slog.Logger) ([]byte, string, error) {
	if size > math.MaxInt {
		return nil, "", fmt.Errorf("size exceeds the address space")
	}
	if hp == HugePagesHugeTLB {
		hs := hugeTLBPageSize()
		mem, err := mmapAligned(roundUp(size, hs), 0, unix.MAP_HUGETLB)
		if err == nil {
			return mem, backingHugeTLB, nil
		}
		logger.Warn("region: hugetlb mapping failed, falling back to transparent huge pages (reserve pages with vm.nr_hugepages)",
			"size", size, "huge_page_size", hs, "err", err)
		hp = HugePagesMadvise
	}
	if hp == HugePagesOff {
		mem, err := mmapAligned(roundUp(size, pageSize()), 0, 0)
		return mem, backing4K, err
	}

	// Transparent huge pages: a huge page can only back a huge-page-aligned
	// range, so align the start and round the length for regions of at least
	// one huge page.
	hs := thpPageSize()
	length, align := roundUp(size, pageSize()), uint64(0)
	if size >= hs {
		length, align = roundUp(size, hs), hs
	}
	mem, err := mmapAligned(length, align, 0)
	if err != nil {
		return nil, "", err
	}
	if err := unix.Madvise(mem, unix.MADV_HUGEPAGE); err != nil {
		logger.Warn("region: MADV_HUGEPAGE failed, using base pages", "size", size, "err", err)
		return mem, backing4K, nil
	}
	return mem, backingTHP, nil
}

// mmapAligned maps length bytes whose start is a multiple of align (when align
// exceeds the base page size) by mapping length+align bytes and unmapping the
// excess head and tail.
func mmapAligned(length, align uint64, flags int) ([]byte, error) {
	const prot = unix.PROT_READ | unix.PROT_WRITE
	flags |= unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	if align <= pageSize() {
		p, err := unix.MmapPtr(-1, 0, nil, uintptr(length), prot, flags)
		if err != nil {
			return nil, err
		}
		return unsafe.Slice((*byte)(p), length), nil
	}
	total := length + align
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(total), prot, flags)
	if err != nil {
		return nil, err
	}
	head := roundUp(uint64(uintptr(p)), align) - uint64(uintptr(p))
	tail := total - head - length
	if head > 0 {
		if err := unix.MunmapPtr(p, uintptr(head)); err != nil {
			_ = unix.MunmapPtr(p, uintptr(total))
			return nil, fmt.Errorf("trim head: %w", err)
		}
	}
	start := unsafe.Add(p, head)
	if tail > 0 {
		if err := unix.MunmapPtr(unsafe.Add(start, length), uintptr(tail)); err != nil {
			_ = unix.MunmapPtr(start, uintptr(length+tail))
			return nil, fmt.Errorf("trim tail: %w", err)
		}
	}
	return unsafe.Slice((*byte)(start), length), nil
}

// unmap releases a mapping made by mapMemory.
func unmap(mem []byte) error {
	return unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(mem)), uintptr(len(mem)))
}

// prefault makes every page of mem resident and writable, so that no page
// fault happens on first access.
func prefault(mem []byte) error {
	for {
		err := unix.Madvise(mem, unix.MADV_POPULATE_WRITE)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EINVAL):
			// Kernel before 5.14: touch one byte per page instead.
			touchPages(mem)
			return nil
		default:
			return fmt.Errorf("MADV_POPULATE_WRITE: %w", err)
		}
	}
}

// touchPages writes one byte per base page of mem, which faults it in.
func touchPages(mem []byte) {
	ps := int(pageSize())
	for i := 0; i < len(mem); i += ps {
		mem[i] = 0
	}
}

func pageSize() uint64 { return uint64(os.Getpagesize()) }

// thpPageSize returns the size of a transparent huge page.
func thpPageSize() uint64 {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size")
	if err == nil {
		if n, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64); err == nil && validPageSize(n) {
			return n
		}
	}
	return defaultHugePageSize
}

// hugeTLBPageSize returns the default hugetlbfs page size, used by MAP_HUGETLB.
func hugeTLBPageSize() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return defaultHugePageSize
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, ok := bytes.CutPrefix(sc.Bytes(), []byte("Hugepagesize:"))
		if !ok {
			continue
		}
		v, ok = bytes.CutSuffix(bytes.TrimSpace(v), []byte(" kB"))
		n, err := strconv.ParseUint(string(v), 10, 64)
		if ok && err == nil && validPageSize(n<<10) {
			return n << 10
		}
		break
	}
	return defaultHugePageSize
}

// validPageSize reports whether n is a power of two between 4 KiB and 16 GiB.
func validPageSize(n uint64) bool {
	return n >= 4<<10 && n <= 16<<30 && n&(n-1) == 0
}

// roundUp rounds n up to a multiple of align, a power of two.
func roundUp(n, align uint64) uint64 {
	return (n + align - 1) &^ (align - 1)
}
