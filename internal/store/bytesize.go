package store

import (
	"fmt"
	"strconv"
	"strings"
)

// ByteSize is a size in bytes that configuration files and flags write as a
// whole number of bytes, optionally with a binary unit: 4096, 4096B, 64KiB,
// 512MiB, 3GiB, 1TiB. The decimal units KB, MB, GB and TB (and K, M, G, T)
// are refused, not guessed: 1GB is 10^9 bytes to a disk vendor and 2^30 to
// many tools, and a store sized by the wrong guess is 7% off.
type ByteSize uint64

// units are the accepted units, largest first; the first four are the ones
// String writes.
var units = []struct {
	suffix string
	mult   uint64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1},
}

// unitList is what the errors say is accepted.
const unitList = "B, KiB, MiB, GiB or TiB (powers of 1024)"

// ParseByteSize parses a size such as "64MiB": a whole number of bytes with
// an optional unit B, KiB, MiB, GiB or TiB (spaces around and between are
// allowed; the units are case-sensitive).
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	i := strings.LastIndexFunc(t, func(r rune) bool { return '0' <= r && r <= '9' }) + 1
	num, unit := strings.TrimSpace(t[:i]), strings.TrimSpace(t[i:])
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: want a whole number of bytes with an optional unit %s", s, unitList)
	}
	mult := uint64(1)
	if unit != "" {
		mult = 0
		for _, u := range units {
			if unit == u.suffix {
				mult = u.mult
			}
		}
	}
	if mult == 0 {
		return 0, unitError(s, n, unit)
	}
	if n > (1<<64-1)/mult {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return ByteSize(n * mult), nil
}

// unitError explains why unit (after the number n in s) is refused: a
// decimal unit is named as such, with the binary spelling and the bytes it
// would mean as a power of ten; a binary unit in the wrong case gets its
// spelling.
func unitError(s string, n uint64, unit string) error {
	for _, u := range units {
		if strings.EqualFold(unit, u.suffix) {
			return fmt.Errorf("size %q: write %d%s (units are case-sensitive: %s)", s, n, u.suffix, unitList)
		}
	}
	letter := strings.TrimSuffix(strings.ToUpper(unit), "B")
	if k := strings.Index("KMGT", letter); len(letter) == 1 && k >= 0 {
		bin, dec := letter+"iB", ""
		if p := pow(1000, k+1); n <= (1<<64-1)/p {
			dec = fmt.Sprintf(", or %d for %d×10^%d", n*p, n, 3*(k+1))
		}
		if p := pow(1024, k+1); n <= (1<<64-1)/p {
			bin = fmt.Sprintf("%d%s for %d bytes", n, bin, n*p)
		} else {
			bin = fmt.Sprintf("%d%s", n, bin)
		}
		return fmt.Errorf("size %q: decimal units (KB, MB, GB, TB) are not accepted: write %s%s; the units are %s", s, bin, dec, unitList)
	}
	return fmt.Errorf("size %q: unknown unit %q: want a whole number of bytes with an optional unit %s", s, unit, unitList)
}

// pow is b to the power e (small: no overflow check).
func pow(b uint64, e int) uint64 {
	p := uint64(1)
	for range e {
		p *= b
	}
	return p
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
