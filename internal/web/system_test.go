package web_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/cli"
	"github.com/dta-go/dta/wire/dta"
)

// testConfig is `dta up` with unit-test sized stores. The Append store has 8
// lists: the demo reporter writes lists 0..3, so the tests own lists 4..7.
const testConfig = `
collector:
  prefault: false
translator:
  readers: 1
  recv_buffer: 4MiB
stores:
  - {name: keywrite, id: 1, primitive: keywrite, default: true, slots: 4096, value_size: 4, redundancy: 4}
  - {name: keyincrement, id: 2, primitive: keyincrement, default: true, slots: 4096, redundancy: 4}
  - {name: postcard, id: 3, primitive: postcard, default: true, chunks: 1024, hops: 5, redundancy: 2}
  - {name: append, id: 4, primitive: append, default: true, lists: 8, capacity: 256, entry_size: 4, batch: 4}
`

var (
	upReady         = regexp.MustCompile(`reports on udp (\S+), queries on (http://\S+) `)
	collectorReady  = regexp.MustCompile(`RoCEv2 on udp (\S+), queries on (http://\S+),`)
	translatorReady = regexp.MustCompile(`reports on udp (\S+), RoCEv2 to`)
)

// writeConfig writes testConfig to a file for the test.
func writeConfig(t *testing.T) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "dta.yaml")
	if err := os.WriteFile(cfg, []byte(testConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// startUp runs `dta up` in this process, as the binary would (cli.Run), on
// loopback ports the kernel picks, until the test ends. It returns the UDP
// address reports go to and the collector's HTTP base URL.
func startUp(t *testing.T, extra ...string) (udpAddr, base string) {
	t.Helper()
	args := append([]string{"up", "--config", writeConfig(t), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"}, extra...)
	m := startCmd(t, upReady, args...)
	return m[1], m[2]
}

// startCmd runs a dta command in this process until the test ends and
// returns the submatches of the first line of its output that re matches.
func startCmd(t *testing.T, re *regexp.Regexp, args ...string) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() { done <- cli.Run(ctx, args, nil, pw, io.Discard); pw.Close() }()
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
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("dta %s exited with %d", args[0], code)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("dta %s did not stop within 15s", args[0])
		}
	})
	select {
	case m := <-found:
		return m
	case code := <-done:
		t.Fatalf("dta %v exited with %d before it was ready", args, code)
	case <-time.After(20 * time.Second):
		t.Fatalf("dta %v printed no ready line", args)
	}
	return nil
}

// reporter sends DTA reports in the prototype's formats to a translator.
type reporter struct {
	t    *testing.T
	conn net.Conn
}

func newReporter(t *testing.T, udpAddr string) *reporter {
	t.Helper()
	conn, err := net.Dial("udp", udpAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &reporter{t: t, conn: conn}
}

func (r *reporter) send(rep *dta.Report) {
	r.t.Helper()
	b, err := dta.AppendDatagram(nil, dta.Header{}, rep)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.conn.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func (r *reporter) keyWrite(key, value uint32) {
	r.send(&dta.Report{Opcode: dta.OpKeyWrite, Redundancy: 2, Key: be32(key), Value: be32(value)})
}

func (r *reporter) appendEntry(list, value uint32) {
	r.send(&dta.Report{Opcode: dta.OpAppend, List: list, Value: be32(value)})
}

// httpGet returns the status, content type and body of GET url.
func httpGet(t *testing.T, url string) (int, string, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

func TestTheCollectorServesTheDashboardBesideItsAPI(t *testing.T) {
	_, base := startUp(t)
	for _, tt := range []struct {
		path, ctype, contains string
		status                int
	}{
		{"/", "text/html; charset=utf-8", `<script type="module" src="/ui/app.js">`, http.StatusOK},
		{"/ui/app.js", "text/javascript; charset=utf-8", "const API = {", http.StatusOK},
		{"/ui/style.css", "text/css; charset=utf-8", "--accent", http.StatusOK},
		{"/v1/stores/append/append", "application/json", `"lists":8`, http.StatusOK},
		{"/metrics", "text/plain", "dta_append_pending_entries", http.StatusOK},
		{"/ui/missing.js", "text/plain; charset=utf-8", "404", http.StatusNotFound},
		{"/elsewhere", "text/plain; charset=utf-8", "404", http.StatusNotFound},
	} {
		status, ctype, body := httpGet(t, base+tt.path)
		if status != tt.status || !strings.HasPrefix(ctype, tt.ctype) || !strings.Contains(body, tt.contains) {
			t.Errorf("GET %s: %d %q, want %d %q with %q", tt.path, status, ctype, tt.status, tt.ctype, tt.contains)
		}
	}
}
