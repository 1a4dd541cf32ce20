package store

import (
	"fmt"
	"strconv"
	"strings"
)

// ByteSize is a size in bytes that configuration files may write with a
// binary unit: 4096, 64KiB, 512MiB, 3GiB, 1TiB (KB/MB/GB/TB are read as the
// binary units too).
type ByteSize uint64

var units = []struct {
	suffix string
	mult   uint64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10},
	{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1},
}

// ParseByteSize parses a size such as "64MiB".
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	mult := uint64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseUint(t, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: want a whole number with an optional unit (KiB, MiB, GiB, TiB)", s)
	}
	if n > (1<<64-1)/mult {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return ByteSize(n * mult), nil
}

// UnmarshalText implements encoding.TextUnmarshaler (YAML scalars).
func (b *ByteSize) UnmarshalText(text []byte) error {
	v, err := ParseByteSize(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// String formats the size with the largest exact binary unit.
func (b ByteSize) String() string {
	for _, u := range units[:4] {
		if uint64(b) >= u.mult && uint64(b)%u.mult == 0 {
			return strconv.FormatUint(uint64(b)/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatUint(uint64(b), 10) + "B"
}
