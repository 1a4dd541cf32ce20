package cli

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A collector killed (SIGKILL: no DREQ, nothing said) while its translator
// sends nothing is found by the translator's RoCEv2 keep-alive: the
// collector is reported down (dta_fanout_collector_up 0, /healthz degraded)
// within a few seconds, before any report is lost to it, and the other
// collector stays up.
func TestATranslatorFindsAnIdleCollectorThatWasKilled(t *testing.T) {
	bin := buildDTA(t)
	cfg := smallConfig(t)
	var rdma []string
	var procs []*process
	for range 2 {
		m, p := startProcess(t, bin, collectorReady, "collector", "--config", cfg, "--rdma", "127.0.0.1:0", "--http", "127.0.0.1:0")
		rdma, procs = append(rdma, m[1]), append(procs, p)
	}
	tr, _ := startCmd(t, translatorMetricsReady, "translator", "--config", cfg, "--collector", "c1="+rdma[0]+",c2="+rdma[1],
		"--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	base := tr[2]
	up := func(name string) float64 { return metric(t, base, "", `dta_fanout_collector_up{collector="`+name+`"}`) }
	eventually(t, "both collectors are up", func() error {
		if up("c1") != 1 || up("c2") != 1 {
			return fmt.Errorf("c1 %v, c2 %v", up("c1"), up("c2"))
		}
		return nil
	})
	procs[1].stop(t, syscall.SIGKILL) // its exit status is a kill's
	killed := time.Now()
	for up("c2") != 0 {
		if time.Since(killed) > 15*time.Second {
			t.Fatal("15 s after c2 was killed, the idle translator still says it is up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("c2 found down %v after it was killed", time.Since(killed).Round(time.Millisecond))
	if up("c1") != 1 {
		t.Error("c1 is reported down too")
	}
	if _, body := call(t, nil, "GET", base+"/healthz", ""); !strings.Contains(body, "degraded") || !strings.Contains(body, "c2") {
		t.Errorf("/healthz does not say degraded, c2: %s", body)
	}
	if n := metric(t, base, "", `dta_rdma_requester_ops_lost_total{collector="c2"}`); n != 0 {
		t.Errorf("%v packets counted lost to c2, which was sent no report (a keep-alive in flight is no op lost)", n)
	}
}

// dta up --sink roce stopped cleanly (SIGTERM) ends its RoCEv2 connection
// before its collector stops: no "connection lost" warning, no reconnect.
func TestACleanStopOfUpOverRoCEWarnsOfNothing(t *testing.T) {
	bin := buildDTA(t)
	_, p := startProcess(t, bin, upReady, "up", "--config", smallConfig(t), "--sink", "roce", "--demo",
		"--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	time.Sleep(300 * time.Millisecond) // the demo's writes flow
	if err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("dta up: %v\n%s", err, p.stderr)
	}
	if s := p.stderr.String(); strings.Contains(s, "connection lost") || strings.Contains(s, "level=WARN") {
		t.Errorf("a clean stop logged a warning:\n%s", s)
	}
}
