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

	"github.com/dta-go/dta/wire/dta"
)

// xdpTestConfig skips a test that needs a veth pair where it cannot have
// one (outside CI: without root or iproute2; -short) and returns a short,
// small bench configuration.
func xdpTestConfig(t *testing.T) Config {
	t.Helper()
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
	return cfg
}

func TestRunXDPMeasuresBothTransportsInOneRun(t *testing.T) {
	cfg := xdpTestConfig(t)
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

func TestRunXDPQueuesSpreadsFlowsOverEveryQueue(t *testing.T) {
	cfg := xdpTestConfig(t)
	rep, err := RunXDPQueues(context.Background(), cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 {
		t.Fatalf("results %+v", rep.Results)
	}
	x := rep.Results[0]
	if x.Queues != 2 || len(x.PerQueue) != 2 {
		t.Fatalf("xdp: %d queues, per queue %+v", x.Queues, x.PerQueue)
	}
	var sum uint64
	for _, q := range x.PerQueue {
		if q.Packets == 0 || q.ThreadCPUSeconds <= 0 {
			t.Errorf("queue %d got nothing: %+v", q.Queue, q)
		}
		sum += q.Packets
	}
	if x.ReaderThreadCPUSeconds <= 0 || x.PerReaderThreadCPUSecond <= 0 {
		t.Errorf("reader threads not measured: %+v", x)
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "2 queue(s)") || !strings.Contains(b.String(), "M pkts/thread CPU s") {
		t.Errorf("table without the queues:\n%s", b.String())
	}
	if _, err := RunXDPQueues(context.Background(), cfg, 0); err == nil {
		t.Error("0 queues accepted")
	}
}

func TestSteerByKeyKeepsAFlowOnOneQueue(t *testing.T) {
	w, err := NewWorkload(dta.KeyWrite, 1, 1<<10, 1<<12)
	if err != nil {
		t.Fatal(err)
	}
	steer, err := steerByKey(w, 3)
	if err != nil {
		t.Fatal(err)
	}
	queueOf := map[uint32]int{}
	n := 0
	for q, idx := range steer {
		n += len(idx)
		for _, i := range idx {
			var dg dta.Datagram
			var r dta.Report
			if err := (dta.Decoder{}).Decode(w.Datagram(int(i)), &dg); err != nil {
				t.Fatal(err)
			}
			if err := dg.Next(&r); err != nil {
				t.Fatal(err)
			}
			if p, ok := queueOf[r.Key32()]; ok && p != q {
				t.Fatalf("key %d on queues %d and %d", r.Key32(), p, q)
			}
			queueOf[r.Key32()] = q
		}
	}
	if n != w.Datagrams() {
		t.Errorf("%d datagrams steered of %d", n, w.Datagrams())
	}
}
