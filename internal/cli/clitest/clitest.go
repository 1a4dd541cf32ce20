// Package clitest runs dta commands inside a test's process, as the binary
// would run them (cli.Run), for the tests of other packages that need a
// running system: the web dashboard in a browser, the Grafana dashboard
// against /metrics. Only tests import it; it must not grow anything a running
// system would use.
package clitest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/cli"
)

// The lines the commands print once they serve, with the addresses as
// submatches.
var (
	// UpReady matches dta up: the UDP report address, the HTTP base URL.
	UpReady = regexp.MustCompile(`reports on udp (\S+), queries on (http://\S+) `)
	// CollectorReady matches dta collector: the RoCEv2 address, the HTTP base URL.
	CollectorReady = regexp.MustCompile(`RoCEv2 on udp (\S+), queries on (http://\S+),`)
	// TranslatorReady matches dta translator: the UDP report address.
	TranslatorReady = regexp.MustCompile(`reports on udp (\S+), RoCEv2 to`)
)

// Config writes a configuration with unit-test sized stores, one per
// primitive (the Append store with lists lists), those INT input maps into
// and one a rule (slow-paths: paths whose hops sum above 1000) appends to,
// and returns its path.
func Config(tb testing.TB, lists int) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "dta.yaml")
	cfg := fmt.Sprintf(`
collector:
  prefault: false
translator:
  readers: 1
  recv_buffer: 4MiB
stores:
  - {name: keywrite, id: 1, primitive: keywrite, default: true, slots: 4096, value_size: 4, redundancy: 4}
  - {name: keyincrement, id: 2, primitive: keyincrement, default: true, slots: 4096, redundancy: 4}
  - {name: postcard, id: 3, primitive: postcard, default: true, chunks: 1024, hops: 5, redundancy: 2}
  - {name: append, id: 4, primitive: append, default: true, lists: %d, capacity: 256, entry_size: 4, batch: 4}
  - {name: int-paths, id: 5, primitive: keywrite, slots: 1024, value_size: 20, redundancy: 2}
  - {name: int-postcards, id: 7, primitive: postcard, chunks: 1024, hops: 8, redundancy: 2}
  - {name: int-counters, id: 8, primitive: keyincrement, slots: 1024, redundancy: 2}
  - {name: int-drops, id: 9, primitive: append, lists: 4, capacity: 64, entry_size: 48, batch: 4}
  - {name: slow-paths, id: 10, primitive: append, lists: 4, capacity: 256, entry_size: 22, batch: 4}
rules:
  - {name: slow-paths, source: postcard, aggregate: sum, op: ">", threshold: 1000,
     action: {type: append, store: slow-paths, list_by_key: true}}
`, lists)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

// Start runs `dta args...` until the test ends (then it cancels the command
// and expects exit status 0 within 15 s) and returns the submatches of the
// first line of its output that ready matches.
func Start(tb testing.TB, ready *regexp.Regexp, args ...string) []string {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() { done <- cli.Run(ctx, args, nil, pw, io.Discard); pw.Close() }()
	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := ready.FindStringSubmatch(sc.Text()); m != nil {
				found <- m
				break
			}
		}
		io.Copy(io.Discard, pr)
	}()
	tb.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				tb.Errorf("dta %s exited with %d", args[0], code)
			}
		case <-time.After(15 * time.Second):
			tb.Errorf("dta %s did not stop within 15s", args[0])
		}
	})
	select {
	case m := <-found:
		return m
	case code := <-done:
		tb.Fatalf("dta %v exited with %d before it was ready", args, code)
	case <-time.After(20 * time.Second):
		tb.Fatalf("dta %v printed no ready line", args)
	}
	return nil
}

// Up runs dta up with Config(tb, lists) on loopback ports the kernel picks,
// plus extra flags, and returns the UDP report address and the HTTP base URL.
func Up(tb testing.TB, lists int, extra ...string) (udpAddr, base string) {
	tb.Helper()
	args := append([]string{"up", "--config", Config(tb, lists), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"}, extra...)
	m := Start(tb, UpReady, args...)
	return m[1], m[2]
}
