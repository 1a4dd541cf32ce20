package region

import (
	"fmt"
	"strconv"
)

// MaxSize is the largest region size accepted by [Config.Validate], in bytes (1 TiB).
const MaxSize = 1 << 40

// HugePages selects the page backing of a region.
type HugePages uint8

const (
	// HugePagesOff maps the region on plain base pages (4 KiB on amd64).
	HugePagesOff HugePages = iota
	// HugePagesMadvise maps the region with mmap and advises transparent huge
	// pages (MADV_HUGEPAGE). The start of regions of at least one huge page is
	// aligned to a huge page boundary. This is the default.
	HugePagesMadvise
	// HugePagesHugeTLB maps the region with MAP_HUGETLB, which needs huge pages
	// reserved by the administrator (vm.nr_hugepages). If that mapping fails,
	// New logs a warning and falls back to HugePagesMadvise.
	HugePagesHugeTLB
)

// ParseHugePages parses the names "off", "madvise" and "hugetlb" (as printed
// by [HugePages.String]).
func ParseHugePages(s string) (HugePages, error) {
	switch s {
	case "off":
		return HugePagesOff, nil
	case "madvise":
		return HugePagesMadvise, nil
	case "hugetlb":
		return HugePagesHugeTLB, nil
	}
	return 0, fmt.Errorf("region: unknown huge pages mode %q (want off, madvise or hugetlb)", s)
}

// String returns "off", "madvise" or "hugetlb", or "HugePages(n)" for an
// unknown value.
func (h HugePages) String() string {
	switch h {
	case HugePagesOff:
		return "off"
	case HugePagesMadvise:
		return "madvise"
	case HugePagesHugeTLB:
		return "hugetlb"
	}
	return "HugePages(" + strconv.Itoa(int(h)) + ")"
}

// Config configures a [Region]. Start from [DefaultConfig] and set Size.
type Config struct {
	// Size is the size of the region in bytes; it must be > 0 and ≤ MaxSize.
	// The mapping is rounded up to whole pages (huge pages when they are used),
	// but accesses are bounded by Size and Region.Size reports it unchanged.
	Size uint64
	// HugePages selects the page backing.
	HugePages HugePages
	// Prefault touches every page at creation (MADV_POPULATE_WRITE, or one
	// write per page on kernels before 5.14), so that no first-touch page
	// fault happens on the data path. It costs about 1 s per GiB on 4 KiB
	// pages and less on huge pages.
	Prefault bool
}

// DefaultConfig returns the defaults: transparent huge pages, pre-faulted.
// Size is left 0 and must be set by the caller.
func DefaultConfig() Config {
	return Config{HugePages: HugePagesMadvise, Prefault: true}
}

// Validate reports whether c can be used to create a region.
func (c Config) Validate() error {
	if c.Size == 0 {
		return fmt.Errorf("region: size must be > 0")
	}
	if c.Size > MaxSize {
		return fmt.Errorf("region: size %d exceeds the maximum %d", c.Size, uint64(MaxSize))
	}
	if c.HugePages > HugePagesHugeTLB {
		return fmt.Errorf("region: unknown huge pages mode %v", c.HugePages)
	}
	return nil
}
