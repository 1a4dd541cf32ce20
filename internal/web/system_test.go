package web_test

import (
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/dta-go/dta/internal/cli/clitest"
	"github.com/dta-go/dta/wire/dta"
)

// startUp runs `dta up` in this process with small stores whose Append
// store has 8 lists: the demo reporter writes lists 0..3, so the tests own
// lists 4..7. It returns the UDP report address and the HTTP base URL.
func startUp(t *testing.T, extra ...string) (udpAddr, base string) {
	t.Helper()
	return clitest.Up(t, 8, extra...)
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
		{"/ui/missing.js", "application/json", `"error":"no endpoint GET /ui/missing.js`, http.StatusNotFound},
		{"/elsewhere", "application/json", `"error":"no endpoint GET`, http.StatusNotFound},
	} {
		status, ctype, body := httpGet(t, base+tt.path)
		if status != tt.status || !strings.HasPrefix(ctype, tt.ctype) || !strings.Contains(body, tt.contains) {
			t.Errorf("GET %s: %d %q, want %d %q with %q", tt.path, status, ctype, tt.status, tt.ctype, tt.contains)
		}
	}
}

func (r *reporter) keyIncrement(key uint32, delta uint64) {
	r.send(&dta.Report{Opcode: dta.OpKeyIncrement, Redundancy: 2, Key: be32(key), Delta: delta})
}
