package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dta-go/dta/internal/bench"
)

func runBenchArgs(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), append([]string{"bench"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestBenchRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--duration", "0s"},
		{"--duration", "61s"},
		{"--mode", "multi"},
		{"--primitive", "sketch"},
		{"--sink", "verbs"},
		{"--repeat", "0"},
		{"--memory", "lots"},
		{"-o", "yaml"},
		{"--queues", "2"}, // UDP bench: --readers
		{"--transport", "xdp", "--queues", "0"},
		{"--transport", "xdp", "--queues", "17"},
		{"--sink", "roce", "--responder", "nic"},
		{"--sink", "roce", "--responder-wait", "spin"},
		{"--sink", "roce", "--responder-poll", "2ms"},
		{"--sink", "roce", "--responder-wait", "poller", "--responder-poll", "10us"},
		{"--sink", "roce", "--responder-pause", "2ms"},
		{"--sink", "roce", "--responder-pause", "150us,100us"},
		{"--sink", "roce", "--responder-pause", "150us,20ms"},
		{"--sink", "roce", "--responder-pause", "soon"},
		{"--sink", "roce", "--responder-pause", "0,1ms"}, // a limit without a pause
		{"--sink", "roce", "--responder-wait", "poller", "--responder-pause", "150us"},
		{"--responder-pause", "150us"}, // the local sink has no responder
		{"--responder", "thread"},      // nor a place for it to run
		{"--rate", "NaN"},
		{"--rate", "1e-300"},
		{"--duration", "1ns"},
		{"--data-dir", "/dev/null"},
		{"--checkpoint-interval", "1s"}, // without --data-dir
		{"--data-dir", os.TempDir(), "--checkpoint-interval", "0s"},
		{"--json", os.TempDir()},
		{"--json", "/nonexistent/x.json"},
		{"--cpuprofile", "/nonexistent/cpu.out"},
	} {
		if code, _, errs := runBenchArgs(t, args...); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, errs)
		}
	}
}

func TestBenchPoolHoldsEveryFlow(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		pool int
	}{
		{"the default pool is 2^20 reports", nil, 1 << 20},
		{"fewer keys keep the 2^20 pool", []string{"--keys", "1000"}, 1 << 20},
		{"more keys than 2^20 get a pool as large", []string{"--keys", "16777216"}, 1 << 24},
		{"an explicit pool is kept", []string{"--keys", "16777216", "--pool", "4096"}, 4096},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := &benchOptions{cfg: bench.DefaultConfig()}
			if err := benchCmd(o).ParseFlags(tt.args); err != nil {
				t.Fatal(err)
			}
			if err := o.complete(); err != nil {
				t.Fatal(err)
			}
			if o.cfg.Pool != tt.pool {
				t.Errorf("pool %d, want %d", o.cfg.Pool, tt.pool)
			}
		})
	}
}

func TestBenchRunsAndWritesJSON(t *testing.T) {
	small := []string{"--primitive", "keywrite", "--mode", "multi/recvmmsg", "--duration", "100ms", "--warmup", "10ms",
		"--memory", "1MiB", "--keys", "1024", "--hugepages", "off", "--recv-buffer", "4MiB", "--rate", "100000", "-q"}
	file := filepath.Join(t.TempDir(), "bench.json")
	code, out, errs := runBenchArgs(t, append(small, "--json", file)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, s := range []string{"keywrite", "multi/recvmmsg", "baseline", "DTA/baseline", "receive-only", "DTA/receive-only"} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Results []struct {
			Collector string  `json:"collector"`
			Accepted  float64 `json:"accepted_per_s"`
		} `json:"results"`
		Ratios []struct {
			PerCore float64 `json:"per_cpu_second"`
		} `json:"ratios"`
	}
	if err := json.Unmarshal(b, &rep); err != nil || len(rep.Results) != 3 || len(rep.Ratios) != 1 || rep.Results[0].Accepted <= 0 {
		t.Errorf("JSON %v: %s", err, b)
	}
}

func TestBenchOverRoCEReportsTheResponderApart(t *testing.T) {
	for _, c := range []struct {
		args    []string
		sink    string
		process bool
	}{
		{nil, "roce", true}, // the default: a responder process of its own
		{[]string{"--responder", "thread"}, "roce/thread", false},
		{[]string{"--responder", "process", "--responder-wait", "poller"}, "roce", true},
		{[]string{"--responder", "thread", "--responder-wait", "poller"}, "roce/thread", false},
	} {
		t.Run(strings.Join(append([]string{"default"}, c.args...), " "), func(t *testing.T) {
			args := append([]string{"--sink", "roce", "--primitive", "keywrite", "--mode", "multi/recvmmsg",
				"--duration", "100ms", "--warmup", "10ms", "--memory", "1MiB", "--keys", "1024", "--hugepages", "off",
				"--recv-buffer", "4MiB", "--rate", "20000", "--ceiling=false", "-q", "-o", "json"}, c.args...)
			code, out, errs := runBenchArgs(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var rep struct {
				Results []struct {
					Collector  string  `json:"collector"`
					Sink       string  `json:"sink"`
					Accepted   float64 `json:"accepted_per_s"`
					CPUSeconds float64 `json:"cpu_seconds"`
					Remote     *struct {
						Process      bool    `json:"responder_process"`
						ResponderCPU float64 `json:"responder_cpu_s_per_million_reports"`
						ResponderSec float64 `json:"responder_cpu_seconds"`
						OpsPerSec    float64 `json:"responder_ops_per_s"`
						OpsPerReport float64 `json:"rdma_ops_per_report"`
						Sent         uint64  `json:"rdma_ops_sent"`
						Applied      uint64  `json:"rdma_ops_applied"`
					} `json:"remote"`
				} `json:"results"`
				Ratios []struct{} `json:"ratios"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Results) != 2 || len(rep.Ratios) != 1 {
				t.Fatalf("JSON %v: %s", err, out)
			}
			d, b := rep.Results[0], rep.Results[1]
			if d.Collector != "dta" || d.Sink != c.sink || d.Accepted <= 0 || d.Remote == nil {
				t.Fatalf("DTA over RoCE: %s", out)
			}
			if r := d.Remote; r.Process != c.process || r.ResponderCPU <= 0 || r.OpsPerSec <= 0 || r.OpsPerReport != 2 || r.Sent == 0 || r.Applied != r.Sent {
				t.Errorf("responder figures %+v", *r)
			}
			if r := d.Remote; r.ResponderSec >= d.CPUSeconds {
				t.Errorf("responder %.4f CPU s, DTA in all %.4f: DTA's CPU must hold the responder's and the translator's", r.ResponderSec, d.CPUSeconds)
			}
			if b.Collector != "baseline" || b.Sink != "" || b.Remote != nil || b.Accepted <= 0 {
				t.Errorf("the baseline changed with the sink: %+v", b)
			}
		})
	}
}
