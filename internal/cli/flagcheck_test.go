package cli

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestFlagChecksNameTheFlagAndExitWithTwo(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	os.WriteFile(big, make([]byte, 100), 0o600)
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"a NaN rate", checkFloat("rate", math.NaN(), 0, 1e9)},
		{"an infinite rate", checkFloat("rate", math.Inf(1), 0, 1e9)},
		{"a rate below the range", checkFloat("rate", -1, 0, 1e9)},
		{"a count above the range", checkInt("workers", 99999999999, 1, 1024)},
		{"a count below the range", checkInt[uint64]("keys", 0, 1, 1<<32)},
		{"a device for a file", func() error { _, err := readFlagFile("config", "/dev/zero", 1<<20); return err }()},
		{"a directory for a file", func() error { _, err := readFlagFile("config", dir, 1<<20); return err }()},
		{"a FIFO for a file", func() error {
			fifo := filepath.Join(dir, "fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				return err
			}
			_, err := readFlagFile("config", fifo, 1<<20)
			return err
		}()},
		{"a missing file", func() error { _, err := readFlagFile("config", filepath.Join(dir, "nope"), 1<<20); return err }()},
		{"an empty address", checkHostPort("to", "")},
		{"an address without a host", checkHostPort("to", ":40040")},
		{"an address with port 0", checkHostPort("to", "127.0.0.1:0")},
		{"an address with a port above 65535", checkHostPort("to", "127.0.0.1:99999")},
		{"an address without a port", checkHostPort("to", "127.0.0.1")},
		{"a file above the limit", func() error { _, err := readFlagFile("config", big, 10); return err }()},
	} {
		var ee *exitError
		if tc.err == nil || !errors.As(tc.err, &ee) || ee.code != 2 || !strings.HasPrefix(tc.err.Error(), "--") {
			t.Errorf("%s: %v, want a usage error naming the flag", tc.name, tc.err)
		}
	}
	if err := checkHostPort("to", "localhost:40040"); err != nil {
		t.Errorf("a host name and port: %v", err)
	}
	if err := checkFloat("rate", 5, 0, 1e9); err != nil {
		t.Errorf("a rate in range: %v", err)
	}
	if b, err := readFlagFile("config", big, 100); err != nil || len(b) != 100 {
		t.Errorf("a file at the limit: %d bytes, %v", len(b), err)
	}
}
