package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/dta-go/dta/internal/httpguard"
	"github.com/dta-go/dta/internal/store"
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

// openFlagFile opens the regular file a flag names, of at most max bytes,
// for streaming: a device, a FIFO or a directory is refused rather than read
// without end. Errors name the flag.
func openFlagFile(flag, path string, max int64) (*os.File, error) {
	if path == "" {
		return nil, usageError("--%s: empty file name", flag)
	}
	f, err := httpguard.OpenNoWait(path) // a FIFO must not block the open
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, usageError("--%s: %v", flag, err)
		}
		return nil, fmt.Errorf("--%s: %w", flag, err)
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		f.Close()
		return nil, fmt.Errorf("--%s: %w", flag, err)
	case !fi.Mode().IsRegular():
		f.Close()
		return nil, usageError("--%s: %s is not a regular file", flag, path)
	case fi.Size() > max:
		f.Close()
		return nil, usageError("--%s: %s is %d bytes, more than the %d this flag reads", flag, path, fi.Size(), max)
	}
	return f, nil
}

// readFlagFile reads the regular file a flag names, at most max bytes
// (openFlagFile), naming the flag in every error.
func readFlagFile(flag, path string, max int64) ([]byte, error) {
	f, err := openFlagFile(flag, path, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("--%s: read %s: %w", flag, path, err)
	}
	if int64(len(b)) > max {
		return nil, usageError("--%s: %s grew past %d bytes while read", flag, path, max)
	}
	return b, nil
}

// checkOutputFile refuses, before any work, a file a flag names for the
// command to write that it could not create: a directory, or a path whose
// directory does not exist. Errors name the flag (exit code 2). "" (the
// flag not given) passes. It creates nothing: a command that fails later
// leaves no file behind.
func checkOutputFile(flag, path string) error {
	if path == "" {
		return nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return usageError("--%s: %s is a directory", flag, path)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		return usageError("--%s: %s: its directory does not exist", flag, path)
	}
	return nil
}

// machineMemory returns the machine's memory (MemTotal of /proc/meminfo)
// and whether it is known.
func machineMemory() (uint64, bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			if kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64); err == nil && kb > 0 && kb < 1<<44 {
				return kb << 10, true
			}
		}
	}
	return 0, false
}

// checkStoresFit refuses stores whose regions add up to more than this
// machine's memory: mapped, prefaulted or written, they would have the
// kernel kill the process (or another) rather than fail with a message.
func checkStoresFit(descs []store.Descriptor) error {
	mem, ok := machineMemory()
	if !ok {
		return nil
	}
	var total uint64
	for i := range descs {
		total += descs[i].RegionSize()
	}
	if total > mem {
		return usageError("stores: %d bytes (%.1f GiB) in all, more than this machine's %d bytes (%.1f GiB) of memory; make them smaller (stores[].memory, slots, ...)",
			total, float64(total)/(1<<30), mem, float64(mem)/(1<<30))
	}
	return nil
}

// checkDataDir refuses a data directory (--data-dir, collector.data_dir)
// that is not a directory, or that would be created under a parent that
// does not exist: a mistyped path must not start empty stores in a new
// listenAddr is an address a command is about to listen on and the flag and
// key that name it ("--listen (translator.listen)").
type listenAddr struct {
	name    string
	network string // "udp" or "tcp"
	addr    string
}

// checkListenAddrs refuses, before anything starts (stores mapped, sockets
// opened), an address the command could not listen on: another socket
// already holds it, or the host has no such address. Each is bound and
// closed at once; a port 0 ("any free port") and "" pass. A port taken
// between this check and the real listen is still refused then (exit 1).
func checkListenAddrs(addrs ...listenAddr) error {
	for _, a := range addrs {
		if a.addr == "" {
			continue
		}
		if _, port, err := net.SplitHostPort(a.addr); err != nil || port == "0" {
			continue // a malformed address is the configuration check's to name
		}
		var c io.Closer
		var err error
		if a.network == "udp" {
			c, err = net.ListenPacket("udp", a.addr)
		} else {
			c, err = net.Listen("tcp", a.addr)
		}
		if err != nil {
			why := err
			var oe *net.OpError
			if errors.As(err, &oe) && oe.Err != nil {
				why = oe.Err
			}
			if errors.Is(err, syscall.EADDRINUSE) {
				return usageError("%s: %s %s: address already in use (another process, or another dta, holds it)", a.name, a.network, a.addr)
			}
			return usageError("%s: %s %s: cannot listen: %v", a.name, a.network, a.addr, why)
		}
		c.Close()
	}
	return nil
}

// tree. "" (memory only) passes.
func checkDataDir(dir string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		return usageError("--data-dir (collector.data_dir): %s is not a directory", dir)
	case err == nil:
		if syscall.Access(dir, 2|1) != nil { // W_OK|X_OK: checkpoints and the lock are written there
			return usageError("--data-dir (collector.data_dir): %s: this user may not write in it", dir)
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return usageError("--data-dir (collector.data_dir): %v", err)
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if pi, err := os.Stat(parent); err != nil || !pi.IsDir() {
		return usageError("--data-dir (collector.data_dir): %s does not exist, nor does its parent %s (create the parent, or check the path)", dir, parent)
	}
	if syscall.Access(parent, 2|1) != nil { // W_OK|X_OK: it is created there
		return usageError("--data-dir (collector.data_dir): %s does not exist and this user may not create it in %s", dir, parent)
	}
	return nil
}
