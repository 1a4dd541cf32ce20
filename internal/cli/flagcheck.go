package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"os"
	"strconv"
)

// checkFloat rejects a float flag that is NaN, infinite or outside
// [lo, hi], naming the flag (exit code 2).
func checkFloat(flag string, v, lo, hi float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < lo || v > hi {
		return usageError("--%s: %v out of range [%g, %g]", flag, v, lo, hi)
	}
	return nil
}

// checkInt rejects an integer flag outside [lo, hi], naming the flag (exit
// code 2). Counts that size memory or work need an upper bound: a count a
// machine cannot hold is a mistake to report, not a crash.
func checkInt[T ~int | ~int64 | ~uint | ~uint32 | ~uint64](flag string, v, lo, hi T) error {
	if v < lo || v > hi {
		return usageError("--%s: %d out of range [%d, %d]", flag, v, lo, hi)
	}
	return nil
}

// checkHostPort rejects a flag's address unless it is host:port with a
// host (name or IP) and a port in 1..65535: where packets are sent to.
func checkHostPort(flag, s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return usageError("--%s: %q: want host:port (%v)", flag, s, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	switch {
	case host == "":
		return usageError("--%s: %q: no host (want host:port, e.g. 127.0.0.1:40040)", flag, s)
	case err != nil || p == 0:
		return usageError("--%s: %q: port %q is not in 1..65535", flag, s, port)
	}
	return nil
}

// readFlagFile reads the regular file a flag names, at most max bytes,
// naming the flag in every error: a device, a FIFO or a directory is
// refused rather than read without end.
func readFlagFile(flag, path string, max int64) ([]byte, error) {
	if path == "" {
		return nil, usageError("--%s: empty file name", flag)
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, usageError("--%s: %v", flag, err)
		}
		return nil, fmt.Errorf("--%s: %w", flag, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", flag, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, usageError("--%s: %s is not a regular file", flag, path)
	}
	if fi.Size() > max {
		return nil, usageError("--%s: %s is %d bytes, more than the %d this flag reads", flag, path, fi.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("--%s: read %s: %w", flag, path, err)
	}
	if int64(len(b)) > max {
		return nil, usageError("--%s: %s grew past %d bytes while read", flag, path, max)
	}
	return b, nil
}
