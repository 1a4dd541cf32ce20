package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBadFlagsAreRefusedNamingTheFlag runs each command with a value an
// outside audit found accepted, crashing or hanging; each must be refused
// before any work starts, with exit code 2 and a message naming the flag.
func TestBadFlagsAreRefusedNamingTheFlag(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a NaN demo rate", []string{"up", "--demo", "--demo-rate", "NaN"}, "--demo-rate"},
		{"a demo rate too small to schedule", []string{"up", "--demo", "--demo-rate", "1e-300"}, "--demo-rate"},
		{"a demo rate without the demo", []string{"up", "--demo-rate", "5"}, "--demo-rate goes with --demo"},
		{"an empty XDP interface", []string{"up", "--xdp", ""}, "--xdp"},
		{"a responder address without the RoCEv2 sink", []string{"up", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--rdma", "127.0.0.1:4999"}, "--rdma goes with --sink roce"},
		{"INT reports on the DTA port", []string{"up", "--listen", "127.0.0.1:21001", "--int-listen", "127.0.0.1:21001"}, "translator.int_listen"},
		{"a Kafka broker on port 0", []string{"up", "--export-brokers", "kafka:0"}, "export.brokers"},
		{"a configuration file that is a device", []string{"up", "--config", "/dev/zero"}, "not a regular file"},
		{"an empty translator address", []string{"report", "keywrite", "--key", "1", "--value", "1", "--to", ""}, "--to"},
		{"a translator address with port 0", []string{"report", "keyincrement", "--key", "1", "--to", "127.0.0.1:0"}, "--to"},
		{"a generator rate too small to schedule", []string{"report", "gen", "counters", "--rate", "1e-9", "--count", "3"}, "--rate"},
		{"a NaN generator rate", []string{"report", "gen", "counters", "--rate", "NaN"}, "--rate"},
		{"an entry size for a stream without entries", []string{"report", "gen", "counters", "--entry-size", "18"}, "--entry-size"},
		{"a NaN INT rate", []string{"report", "int", "gen", "--rate", "NaN"}, "--rate"},
		{"an INT rate too small to schedule", []string{"report", "int", "gen", "--rate", "1e-300", "--count", "3"}, "--rate"},
		{"a node id above 32 bits", []string{"report", "int", "md", "--flow", "tcp,10.0.0.1:1,10.0.0.2:2", "--switches", "1,4294967296", "--latency", "1,1"}, "--switches"},
		{"more switches than an INT-MD stack holds", []string{"report", "int", "md", "--flow", "tcp,10.0.0.1:1,10.0.0.2:2", "--switches", "1,2,3,4,5,6,7,8,9,10", "--latency", "1,1,1,1,1,1,1,1,1,1"}, "--switches"},
		{"a negative count in a count-min sketch", []string{"report", "sketchmerge", "--key", "1=-5"}, "--kind countsketch"},
		{"direct keys that wrap past 2^32", []string{"report", "keywrite", "--direct", "--collectors", "127.0.0.1:4791", "--key", "4294967295", "--value", "1", "--keys", "5"}, "--keys"},
		{"a collector on port 0", []string{"translator", "--collector", "127.0.0.1:0"}, "port 0"},
		{"one collector under two names", []string{"translator", "--collector", "a=127.0.0.1:4791,b=127.0.0.1:4791"}, "named twice"},
		{"a poll wait beyond the collector's longest", []string{"query", "append", "--list", "1", "--wait", "1h"}, "--wait"},
		{"a negative sketch epoch", []string{"query", "sketchmerge", "--key", "1", "--epoch", "-2"}, "--epoch"},
		{"replicas with one collector", []string{"query", "stores", "--replicas", "-1"}, "--replicas"},
		{"more replicas than collectors", []string{"query", "keywrite", "--key", "1", "--server", "http://127.0.0.1:1,http://127.0.0.1:2", "--replicas", "3"}, "--replicas"},
		{"a CA file that is a device", []string{"query", "stores", "--ca-file", "/dev/zero", "--server", "https://127.0.0.1:1"}, "not a regular file"},
		{"an empty capture name", []string{"decode", "--pcap", ""}, "--pcap"},
		{"a capture port without a capture", []string{"decode", "--port", "5", "0105"}, "--port applies to --pcap"},
		{"the legacy DTA header for RoCEv2 input", []string{"decode", "--legacy", "--roce", "0105"}, "--legacy"},
		{"a capture that does not exist", []string{"decode", "--pcap", "/nonexistent/x.pcap"}, "--pcap"},
		{"an empty token file, which would leave the API open", []string{"collector", "--auth-token-file", ""}, "--auth-token-file: empty"},
		{"an empty client token file", []string{"query", "stores", "--token-file", ""}, "--token-file: empty"},
		{"an empty store name", []string{"query", "keywrite", "--key", "1", "--store", ""}, "--store: empty"},
		{"an empty epoch", []string{"query", "keywrite", "--key", "1", "--at", ""}, "--at: empty"},
		{"an epoch that is no number or time", []string{"query", "keywrite", "--key", "1", "--at", "yesterday"}, "--at:"},
		{"a clock time past midnight", []string{"query", "stores", "--at", "25:99"}, "--at:"},
		{"an epoch that is no time, several collectors", []string{"query", "keywrite", "--key", "1", "--server", "http://127.0.0.1:1,http://127.0.0.1:2", "--at", "-5"}, "--at:"},
		{"an empty data directory", []string{"up", "--data-dir", ""}, "--data-dir: empty"},
		{"an empty configuration file name", []string{"up", "--config", ""}, "--config: empty"},
		{"INT reports on a host name", []string{"up", "--int-listen", "localhost:21060"}, "translator.int_listen"},
		{"a data directory that is a file", []string{"up", "--data-dir", "/dev/null"}, "--data-dir"},
		{"a data directory under a path that does not exist", []string{"up", "--data-dir", "/nonexistent/x/y"}, "--data-dir"},
		{"a queue with a flow's latency", []string{"query", "int", "latency", "--flow", "tcp,10.0.0.1:1,10.0.0.2:2", "--queue", "3"}, "--queue goes with --switch"},
		{"no drop entries to read", []string{"query", "int", "drops", "--limit", "0"}, "--limit"},
		{"an unknown command", []string{"bogus"}, `unknown command "bogus"`},
		{"an unknown query", []string{"query", "bogus"}, `unknown command "bogus" for "dta query"`},
		{"an unknown INT query", []string{"query", "int", "bogus"}, `unknown command "bogus"`},
		{"a missing argument", []string{"query", "rule"}, "accepts 1 arg"},
		{"the bench's responder process started by hand", []string{"bench", "responder"}, "not by hand"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var out, errb bytes.Buffer
			code := Run(ctx, tc.args, strings.NewReader(""), &out, &errb)
			if code != 2 || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("dta %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), code, lastLine(errb.String()), tc.want)
			}
		})
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func TestStoresLargerThanTheMachineAreRefusedBeforeAnyIsMapped(t *testing.T) {
	if _, ok := machineMemory(); !ok {
		t.Skip("this machine's memory is not known (no /proc/meminfo)")
	}
	var b strings.Builder
	b.WriteString("stores:\n")
	for i := 1; i <= 32; i++ { // 32 × 32 GiB: beyond any machine this runs on
		fmt.Fprintf(&b, "  - {name: s%d, id: %d, primitive: keywrite, memory: 32GiB}\n", i, i)
	}
	cfg := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"up", "collector"} {
		var out, errb bytes.Buffer
		code := Run(context.Background(), []string{cmd, "--config", cfg, "--http", "127.0.0.1:0"}, nil, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), "more than this machine's") || strings.Contains(errb.String(), "region mapped") {
			t.Errorf("dta %s with 1 TiB of stores: exit %d, %q", cmd, code, lastLine(errb.String()))
		}
	}
}

func TestDecodeOfAnIdleOrEndlessStdinStopsOnASignal(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		input func(w *io.PipeWriter)
	}{
		{"hex lines from an idle pipe", []string{"decode"}, func(*io.PipeWriter) {}},
		{"hex lines without end", []string{"decode"}, func(w *io.PipeWriter) {
			for {
				if _, err := w.Write([]byte("0105 # a datagram too short to decode\n")); err != nil {
					return
				}
			}
		}},
		{"a capture from an idle pipe", []string{"decode", "--pcap", "-"}, func(*io.PipeWriter) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, pw := io.Pipe()
			defer pw.Close()
			go tc.input(pw)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel) // the signal
			done := make(chan int, 1)
			go func() {
				var out, errb bytes.Buffer
				done <- Run(ctx, tc.args, pr, &out, &errb)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("dta decode went on reading after the signal")
			}
			pr.CloseWithError(io.ErrClosedPipe) // end the input goroutine
		})
	}
}
