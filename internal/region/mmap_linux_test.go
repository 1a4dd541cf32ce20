package region

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestNewReportsBackingAndRequestedSize(t *testing.T) {
	const size = 3<<20 + 5 // over one huge page, not a page multiple
	tests := []struct {
		name        string
		hp          HugePages
		wantBacking string
		wantAlign   uint64
	}{
		{"huge pages off maps base pages", HugePagesOff, "4k", pageSize()},
		{"madvise maps transparent huge pages aligned to a huge page", HugePagesMadvise, "thp", thpPageSize()},
	}
	for _, tt := range tests {
		for _, pre := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s (prefault %v)", tt.name, pre), func(t *testing.T) {
				r, err := New(Config{Size: size, HugePages: tt.hp, Prefault: pre}, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				if r.Backing() != tt.wantBacking || r.Size() != size {
					t.Fatalf("Backing, Size = %q, %d; want %q, %d", r.Backing(), r.Size(), tt.wantBacking, size)
				}
				start := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(r.mem))))
				if start%tt.wantAlign != 0 || uint64(len(r.mem))%tt.wantAlign != 0 || uint64(len(r.mem)) < size {
					t.Fatalf("mapping at %#x, %d bytes; want aligned to %d and covering %d", start, len(r.mem), tt.wantAlign, size)
				}
				if !bytes.Equal(r.mem, make([]byte, len(r.mem))) {
					t.Fatal("new region is not zeroed")
				}
				if err := r.Write(size-1, []byte{1}); err != nil {
					t.Fatal(err)
				}
				if err := r.Write(size, []byte{1}); !errors.Is(err, ErrOutOfBounds) {
					t.Fatalf("Write at Size() = %v; want ErrOutOfBounds", err)
				}
			})
		}
	}
}

func TestHugeTLBFallsBackToTHPWhenPagesAreNotReserved(t *testing.T) {
	// Ask for one page more than the pool holds, so that MAP_HUGETLB fails
	// unless the host allows surplus pages.
	hs := hugeTLBPageSize()
	free := meminfo(t, "HugePages_Free")
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	r, err := New(Config{Size: (free + 1) * hs, HugePages: HugePagesHugeTLB, Prefault: true}, logger)
	if err != nil {
		t.Fatalf("New = %v; want a fallback, not an error", err)
	}
	defer r.Close()
	if r.Backing() == "hugetlb" {
		t.Skipf("host grants surplus huge pages (%d free): no fallback to test", free)
	}
	if r.Backing() != "thp" {
		t.Fatalf("Backing() = %q; want thp", r.Backing())
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "hugetlb mapping failed") {
		t.Fatalf("log does not contain the fallback warning:\n%s", logs.String())
	}
	if _, err := r.Add64(r.Size()-8, 1); err != nil {
		t.Fatal(err)
	}
}

func TestPrefaultMakesEveryPageResident(t *testing.T) {
	const size = 8 << 20
	for _, tt := range []struct {
		name     string
		prefault bool
	}{
		{"prefaulted region is resident", true},
		{"region without prefault is not resident", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(Config{Size: size, HugePages: HugePagesOff, Prefault: tt.prefault}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got, want := resident(t, r.mem), uint64(0)
			if tt.prefault {
				want = size
			}
			if got != want {
				t.Fatalf("%d bytes resident; want %d", got, want)
			}
		})
	}
}

func TestTouchPagesMakesEveryPageResident(t *testing.T) {
	const size = 1 << 20
	r := newTestRegion(t, size)
	touchPages(r.mem)
	if got := resident(t, r.mem); got != size {
		t.Fatalf("%d bytes resident after touching; want %d", got, size)
	}
}

func TestMadviseRegionGetsHugePages(t *testing.T) {
	enabled, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || bytes.Contains(enabled, []byte("[never]")) {
		t.Skipf("transparent huge pages unavailable (%q, %v)", bytes.TrimSpace(enabled), err)
	}
	const size = 16 << 20
	r, err := New(Config{Size: size, HugePages: HugePagesMadvise, Prefault: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// The kernel may lack free huge pages (fragmentation): report, do not fail.
	if huge := smaps(t, r.mem)["AnonHugePages"]; huge == 0 {
		t.Skipf("kernel backed the region with no huge pages (memory fragmented?)")
	} else {
		t.Logf("%d of %d bytes on huge pages", huge, size)
	}
}

// resident returns how many bytes of mem are in memory, per mincore(2).
func resident(t *testing.T, mem []byte) uint64 {
	t.Helper()
	ps := pageSize()
	vec := make([]byte, (uint64(len(mem))+ps-1)/ps)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(mem))),
		uintptr(len(mem)), uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	if errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	var n uint64
	for _, v := range vec {
		n += uint64(v & 1)
	}
	return n * ps
}

// smaps returns the byte counts ("Rss", "AnonHugePages", ...) of the mapping
// that starts at mem.
func smaps(t *testing.T, mem []byte) map[string]uint64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("smaps: %v", err)
	}
	defer f.Close()
	start := fmt.Sprintf("%x-", uintptr(unsafe.Pointer(unsafe.SliceData(mem))))
	out := map[string]uint64{}
	found := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if fields := strings.Fields(line); len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			if found {
				break
			}
			found = strings.HasPrefix(line, start)
			continue
		}
		if found {
			if k, v, ok := parseKB(line); ok {
				out[k] = v
			}
		}
	}
	if !found {
		t.Fatalf("mapping %s not found in /proc/self/smaps", start)
	}
	return out
}

// meminfo returns a count from /proc/meminfo.
func meminfo(t *testing.T, key string) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Skipf("meminfo: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				t.Fatalf("meminfo %s: %v", key, err)
			}
			return n
		}
	}
	t.Fatalf("meminfo has no %s", key)
	return 0
}

// parseKB parses a "Key:   123 kB" line into bytes.
func parseKB(line string) (string, uint64, bool) {
	k, v, ok := strings.Cut(line, ":")
	if !ok {
		return "", 0, false
	}
	v, ok = strings.CutSuffix(strings.TrimSpace(v), " kB")
	n, err := strconv.ParseUint(v, 10, 64)
	return k, n << 10, ok && err == nil
}

func TestNewWrapsMappingErrors(t *testing.T) {
	// 1 TiB without prefault: rejected by the kernel's overcommit heuristic on
	// most hosts.
	r, err := New(Config{Size: MaxSize, HugePages: HugePagesOff}, nil)
	if err == nil {
		r.Close()
		t.Skip("kernel accepted a 1 TiB mapping")
	}
	if !strings.HasPrefix(err.Error(), "region: map ") {
		t.Fatalf("error %q lacks context", err)
	}
}
