package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An address another socket already holds is refused before anything
// starts — no store mapped, no "serving" line — with exit 2 naming the flag
// or key, for every address dta up, dta collector and dta translator listen
// on; so is a data directory this user may not write in.
func TestAHeldPortIsRefusedBeforeAnythingStarts(t *testing.T) {
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	u, h := udp.LocalAddr().String(), tcp.Addr().String()
	cfg := smallConfig(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"dta up's report port", []string{"up", "--config", cfg, "--listen", u, "--http", "127.0.0.1:0"}, "--listen (translator.listen): udp " + u + ": address already in use"},
		{"dta up's INT port", []string{"up", "--config", intConfig(t), "--listen", "127.0.0.1:0", "--int-listen", u, "--http", "127.0.0.1:0"}, "--int-listen (translator.int_listen): udp " + u},
		{"dta up's HTTP port", []string{"up", "--config", cfg, "--listen", "127.0.0.1:0", "--http", h}, "--http (collector.http): tcp " + h},
		{"dta up's responder port", []string{"up", "--config", cfg, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--sink", "roce", "--rdma", u}, "--rdma: udp " + u},
		{"the collector's RoCEv2 port", []string{"collector", "--config", cfg, "--rdma", u, "--http", "127.0.0.1:0"}, "--rdma (collector.rdma): udp " + u},
		{"the collector's HTTP port", []string{"collector", "--config", cfg, "--rdma", "127.0.0.1:0", "--http", h}, "--http (collector.http): tcp " + h},
		{"the translator's report port", []string{"translator", "--config", cfg, "--collector", "127.0.0.1:9", "--listen", u, "--http", "127.0.0.1:0"}, "--listen (translator.listen): udp " + u},
		{"the translator's HTTP port", []string{"translator", "--config", cfg, "--collector", "127.0.0.1:9", "--listen", "127.0.0.1:0", "--http", h}, "--http (translator.http): tcp " + h},
		{"the translator's RoCEv2 source address", []string{"translator", "--config", cfg, "--collector", "127.0.0.1:9", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--rdma-local", u}, "--rdma-local (translator.rdma_local): udp " + u},
		{"an address the host does not have", []string{"collector", "--config", cfg, "--rdma", "192.0.2.1:4791", "--http", "127.0.0.1:0"}, "--rdma (collector.rdma): udp 192.0.2.1:4791: cannot listen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var out, errb bytes.Buffer
			code := Run(ctx, tc.args, strings.NewReader(""), &out, &errb)
			if code != 2 || !strings.Contains(errb.String(), tc.want) || strings.Contains(errb.String(), "mapped") || strings.Contains(out.String(), "serving") {
				t.Errorf("dta %s: exit %d, stdout %q, stderr %q; want exit 2 and %q before anything starts", strings.Join(tc.args, " "), code, out.String(), lastLine(errb.String()), tc.want)
			}
		})
	}
	if os.Geteuid() == 0 {
		return // root may write anywhere
	}
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"collector", "--config", cfg, "--data-dir", ro, "--rdma", "127.0.0.1:0", "--http", "127.0.0.1:0"}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "may not write") {
		t.Errorf("a read-only data directory: exit %d, %q", code, lastLine(errb.String()))
	}
}
