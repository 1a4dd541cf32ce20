package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCollectorXDPFailureStopsItUnlessItMayFallBackToUDP: an AF_XDP path
// that cannot be set up (here: no such interface) is an error naming the
// interface, unless collector.xdp.fallback is udp: then the collector
// serves on its UDP sockets and its start-up line does not claim AF_XDP.
func TestCollectorXDPFailureStopsItUnlessItMayFallBackToUDP(t *testing.T) {
	const iface = "dtanoif0"
	var out, errw bytes.Buffer
	code := Run(context.Background(), []string{"collector", "--config", smallConfig(t), "--rdma", freeUDPAddr(t), "--http", "127.0.0.1:0", "--xdp", iface}, nil, &out, &errw)
	if code == 0 || !strings.Contains(errw.String(), iface) {
		t.Fatalf("exit %d, stderr %q: want a failure naming %s", code, errw.String(), iface)
	}

	cfg := filepath.Join(t.TempDir(), "fallback.yaml")
	small, err := os.ReadFile(smallConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	fb := strings.Replace(string(small), "collector:\n", "collector:\n  transport: xdp\n  xdp:\n    interface: "+iface+"\n    fallback: udp\n", 1)
	if err := os.WriteFile(cfg, []byte(fb), 0o644); err != nil {
		t.Fatal(err)
	}
	m, stop := startCmd(t, regexp.MustCompile(`dta collector: RoCEv2 on udp (\S+), queries on .*`), "collector", "--config", cfg, "--rdma", freeUDPAddr(t), "--http", "127.0.0.1:0")
	defer stop()
	if strings.Contains(m[0], "AF_XDP") {
		t.Errorf("start-up line %q claims AF_XDP after the fallback", m[0])
	}
}

// freeUDPAddr returns a loopback address with a UDP port free a moment ago
// (AF_XDP steers a fixed port, so port 0 is refused).
func freeUDPAddr(t *testing.T) string {
	t.Helper()
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().String()
}
