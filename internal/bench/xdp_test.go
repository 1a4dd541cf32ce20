//go:build linux

package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestRunXDPMeasuresBothTransportsInOneRun(t *testing.T) {
	if testing.Short() {
		t.Skip("sets up a veth pair and runs the pipeline")
	}
	if _, err := exec.LookPath("ip"); os.Geteuid() != 0 || err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the AF_XDP bench test needs root and iproute2 in CI")
		}
		t.Skip("needs root and iproute2")
	}
	cfg := DefaultConfig()
	cfg.Duration, cfg.Warmup = 300*time.Millisecond, 100*time.Millisecond
	cfg.Keys, cfg.Pool, cfg.Memory = 1<<12, 1<<12, 8<<20
	cfg.Region.Prefault = false
	rep, err := RunXDP(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 || rep.Results[0].Transport != TransportXDP || rep.Results[1].Transport != TransportUDP {
		t.Fatalf("results %+v", rep.Results)
	}
	for _, r := range rep.Results {
		if r.Stored == 0 || r.Accepted <= 0 || r.PerCPUSecond <= 0 || r.PerReaderCPUSecond <= 0 {
			t.Errorf("%s: nothing measured: %+v", r.Transport, r)
		}
		if r.Stored > r.Sent {
			t.Errorf("%s: %d reports stored of %d sent", r.Transport, r.Stored, r.Sent)
		}
	}
	if rep.PerCPUSecond <= 0 || rep.Accepted <= 0 {
		t.Errorf("ratios not computed: %+v", rep)
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "xdp/udp") {
		t.Errorf("table without the ratio line:\n%s", b.String())
	}
	if out, _ := exec.Command("ip", "link", "show").Output(); strings.Contains(string(out), fmt.Sprintf("dbxa%d:", os.Getpid()%100000)) {
		t.Errorf("the bench left its veth behind:\n%s", out)
	}
}
