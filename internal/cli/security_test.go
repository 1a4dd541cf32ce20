package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/httpguard/guardtest"
)

const (
	readToken  = "read-token-0123456789abcdef"
	adminToken = "admin-token-0123456789abcdef"
)

// securedConfig writes a unit-test sized configuration with extra YAML in
// the collector, translator and http sections.
func securedConfig(t *testing.T, path, collector, translator, httpSec string) string {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "dta.yaml")
	}
	indent := func(s string) string {
		if s == "" {
			return ""
		}
		return "  " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n  ") + "\n"
	}
	y := "collector:\n  prefault: false\n" + indent(collector) +
		"translator:\n  readers: 2\n  recv_buffer: 4MiB\n" + indent(translator)
	if httpSec != "" {
		y += "http:\n" + indent(httpSec)
	}
	y += `stores:
  - {name: keywrite, id: 1, primitive: keywrite, default: true, slots: 4096, value_size: 4, redundancy: 4}
  - {name: keyincrement, id: 2, primitive: keyincrement, default: true, slots: 4096, redundancy: 4}
  - {name: postcard, id: 3, primitive: postcard, default: true, chunks: 1024, hops: 5, redundancy: 2}
  - {name: append, id: 4, primitive: append, default: true, lists: 4, capacity: 64, entry_size: 4, batch: 4}
`
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// call sends a request with an optional bearer token and returns the status
// and the body.
func call(t *testing.T, hc *http.Client, method, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// count returns Key-Increment's count of key 9.
func count(t *testing.T, base, token string) uint64 {
	t.Helper()
	status, body := call(t, nil, "GET", base+"/v1/stores/keyincrement/keyincrement?key=9", token)
	if status != 200 {
		t.Fatalf("count: %d %s", status, body)
	}
	var r struct {
		Count uint64 `json:"count"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	return r.Count
}

// metric returns the value of the exposition line that starts with series
// (name and labels), or -1.
func metric(t *testing.T, base, token, series string) float64 {
	t.Helper()
	status, body := call(t, nil, "GET", base+"/metrics", token)
	if status != 200 {
		t.Fatalf("/metrics: %d %s", status, body)
	}
	for line := range strings.SplitSeq(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

// sendIncrements sends n Key-Increment reports of +1 to key 9, paced so
// that a loopback socket buffer never overflows.
func sendIncrements(t *testing.T, udpAddr string, n int) {
	t.Helper()
	conn, err := net.Dial("udp", udpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i := range n {
		if _, err := conn.Write([]byte{3, 0, 0, 4, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 1}); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			time.Sleep(time.Millisecond)
		}
	}
}

func TestUpRequiresATokenAndARequestWithoutOneChangesNothing(t *testing.T) {
	tokens := guardtest.TokenFile(t, "# test tokens", readToken, adminToken+" admin")
	cfg := securedConfig(t, "", "", "", "")
	m, _ := startCmd(t, upReady, "up", "--config", cfg, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--auth-token-file", tokens)
	udpAddr, base := m[1], m[2]
	sendIncrements(t, udpAddr, 12)
	eventually(t, "twelve increments land", func() error {
		if c := count(t, base, readToken); c != 12 {
			return fmt.Errorf("count %d", c)
		}
		return nil
	})
	for _, tc := range []struct {
		name, method, path, token string
		want                      int
	}{
		{"a query without a token", "GET", "/v1/stores/keyincrement/keyincrement?key=9", "", 401},
		{"a query with a wrong token", "GET", "/v1/stores", "wrong-token-0123456789abcdef", 401},
		{"a reset without a token", "POST", "/v1/stores/keyincrement/keyincrement:reset", "", 401},
		{"a reset with a read token", "POST", "/v1/stores/keyincrement/keyincrement:reset", readToken, 403},
		{"metrics without a token", "GET", "/metrics", "", 401},
		{"health without a token (open by default)", "GET", "/healthz", "", 200},
		{"stores with a read token", "GET", "/v1/stores", readToken, 200},
	} {
		status, body := call(t, nil, tc.method, base+tc.path, tc.token)
		if status != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, status, body, tc.want)
		}
		if status >= 400 && !strings.HasPrefix(body, `{"error":`) {
			t.Errorf("%s: the refusal is not a JSON error: %s", tc.name, body)
		}
	}
	if c := count(t, base, readToken); c != 12 {
		t.Fatalf("after refused resets the count is %d, want 12", c)
	}
	if v := metric(t, base, readToken, `dta_http_refused_total{reason="missing_token"}`); v != 3 {
		t.Errorf("missing_token refusals %v, want 3", v)
	}
	if v := metric(t, base, readToken, `dta_http_refused_total{reason="forbidden"}`); v != 1 {
		t.Errorf("forbidden refusals %v, want 1", v)
	}
	if status, body := call(t, nil, "POST", base+"/v1/stores/keyincrement/keyincrement:reset", adminToken); status != 200 {
		t.Fatalf("an admin reset: %d %s", status, body)
	}
	if c := count(t, base, readToken); c != 0 {
		t.Fatalf("after the admin reset the count is %d", c)
	}

	// dta query: refused without a token (with a hint), served with one
	// from DTA_TOKEN or --token-file.
	query := func(extra ...string) (int, string, string) {
		var out, errb bytes.Buffer
		args := append([]string{"query", "keyincrement", "--key", "9", "--server", base, "-o", "json"}, extra...)
		code := Run(context.Background(), args, nil, &out, &errb)
		return code, out.String(), errb.String()
	}
	t.Setenv("DTA_TOKEN", "")
	if code, _, errs := query(); code != 1 || !strings.Contains(errs, "401") || !strings.Contains(errs, "--token-file") {
		t.Errorf("dta query without a token: exit %d, %s", code, errs)
	}
	t.Setenv("DTA_TOKEN", readToken)
	if code, out, errs := query(); code != 0 || !strings.Contains(out, `"count":0`) {
		t.Errorf("dta query with DTA_TOKEN: exit %d, %s %s", code, out, errs)
	}
	t.Setenv("DTA_TOKEN", "wrong-token-0123456789abcdef")
	if code, _, errs := query(); code != 1 || !strings.Contains(errs, "DTA_TOKEN was not accepted") {
		t.Errorf("dta query with a wrong DTA_TOKEN: exit %d, %s", code, errs)
	}
	clientTok := guardtest.TokenFile(t, readToken)
	if code, out, errs := query("--token-file", clientTok); code != 0 || !strings.Contains(out, `"count":0`) {
		t.Errorf("dta query --token-file: exit %d, %s %s", code, out, errs)
	}
	os.Chmod(clientTok, 0o644)
	if code, _, errs := query("--token-file", clientTok); code != 2 || !strings.Contains(errs, "chmod 600") {
		t.Errorf("dta query with a world-readable token file: exit %d, %s", code, errs)
	}
}

var translatorMetricsReady = regexp.MustCompile(`reports on udp (\S+), RoCEv2 to .* metrics on (http://\S+)$`)

var upReadyTLS = regexp.MustCompile(`reports on udp (\S+), queries on (https://\S+) `)

func TestUpServesHTTPSWithTheGivenCertificate(t *testing.T) {
	ca := guardtest.NewCA(t)
	certFile, keyFile, _ := ca.Issue(time.Time{})
	cfg := securedConfig(t, "", "", "", "")
	m, _ := startCmd(t, upReadyTLS, "up", "--config", cfg, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
		"--tls-cert", certFile, "--tls-key", keyFile)
	base := m[2]
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: ca.ClientConfig()}}
	if status, body := call(t, hc, "GET", base+"/v1/stores", ""); status != 200 {
		t.Fatalf("HTTPS with the CA: %d %s", status, body)
	}
	query := func(extra ...string) (int, string) {
		var out, errb bytes.Buffer
		code := Run(context.Background(), append([]string{"query", "stores", "--server", base}, extra...), nil, &out, &errb)
		return code, errb.String()
	}
	if code, errs := query("--ca-file", ca.CertFile); code != 0 {
		t.Errorf("dta query --ca-file: exit %d %s", code, errs)
	}
	if code, errs := query(); code != 1 || !strings.Contains(errs, "certificate") {
		t.Errorf("dta query without the CA: exit %d %s", code, errs)
	}
	if code, errs := query("--insecure"); code != 0 {
		t.Errorf("dta query --insecure: exit %d %s", code, errs)
	}
	if code, errs := query("--insecure", "--ca-file", ca.CertFile); code != 2 {
		t.Errorf("dta query --insecure --ca-file: exit %d %s", code, errs)
	}
}

// buildDTA builds the dta binary for tests that send it signals.
func buildDTA(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the dta binary")
	}
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(t.TempDir(), "dta")
	cmd := exec.Command("go", "build", "-o", bin, filepath.Join(filepath.Dir(file), "..", "..", "cmd", "dta"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// process is a dta command running as its own process.
type process struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan error // Wait's result, once
	exited bool
}

// stop sends sig and waits for the process to exit, returning Wait's error.
func (p *process) stop(t *testing.T, sig os.Signal) error {
	t.Helper()
	p.cmd.Process.Signal(sig)
	select {
	case err := <-p.done:
		p.exited = true
		return err
	case <-time.After(15 * time.Second):
		p.cmd.Process.Kill()
		t.Fatalf("dta did not stop within 15 s after %v\n%s", sig, p.stderr)
	}
	return nil
}

// startProcess runs bin with args and returns the submatches of the first
// stdout line matching ready. The process gets SIGTERM when the test ends
// and must exit 0.
func startProcess(t *testing.T, bin string, ready *regexp.Regexp, args ...string) ([]string, *process) {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), stderr: &syncBuffer{}, done: make(chan error, 1)}
	p.cmd.Stderr = p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := p.done
	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := ready.FindStringSubmatch(sc.Text()); m != nil {
				found <- m
				break
			}
		}
		io.Copy(io.Discard, stdout)
		done <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		if p.exited {
			return
		}
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("dta %s: %v\n%s", args[0], err, p.stderr)
			}
		case <-time.After(15 * time.Second):
			p.cmd.Process.Kill()
			t.Errorf("dta %s did not stop within 15 s", args[0])
		}
	})
	select {
	case m := <-found:
		return m, p
	case err := <-done:
		t.Fatalf("dta %v exited before it was ready: %v\n%s", args, err, p.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("dta %v printed no ready line\n%s", args, p.stderr)
	}
	return nil, nil
}

func (p *process) hup(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
}

func TestSIGHUPReloadsTokensAndAllowlistsWithoutLosingAReport(t *testing.T) {
	bin := buildDTA(t)
	tokens := guardtest.TokenFile(t, adminToken+" admin")
	httpSec := "auth_token_file: " + tokens + "\nopen_paths: [/healthz]"
	cfg := securedConfig(t, "", "", "allow_sources: [127.0.0.0/8, '::1']", httpSec)
	m, p := startProcess(t, bin, upReady, "up", "--config", cfg, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	udpAddr, base := m[1], m[2]
	tok := adminToken
	reloads := func(result string) float64 {
		return metric(t, base, tok, `dta_config_reloads_total{result="`+result+`"}`)
	}

	// Reports sent while the configuration is reloaded over and over: none
	// is lost or refused.
	stop := make(chan struct{})
	hups := make(chan int)
	go func() {
		n := 0
		defer func() { hups <- n }()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				p.cmd.Process.Signal(syscall.SIGHUP)
				n++
			}
		}
	}()
	const sent = 3000
	sendIncrements(t, udpAddr, sent)
	close(stop)
	if n := <-hups; n == 0 {
		t.Fatal("no SIGHUP was sent while reports flowed")
	}
	eventually(t, "every report is counted", func() error {
		got := count(t, base, tok)
		kernel := metric(t, base, tok, "dta_udp_kernel_drops_total")
		if float64(got)+kernel != sent {
			return fmt.Errorf("count %d + kernel drops %v != %d", got, kernel, sent)
		}
		return nil
	})
	if v := metric(t, base, tok, "dta_translator_drops_total{reason=\"not_allowed\"}"); v != 0 {
		t.Fatalf("%v reports refused during the reloads", v)
	}
	if reloads("ok") < 1 || reloads("failed") != 0 {
		t.Fatalf("reloads ok %v failed %v", reloads("ok"), reloads("failed"))
	}

	// New tokens and a narrower allowlist.
	newToken := "new-admin-token-0123456789"
	guardtest.Rewrite(t, tokens, newToken+" admin")
	securedConfig(t, cfg, "", "allow_sources: [192.0.2.0/24]", httpSec)
	okBefore := reloads("ok")
	p.hup(t)
	eventually(t, "the new token is accepted and the old refused", func() error {
		if s, _ := call(t, nil, "GET", base+"/v1/stores", newToken); s != 200 {
			return fmt.Errorf("new token: %d", s)
		}
		if s, _ := call(t, nil, "GET", base+"/v1/stores", adminToken); s != 401 {
			return fmt.Errorf("old token: %d", s)
		}
		return nil
	})
	tok = newToken
	if reloads("ok") != okBefore+1 {
		t.Fatalf("reloads ok %v, want %v", reloads("ok"), okBefore+1)
	}
	before := count(t, base, tok)
	sendIncrements(t, udpAddr, 10)
	eventually(t, "reports from outside the new allowlist are refused", func() error {
		if v := metric(t, base, tok, `dta_translator_drops_total{reason="not_allowed"}`); v != 10 {
			return fmt.Errorf("not_allowed %v", v)
		}
		return nil
	})
	if c := count(t, base, tok); c != before {
		t.Fatalf("refused reports changed the count from %d to %d", before, c)
	}

	// Bad reloads are refused with a clear error; the settings in force stay.
	for i, bad := range []struct {
		name  string
		write func()
		want  string
	}{
		{"a CIDR with host bits", func() {
			securedConfig(t, cfg, "", "allow_sources: [10.0.0.1/8]", httpSec)
		}, "translator.allow_sources[0]"},
		{"a geometry change", func() {
			securedConfig(t, cfg, "hugepages: off", "allow_sources: [192.0.2.0/24]", httpSec)
		}, "collector.hugepages: not reloadable"},
		{"a token file others can read", func() {
			securedConfig(t, cfg, "", "allow_sources: [192.0.2.0/24]", httpSec)
			guardtest.Rewrite(t, tokens, "another-token-0123456789 admin")
			os.Chmod(tokens, 0o644)
		}, "permissions 0644 are too open"},
		{"turning TLS on", func() {
			os.Chmod(tokens, 0o600)
			securedConfig(t, cfg, "", "allow_sources: [192.0.2.0/24]", httpSec+"\ntls_cert: /x.pem\ntls_key: /x-key.pem")
		}, "turning TLS on or off needs a restart"},
	} {
		bad.write()
		p.hup(t)
		eventually(t, bad.name+" is refused and logged", func() error {
			if v := reloads("failed"); v != float64(i+1) {
				return fmt.Errorf("failed reloads %v", v)
			}
			// The counter moves before the log line is written out.
			if !strings.Contains(p.stderr.String(), bad.want) {
				return fmt.Errorf("the log does not say %q:\n%s", bad.want, p.stderr)
			}
			return nil
		})
		if s, _ := call(t, nil, "GET", base+"/v1/stores", newToken); s != 200 {
			t.Fatalf("after %s the token in force is refused: %d", bad.name, s)
		}
	}
	sendIncrements(t, udpAddr, 1)
	eventually(t, "the allowlist in force still refuses", func() error {
		if v := metric(t, base, tok, `dta_translator_drops_total{reason="not_allowed"}`); v != 11 {
			return fmt.Errorf("not_allowed %v", v)
		}
		return nil
	})
}

func TestCollectorAllowTranslatorsRefusesAndRevokesOnSIGHUP(t *testing.T) {
	bin := buildDTA(t)
	cfg := securedConfig(t, "", "allow_translators: [192.0.2.0/24]", "", "")
	m, col := startProcess(t, bin, collectorReady, "collector", "--config", cfg, "--rdma", "127.0.0.1:0", "--http", "127.0.0.1:0")
	rdmaAddr, base := m[1], m[2]

	// A translator outside the list is refused at once, and says why.
	trCfg := securedConfig(t, "", "", "", "")
	var errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code := Run(ctx, []string{"translator", "--config", trCfg, "--collector", rdmaAddr, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"}, nil, io.Discard, &errb)
	if code != 1 || !strings.Contains(errb.String(), "consumer defined") || !strings.Contains(errb.String(), "allow_translators") {
		t.Fatalf("a refused translator: exit %d\n%s", code, errb.String())
	}
	if v := metric(t, base, "", "dta_rdma_responder_cm_reject_not_allowed_total"); v < 1 {
		t.Fatalf("REJs counted %v", v)
	}

	// Allowed after a reload: it connects and its reports land.
	securedConfig(t, cfg, "allow_translators: [127.0.0.0/8]", "", "")
	col.hup(t)
	eventually(t, "the reload takes effect", func() error {
		if v := metric(t, base, "", `dta_config_reloads_total{result="ok"}`); v != 1 {
			return fmt.Errorf("reloads %v", v)
		}
		return nil
	})
	// Its metrics server wants a token too.
	tokens := guardtest.TokenFile(t, readToken)
	tr, _ := startCmd(t, translatorMetricsReady, "translator", "--config", trCfg, "--collector", rdmaAddr, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
		"--auth-token-file", tokens)
	if s, _ := call(t, nil, "GET", tr[2]+"/metrics", ""); s != 401 {
		t.Errorf("the translator's /metrics without a token: %d", s)
	}
	if v := metric(t, tr[2], readToken, `dta_http_refused_total{reason="missing_token"}`); v != 1 {
		t.Errorf("the translator counted %v refusals", v)
	}
	if s, body := call(t, nil, "GET", tr[2]+"/healthz", ""); s != 200 {
		t.Errorf("the translator's /healthz: %d %s", s, body)
	}
	sendIncrements(t, tr[1], 5)
	eventually(t, "the allowed translator's reports land", func() error {
		if c := count(t, base, ""); c != 5 {
			return fmt.Errorf("count %d", c)
		}
		return nil
	})

	// Revoked: its connection is closed and nothing more lands.
	securedConfig(t, cfg, "allow_translators: [192.0.2.0/24]", "", "")
	col.hup(t)
	eventually(t, "the connection is revoked", func() error {
		if v := metric(t, base, "", "dta_rdma_responder_qps_revoked_total"); v != 1 {
			return fmt.Errorf("revoked %v", v)
		}
		return nil
	})
	sendIncrements(t, tr[1], 5)
	time.Sleep(300 * time.Millisecond) // what could land would have landed (the test cannot fail by waiting less)
	if c := count(t, base, ""); c != 5 {
		t.Fatalf("a revoked translator's reports landed: count %d", c)
	}
	if v := metric(t, base, "", "dta_rdma_responder_not_allowed_total"); v < 1 {
		t.Fatalf("packets of the revoked translator counted %v", v)
	}
}

func TestSIGHUPServesARenewedCertificate(t *testing.T) {
	bin := buildDTA(t)
	ca := guardtest.NewCA(t)
	certFile, keyFile, serial1 := ca.Issue(time.Time{})
	cfg := securedConfig(t, "", "", "", "tls_cert: "+certFile+"\ntls_key: "+keyFile)
	m, p := startProcess(t, bin, regexp.MustCompile(`RoCEv2 on udp (\S+), queries on (https://\S+),`),
		"collector", "--config", cfg, "--rdma", "127.0.0.1:0", "--http", "127.0.0.1:0")
	base := m[2]
	serial := func() int64 {
		t.Helper()
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: ca.ClientConfig(), DisableKeepAlives: true}}
		resp, err := hc.Get(base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.TLS.PeerCertificates[0].SerialNumber.Int64()
	}
	if s := serial(); s != serial1 {
		t.Fatalf("serial %d, want %d", s, serial1)
	}
	// The renewed pair is written over the same paths, as certbot or
	// cert-manager do, and the process is told.
	c2, k2, serial2 := ca.Issue(time.Time{})
	for _, mv := range [][2]string{{c2, certFile}, {k2, keyFile}} {
		if err := os.Rename(mv[0], mv[1]); err != nil {
			t.Fatal(err)
		}
	}
	p.hup(t)
	eventually(t, "new handshakes get the renewed certificate", func() error {
		if s := serial(); s != serial2 {
			return fmt.Errorf("serial %d, want %d", s, serial2)
		}
		return nil
	})
	// An expired renewal is refused and the good certificate stays.
	c3, k3, _ := ca.Issue(time.Now().Add(-time.Minute))
	for _, mv := range [][2]string{{c3, certFile}, {k3, keyFile}} {
		if err := os.Rename(mv[0], mv[1]); err != nil {
			t.Fatal(err)
		}
	}
	p.hup(t)
	eventually(t, "the expired certificate is refused", func() error {
		if !strings.Contains(p.stderr.String(), "expired at") {
			return fmt.Errorf("no refusal logged yet")
		}
		return nil
	})
	if s := serial(); s != serial2 {
		t.Fatalf("after a refused renewal the serial is %d, want %d", s, serial2)
	}
}

func TestUpAnswersEveryPathAsTheAPIDoesAndRefusesCrossSiteResets(t *testing.T) {
	udpAddr, base := startUp(t)
	sendIncrements(t, udpAddr, 5)
	eventually(t, "five increments land", func() error {
		if c := count(t, base, ""); c != 5 {
			return fmt.Errorf("count %d", c)
		}
		return nil
	})
	for _, tc := range []struct {
		name, method, path, origin string
		want                       int
		counted                    string
	}{
		{"a PUT of the metrics", "PUT", "/metrics", "", 405, `dta_http_refused_total{reason="method"}`},
		{"a POST of the dashboard", "POST", "/", "", 405, `dta_http_refused_total{reason="method"}`},
		{"a path outside the API", "GET", "/nope", "", 404, `dta_http_refused_total{reason="no_route"}`},
		{"a reset sent by another site's page", "POST", "/v1/stores/keyincrement/keyincrement:reset", "http://evil.example", 403, `dta_http_refused_total{reason="cross_origin"}`},
	} {
		req, err := http.NewRequest(tc.method, base+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
			req.Header.Set("Sec-Fetch-Site", "cross-site")
		}
		before := max(metric(t, base, "", tc.counted), 0) // -1: not exported until counted
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want || !strings.HasPrefix(string(body), `{"error":`) {
			t.Errorf("%s: %d %s, want %d and a JSON error", tc.name, resp.StatusCode, body, tc.want)
		}
		if after := metric(t, base, "", tc.counted); after != before+1 {
			t.Errorf("%s: %s went %v → %v, want one more", tc.name, tc.counted, before, after)
		}
	}
	if c := count(t, base, ""); c != 5 {
		t.Fatalf("after a refused cross-site reset the count is %d, want 5", c)
	}
}
