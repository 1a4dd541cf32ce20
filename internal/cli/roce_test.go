package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// smallConfig writes a unit-test sized configuration and returns its path.
func smallConfig(t *testing.T) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "dta.yaml")
	if err := os.WriteFile(cfg, []byte(`
collector:
  prefault: false
translator:
  readers: 2
  recv_buffer: 4MiB
stores:
  - {name: keywrite, id: 1, primitive: keywrite, default: true, slots: 4096, value_size: 4, redundancy: 4}
  - {name: keyincrement, id: 2, primitive: keyincrement, default: true, slots: 4096, redundancy: 4}
  - {name: postcard, id: 3, primitive: postcard, default: true, chunks: 1024, hops: 5, redundancy: 2}
  - {name: append, id: 4, primitive: append, default: true, lists: 4, capacity: 64, entry_size: 4, batch: 4}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// startCmd runs a dta command in this process until stop is called, and
// returns the submatches of the first output line matching re.
func startCmd(t *testing.T, re *regexp.Regexp, args ...string) (m []string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() { done <- Run(ctx, args, nil, pw, io.Discard); pw.Close() }()
	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m
				break
			}
		}
		io.Copy(io.Discard, pr)
	}()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("dta %s exited with %d", args[0], code)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("dta %s did not stop within 15s", args[0])
		}
	}
	t.Cleanup(stop)
	select {
	case m = <-found:
		return m, stop
	case code := <-done:
		t.Fatalf("dta %v exited with %d before it was ready", args, code)
	case <-time.After(15 * time.Second):
		t.Fatalf("dta %v printed no ready line", args)
	}
	return nil, stop
}

func sendPrototypeReports(t *testing.T, udpAddr string) {
	t.Helper()
	conn, err := net.Dial("udp", udpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	seq := byte(0)
	send := func(op byte, body ...byte) {
		if _, err := conn.Write(append([]byte{op, seq, 0}, body...)); err != nil {
			t.Fatal(err)
		}
		seq++
		time.Sleep(time.Millisecond)
	}
	send(1, 2, 0, 0, 0, 7, 0xCA, 0xFE, 0xF0, 0x0D)
	send(1, 2, 0, 0, 0, 7, 0x00, 0x00, 0xBE, 0xEF)
	send(3, 4, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 5)
	send(3, 4, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 7)
	for hop := byte(1); hop <= 5; hop++ {
		send(4, 0, 0, 0, 42, hop, 0, 0, 0, 100+hop)
	}
	for v := byte(1); v <= 6; v++ {
		send(2, 0, 0, 0, 2, 0, 0, 0, v)
	}
}

func TestUpOverRoCEAnswersEveryPrimitive(t *testing.T) {
	udpAddr, base := startUp(t, "--sink", "roce")
	sendPrototypeReports(t, udpAddr)
	checkPrototypeAnswers(t, base)
}

var (
	collectorReady  = regexp.MustCompile(`RoCEv2 on udp (\S+), queries on (http://\S+),`)
	translatorReady = regexp.MustCompile(`reports on udp (\S+), RoCEv2 to`)
)

// logCountersOnFailure logs, if the test fails, every non-zero counter of
// the given /metrics bases whose name starts with one of prefixes.
func logCountersOnFailure(t *testing.T, bases map[string]string, prefixes ...string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for who, base := range bases {
			resp, err := http.Get(base + "/metrics")
			if err != nil {
				t.Logf("%s metrics: %v", who, err)
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, line := range strings.Split(string(body), "\n") {
				if strings.HasPrefix(line, "#") || strings.HasSuffix(line, " 0") {
					continue
				}
				for _, p := range prefixes {
					if strings.HasPrefix(line, p) {
						t.Logf("%s: %s", who, line)
						break
					}
				}
			}
		}
	})
}

func TestCollectorAndTranslatorWorkAsAPairAndSurviveACollectorRestart(t *testing.T) {
	cfg := smallConfig(t)
	// The responder receives on two SO_REUSEPORT sockets (--read-loops).
	col, stopCol := startCmd(t, collectorReady, "collector", "--config", cfg, "--rdma", "127.0.0.1:0", "--http", "127.0.0.1:0", "--read-loops", "2")
	rdmaAddr, base := col[1], col[2]
	tr, _ := startCmd(t, translatorMetricsReady, "translator", "--config", cfg, "--collector", rdmaAddr,
		"--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	// Should a report not land (seen once under heavy load), the counters
	// of both sides say where it went.
	logCountersOnFailure(t, map[string]string{"translator": tr[2], "collector": base}, "dta_rdma_", "dta_translator_", "dta_reports_", "dta_ingest_")
	sendPrototypeReports(t, tr[1])
	checkPrototypeAnswers(t, base)

	// Restart the collector on the same RoCEv2 address: its memory is new.
	stopCol()
	col2, _ := startCmd(t, collectorReady, "collector", "--config", cfg, "--rdma", rdmaAddr, "--http", "127.0.0.1:0")
	base2 := col2[2]
	conn, err := net.Dial("udp", tr[1])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	eventually(t, "a report sent after the restart lands in the new collector", func() error {
		conn.Write([]byte{1, 0, 0, 2, 0, 0, 0, 11, 0, 0, 0, 77}) // key 11 → 77, resent until it lands
		var r struct {
			Status   string `json:"status"`
			ValueU32 uint32 `json:"value_u32"`
		}
		getJSON(t, base2+"/v1/stores/keywrite/keywrite?key=11&n=2", &r)
		if r.Status != "found" || r.ValueU32 != 77 {
			return fmt.Errorf("got %+v", r)
		}
		return nil
	})
	// The restarted collector's Append lists start again at index 0.
	for v := byte(1); v <= 4; v++ {
		conn.Write([]byte{2, 0, 0, 0, 0, 0, 3, 0, 0, 0, 100 + v})
	}
	eventually(t, "append entries after the restart start at index 0", func() error {
		var p struct {
			Entries []struct {
				Index    uint64 `json:"index"`
				ValueU32 uint32 `json:"value_u32"`
			} `json:"entries"`
		}
		getJSON(t, base2+"/v1/stores/append/append/3?cursor=0", &p)
		if len(p.Entries) != 4 || p.Entries[0].Index != 0 || p.Entries[0].ValueU32 != 101 {
			return fmt.Errorf("got %+v", p)
		}
		return nil
	})
}

func TestSeveralTranslatorsWriteIntoOneCollector(t *testing.T) {
	cfg := smallConfig(t)
	// Three read loops: the translators' QPs are spread over them.
	col, _ := startCmd(t, collectorReady, "collector", "--config", cfg, "--rdma", "127.0.0.1:0", "--http", "127.0.0.1:0", "--read-loops", "3")
	var trs []string
	for range 3 {
		tr, _ := startCmd(t, translatorReady, "translator", "--config", cfg, "--collector", col[1],
			"--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
		trs = append(trs, tr[1])
	}
	for i, addr := range trs {
		conn, err := net.Dial("udp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// Translator i writes key 20+i and adds i+1 to the shared counter 5.
		conn.Write([]byte{1, 0, 0, 2, 0, 0, 0, byte(20 + i), 0, 0, 0, byte(200 + i)})
		conn.Write([]byte{3, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, byte(i + 1)})
	}
	eventually(t, "every translator's reports land in the one collector", func() error {
		for i := range trs {
			var r struct {
				ValueU32 uint32 `json:"value_u32"`
			}
			getJSON(t, fmt.Sprintf("%s/v1/stores/keywrite/keywrite?key=%d&n=2", col[2], 20+i), &r)
			if r.ValueU32 != uint32(200+i) {
				return fmt.Errorf("key %d: %d", 20+i, r.ValueU32)
			}
		}
		var c struct {
			Count uint64 `json:"count"`
		}
		getJSON(t, col[2]+"/v1/stores/keyincrement/keyincrement?key=5", &c)
		if c.Count != 6 {
			return fmt.Errorf("shared counter %d, want 1+2+3", c.Count)
		}
		return nil
	})
	if n := metric(t, col[2], "", "dta_rdma_responder_read_loops"); n != 3 {
		t.Errorf("dta_rdma_responder_read_loops = %v, want 3", n)
	}
	eventually(t, "the read loops' packets add up to the responder's", func() error {
		total, sum := metric(t, col[2], "", "dta_rdma_responder_packets_total"), 0.0
		for i := range 3 {
			if v := metric(t, col[2], "", fmt.Sprintf(`dta_rdma_responder_loop_packets_total{loop="%d"}`, i)); v >= 0 {
				sum += v
			}
		}
		if total <= 0 || sum != total {
			return fmt.Errorf("loops %v, responder %v", sum, total)
		}
		return nil
	})
}
