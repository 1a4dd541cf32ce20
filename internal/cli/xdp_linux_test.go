package cli

import (
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/vethtest"
)

// dialInNS opens a UDP socket in v's namespace connected to addr.
func dialInNS(t *testing.T, v *vethtest.Pair, addr string) net.Conn {
	t.Helper()
	var c net.Conn
	var err error
	v.InNS(t, func() { c, err = net.Dial("udp", addr) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestUpWithTransportXDPAnswersReportsFromAnotherNamespace(t *testing.T) {
	v := vethtest.New(t, vethtest.RangeCLI, 1)
	host, hostIP := v.Host, v.HostAddr.String()
	bin := buildDTA(t)
	upXDPReady := regexp.MustCompile(`reports on udp (\S+) via AF_XDP on ` + host + ` \((?:native|generic)\S* mode\), queries on (http://\S+) `)
	m, p := startProcess(t, bin, upXDPReady, "up", "--config", intConfig(t), "--xdp", host, "--listen", hostIP+":40040", "--http", "127.0.0.1:0",
		"--int-listen", hostIP+":40050")
	base := m[2]
	if !v.Attached(t) {
		t.Fatalf("dta up attached no XDP program to %s:\n%s", host, p.stderr)
	}
	conn := dialInNS(t, v, hostIP+":40040")
	// Key-Write, prototype format: key 7 → 0xCAFEF00D, then 0xBEEF.
	for _, r := range [][]byte{
		{1, 0, 0, 2, 0, 0, 0, 7, 0xCA, 0xFE, 0xF0, 0x0D},
		{1, 1, 0, 2, 0, 0, 0, 7, 0x00, 0x00, 0xBE, 0xEF},
	} {
		if _, err := conn.Write(r); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	conn.Write([]byte{1, 0}) // truncated report: counted by the translator, not a crash
	eventually(t, "the collector answers the key written through AF_XDP", func() error {
		if st, v := keyWriteStatus(t, base, 7); st != "found" || v != 0xBEEF {
			return fmt.Errorf("got %s %#x", st, v)
		}
		return nil
	})
	// The truncated report left after the second: the query above does not
	// say the reader has taken it yet (a loaded machine saw 2 here once).
	eventually(t, "the AF_XDP reader counts all three packets", func() error {
		if got := metric(t, base, "", "dta_xdp_packets_total"); got != 3 {
			return fmt.Errorf("dta_xdp_packets_total = %v, want 3\n%s", got, p.stderr)
		}
		return nil
	})
	// INT reports come through the AF_XDP readers too, and the INT input's
	// counters are exported as with its own sockets.
	intConn := dialInNS(t, v, hostIP+":40050")
	if _, err := intConn.Write(packet(t, intBadMD)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the INT packet through AF_XDP is counted by the INT input", func() error {
		if got := metric(t, base, "", `dta_int_malformed_total{reason="md_length"}`); got != 1 {
			return fmt.Errorf("dta_int_malformed_total{reason=\"md_length\"} = %v, want 1", got)
		}
		return nil
	})
	if err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("dta up: %v\n%s", err, p.stderr)
	}
	if v.Attached(t) {
		t.Errorf("XDP program still attached to %s after dta up stopped", host)
	}
}

func TestBenchTransportFlag(t *testing.T) {
	if code, _, errs := runBenchArgs(t, "--transport", "dpdk"); code != 2 || !strings.Contains(errs, "--transport") {
		t.Errorf("--transport dpdk: exit %d (%s), want 2 naming the flag", code, errs)
	}
	if os.Geteuid() != 0 || testing.Short() {
		t.Skip("the xdp run needs root")
	}
	code, out, errs := runBenchArgs(t, "--transport", "xdp", "--duration", "300ms", "--warmup", "100ms", "--memory", "8MiB",
		"--keys", "4096", "--pool", "4096", "--prefault=false", "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"native/copy", "recvmmsg", "xdp/udp", "M rep/CPU s"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestTranslatorOverTwoCollectorsReceivesThroughXDP runs dta translator with
// --xdp in front of two dta collector processes: the reports that arrive
// through AF_XDP reach their owners, and the translator exports the AF_XDP
// counters as the one-collector translator does.
func TestTranslatorOverTwoCollectorsReceivesThroughXDP(t *testing.T) {
	v := vethtest.New(t, vethtest.RangeCLI, 1)
	host, hostIP := v.Host, v.HostAddr.String()
	bin := buildDTA(t)
	cfg := smallConfig(t)
	var rdma, bases []string
	for range 2 {
		m, _ := startProcess(t, bin, collectorReady, "collector", "--config", cfg, "--rdma", "127.0.0.1:0", "--http", "127.0.0.1:0")
		rdma, bases = append(rdma, m[1]), append(bases, m[2])
	}
	m, p := startProcess(t, bin, regexp.MustCompile(`reports on udp (\S+) via AF_XDP on `+host+` \((?:native|generic)\S* mode\), RoCEv2 to .* metrics on (http://\S+)`), "translator", "--config", cfg,
		"--collector", strings.Join(rdma, ","), "--xdp", host, "--listen", hostIP+":40040", "--http", "127.0.0.1:0")
	trHTTP := m[2]
	conn := dialInNS(t, v, hostIP+":40040")
	const keys = 20
	for k := byte(1); k <= keys; k++ {
		if _, err := conn.Write([]byte{1, k, 0, 2, 0, 0, 0, k, 0, 0, 0, k + 100}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	eventually(t, "every key is on one of the two collectors", func() error {
		for k := uint32(1); k <= keys; k++ {
			found := 0
			for _, b := range bases {
				if st, v := keyWriteStatus(t, b, k); st == "found" && v == k+100 {
					found++
				}
			}
			if found != 1 {
				return fmt.Errorf("key %d found on %d collectors", k, found)
			}
		}
		return nil
	})
	if got := metric(t, trHTTP, "", "dta_xdp_packets_total"); got != keys {
		t.Errorf("dta_xdp_packets_total = %v, want %d\n%s", got, keys, p.stderr)
	}
}

// TestCollectorWithXDPTakesATranslatorsRequestsFromAnotherNamespace runs
// the whole split deployment across a veth pair: `dta collector --xdp` on
// the host end, `dta translator` in the other namespace (started with ip
// netns exec), reports sent to the translator there. Every report's value
// is queried back from the collector, its AF_XDP path counted the RoCEv2
// requests, and the program is gone once the collector stops, killed
// (SIGKILL) or not; a collector started after a killed one attaches again.
func TestCollectorWithXDPTakesATranslatorsRequestsFromAnotherNamespace(t *testing.T) {
	v := vethtest.New(t, vethtest.RangeCLI, 1)
	ns, host, hostIP, peerIP := v.NS, v.Host, v.HostAddr.String(), v.PeerAddr.String()
	bin := buildDTA(t)
	cfg := smallConfig(t)
	m, col := startProcess(t, bin, regexp.MustCompile(`RoCEv2 on udp (\S+), queries on (http://\S+),.*requests via AF_XDP on `+host+` \((?:native|generic)/\S+ mode\), responses on its TX rings`),
		"collector", "--config", cfg, "--rdma", hostIP+":4791", "--http", "127.0.0.1:0", "--xdp", host)
	base := m[2]
	if !v.Attached(t) {
		t.Fatalf("no XDP program on %s while the collector runs", host)
	}
	startProcess(t, "ip", translatorReady, "netns", "exec", ns, bin, "translator", "--config", cfg,
		"--collector", hostIP+":4791", "--listen", peerIP+":40040", "--http", "127.0.0.1:0")
	conn := dialInNS(t, v, peerIP+":40040")
	const keys = 20
	for k := byte(1); k <= keys; k++ {
		if _, err := conn.Write([]byte{1, k, 0, 2, 0, 0, 0, k, 0, 0, 0, k + 100}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	eventually(t, "every key is on the collector", func() error {
		for k := uint32(1); k <= keys; k++ {
			if st, v := keyWriteStatus(t, base, k); st != "found" || v != k+100 {
				return fmt.Errorf("key %d: %s %d", k, st, v)
			}
		}
		return nil
	})
	// The CM handshake, the advertisement's ACKs and the WRITEs all came
	// through AF_XDP; the UDP socket took none.
	if got := metric(t, base, "", "dta_xdp_packets_total"); got < 2*keys {
		t.Errorf("dta_xdp_packets_total = %v, want at least the %d WRITEs\n%s", got, 2*keys, col.stderr)
	}
	if x, all := metric(t, base, "", "dta_xdp_packets_total"), metric(t, base, "", "dta_rdma_responder_packets_total"); x != all {
		t.Errorf("dta_xdp_packets_total = %v, dta_rdma_responder_packets_total = %v: want every request through AF_XDP", x, all)
	}
	// And the responses left on the AF_XDP TX ring (collector.xdp.tx_frames'
	// default), none through the UDP socket for want of a frame.
	if got := metric(t, base, "", "dta_xdp_tx_frames_total"); got < 1 {
		t.Errorf("dta_xdp_tx_frames_total = %v, want the ACKs of the WRITEs\n%s", got, col.stderr)
	}
	if got := metric(t, base, "", "dta_xdp_tx_kick_seconds_total"); !(got > 0) {
		t.Errorf("dta_xdp_tx_kick_seconds_total = %v, want the time of the kicks that sent them\n%s", got, col.stderr)
	}
	if got := metric(t, base, "", "dta_xdp_tx_full_total"); got != 0 {
		t.Errorf("dta_xdp_tx_full_total = %v", got)
	}
	if err := col.stop(t, syscall.SIGTERM); err != nil {
		t.Errorf("collector: %v\n%s", err, col.stderr)
	}
	if v.Attached(t) {
		t.Errorf("the XDP program is still on %s after the collector stopped", host)
	}
	// A collector killed outright leaves nothing attached either, and one
	// started after it attaches again.
	ready := regexp.MustCompile(`requests via AF_XDP on ` + host)
	for _, sig := range []os.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		_, c := startProcess(t, bin, ready, "collector", "--config", cfg, "--rdma", hostIP+":4791", "--http", "127.0.0.1:0", "--xdp", host)
		c.stop(t, sig)
		eventually(t, "the XDP program is gone after "+sig.String(), func() error {
			if v.Attached(t) {
				return fmt.Errorf("still attached to %s", host)
			}
			return nil
		})
	}
}

// TestBenchResponderPathFlag: --responder-path takes loopback, veth, xdp or xdp-rx,
// only with --sink roce and the responder in a process of its own; as root,
// a short xdp run prints the responder's line with the softirq figure.
func TestBenchResponderPathFlag(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"an unknown path", []string{"--sink", "roce", "--responder-path", "wire"}},
		{"a path with the local sink", []string{"--responder-path", "xdp"}},
		{"a path with the responder thread", []string{"--sink", "roce", "--responder", "thread", "--responder-path", "veth"}},
	} {
		if code, _, errs := runBenchArgs(t, tc.args...); code != 2 || !strings.Contains(errs, "--responder-path") {
			t.Errorf("%s: exit %d (%s), want 2 naming the flag", tc.name, code, errs)
		}
	}
	if os.Geteuid() != 0 || testing.Short() {
		t.Skip("the xdp run needs root")
	}
	code, out, errs := runBenchArgs(t, "--sink", "roce", "--responder-path", "xdp", "--primitive", "keywrite", "--mode", "single/recvmmsg",
		"--duration", "300ms", "--warmup", "100ms", "--memory", "8MiB", "--keys", "4096", "--pool", "4096", "--prefault=false", "--baseline=false", "--ceiling=false", "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !regexp.MustCompile(`keywrite single/recvmmsg responder: .* M pkts/CPU s .* machine softirq [0-9.]+ CPU s/M rep`).MatchString(out) {
		t.Errorf("no responder line with the softirq figure:\n%s", out)
	}
	// Its ACKs leave on the AF_XDP TX ring: the time of those sends.
	if !regexp.MustCompile(`sending on its TX rings [0-9.]+ CPU s/M rep \([0-9]+%\)`).MatchString(out) {
		t.Errorf("no time of the responder's sends:\n%s", out)
	}
}
