package httpguard

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// backend is a small API: GET /v1/value reads a value, POST /v1/value:reset
// zeroes it, GET /v1/stream streams, GET /healthz and /metrics answer ok.
type backend struct {
	value   atomic.Int64
	calls   atomic.Int64
	block   chan struct{} // GET /v1/slow waits on it
	entered chan struct{}
}

func newBackend() *backend {
	b := &backend{block: make(chan struct{}), entered: make(chan struct{}, 1000)}
	b.value.Store(42)
	return b
}

func (b *backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.calls.Add(1)
	switch {
	case r.URL.Path == "/v1/value:reset" && r.Method == http.MethodPost:
		b.value.Store(0)
	case r.URL.Path == "/v1/slow", r.URL.Path == "/v1/stream":
		b.entered <- struct{}{}
		select {
		case <-b.block:
		case <-r.Context().Done():
			return
		}
	case r.URL.Path == "/v1/body":
		if _, err := io.ReadAll(r.Body); err != nil {
			var mb *http.MaxBytesError
			if errors.As(err, &mb) {
				http.Error(w, "too large", http.StatusRequestEntityTooLarge)
				return
			}
		}
	}
	fmt.Fprintf(w, "%d\n", b.value.Load())
}

func isAdmin(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, ":reset")
}
func isStream(r *http.Request) bool { return r.URL.Path == "/v1/stream" }

func testGuard(t *testing.T, a Access, l Limits) (*Guard, *backend, *httptest.Server) {
	t.Helper()
	g, err := New(Config{Access: a, Limits: l, Admin: isAdmin, Stream: isStream}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := newBackend()
	srv := httptest.NewServer(g.Handler(b))
	t.Cleanup(func() {
		select {
		case <-b.block:
		default:
			close(b.block)
		}
		srv.Close()
	})
	return g, b, srv
}

func mustTokens(t *testing.T, lines ...string) *Tokens {
	t.Helper()
	tk, err := ParseTokens([]byte(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// call sends a request with the given Authorization headers and returns the
// status, the decoded JSON error (if any) and the response headers.
func call(t *testing.T, method, url string, auth ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range auth {
		req.Header.Add("Authorization", a)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var e struct {
		Error string `json:"error"`
		Field string `json:"field"`
	}
	if resp.StatusCode >= 400 {
		if err := json.Unmarshal(body, &e); err != nil || e.Error == "" {
			t.Fatalf("%s %s: status %d with a body that is not a JSON error: %q", method, url, resp.StatusCode, body)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("Content-Type %q", ct)
		}
	}
	return resp.StatusCode, e.Error, resp.Header
}

func TestTokensDecideWhoMayCallWhat(t *testing.T) {
	tk := mustTokens(t, readTok, adminTok+" admin")
	g, b, srv := testGuard(t, Access{Tokens: tk, Open: []string{"/healthz"}}, DefaultLimits())
	for _, tc := range []struct {
		name       string
		method     string
		path       string
		auth       []string
		status     int
		reason     Reason
		challenge  string // WWW-Authenticate contains
		wantCalled bool
	}{
		{"no token", "GET", "/v1/value", nil, 401, ReasonMissingToken, `Bearer realm="dta"`, false},
		{"another scheme", "GET", "/v1/value", []string{"Basic dXNlcjpwYXNz"}, 401, ReasonMalformedToken, "invalid_request", false},
		{"Bearer without a token", "GET", "/v1/value", []string{"Bearer"}, 401, ReasonMalformedToken, "invalid_request", false},
		{"a token with a space", "GET", "/v1/value", []string{"Bearer " + readTok + " x"}, 401, ReasonMalformedToken, "invalid_request", false},
		{"two Authorization headers", "GET", "/v1/value", []string{"Bearer " + readTok, "Bearer " + adminTok}, 401, ReasonMalformedToken, "invalid_request", false},
		{"a wrong token", "GET", "/v1/value", []string{"Bearer " + strings.Repeat("x", 32)}, 401, ReasonInvalidToken, "invalid_token", false},
		{"a read token", "GET", "/v1/value", []string{"Bearer " + readTok}, 200, NumReasons, "", true},
		{"the scheme in lower case", "GET", "/v1/value", []string{"bearer " + readTok}, 200, NumReasons, "", true},
		{"an admin token reads too", "GET", "/v1/value", []string{"Bearer " + adminTok}, 200, NumReasons, "", true},
		{"a read token may not reset", "POST", "/v1/value:reset", []string{"Bearer " + readTok}, 403, ReasonForbidden, "insufficient_scope", false},
		{"no token may not reset", "POST", "/v1/value:reset", nil, 401, ReasonMissingToken, "Bearer", false},
		{"an open path needs no token", "GET", "/healthz", nil, 200, NumReasons, "", true},
		{"open paths match exactly", "GET", "/healthz/x", nil, 401, ReasonMissingToken, "Bearer", false},
		{"metrics are not open unless listed", "GET", "/metrics", nil, 401, ReasonMissingToken, "Bearer", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := b.calls.Load()
			refused := g.Stats().Refused[min(tc.reason, NumReasons-1)].Load()
			status, msg, h := call(t, tc.method, srv.URL+tc.path, tc.auth...)
			if status != tc.status {
				t.Fatalf("status %d (%s), want %d", status, msg, tc.status)
			}
			if called := b.calls.Load() > before; called != tc.wantCalled {
				t.Fatalf("backend called: %v", called)
			}
			if tc.reason < NumReasons {
				if got := g.Stats().Refused[tc.reason].Load(); got != refused+1 {
					t.Fatalf("%v counted %d times, want %d", tc.reason, got, refused+1)
				}
				if !strings.Contains(h.Get("WWW-Authenticate"), tc.challenge) {
					t.Fatalf("WWW-Authenticate %q, want it to contain %q", h.Get("WWW-Authenticate"), tc.challenge)
				}
			}
		})
	}
	if b.value.Load() != 42 {
		t.Fatal("a refused reset changed the state")
	}
	if status, _, _ := call(t, "POST", srv.URL+"/v1/value:reset", "Bearer "+adminTok); status != 200 || b.value.Load() != 0 {
		t.Fatalf("an admin reset: status %d, value %d", status, b.value.Load())
	}
}

func TestWithoutTokensEveryoneMayDoEverything(t *testing.T) {
	_, b, srv := testGuard(t, Access{}, DefaultLimits())
	if status, _, _ := call(t, "POST", srv.URL+"/v1/value:reset"); status != 200 || b.value.Load() != 0 {
		t.Fatalf("status %d", status)
	}
}

func TestNewTokensTakeEffectAtOnce(t *testing.T) {
	g, _, srv := testGuard(t, Access{Tokens: mustTokens(t, readTok)}, DefaultLimits())
	if s, _, _ := call(t, "GET", srv.URL+"/v1/value", "Bearer "+readTok); s != 200 {
		t.Fatalf("old token before the swap: %d", s)
	}
	newTok := "n3wn3wn3wn3wn3wn3w-token"
	if err := g.SetAccess(Access{Tokens: mustTokens(t, newTok+" admin")}); err != nil {
		t.Fatal(err)
	}
	if s, _, _ := call(t, "GET", srv.URL+"/v1/value", "Bearer "+readTok); s != 401 {
		t.Fatalf("a removed token: %d, want 401", s)
	}
	if s, _, _ := call(t, "POST", srv.URL+"/v1/value:reset", "Bearer "+newTok); s != 200 {
		t.Fatalf("the new admin token: %d", s)
	}
	if err := g.SetAccess(Access{Tokens: mustTokens(t, newTok), Open: []string{"healthz"}}); err == nil {
		t.Fatal("an open path without a leading slash was accepted")
	}
	if s, _, _ := call(t, "GET", srv.URL+"/v1/value", "Bearer "+newTok); s != 200 {
		t.Fatal("a refused SetAccess changed the access in force")
	}
}

func TestTooManyRequestsAreRefusedWithRetryAfter(t *testing.T) {
	l := DefaultLimits()
	l.MaxRequests, l.MaxStreams = 3, 2
	g, b, srv := testGuard(t, Access{}, l)
	var wg sync.WaitGroup
	get := func(path string) {
		defer wg.Done()
		resp, err := http.Get(srv.URL + path)
		if err == nil {
			resp.Body.Close()
		}
	}
	for range 3 {
		wg.Add(1)
		go get("/v1/slow")
	}
	for range 3 {
		<-b.entered
	}
	status, msg, h := call(t, "GET", srv.URL+"/v1/value")
	if status != 503 || h.Get("Retry-After") != "1" || !strings.Contains(msg, "busy") {
		t.Fatalf("a fourth request: %d %q Retry-After %q", status, msg, h.Get("Retry-After"))
	}
	// Streams have their own bound: two open while the requests are full.
	for range 2 {
		wg.Add(1)
		go get("/v1/stream")
	}
	for range 2 {
		<-b.entered
	}
	if status, _, _ := call(t, "GET", srv.URL+"/v1/stream"); status != 503 {
		t.Fatalf("a third stream: %d", status)
	}
	if g.Stats().InFlight.Load() != 3 || g.Stats().Streams.Load() != 2 {
		t.Fatalf("in flight %d, streams %d", g.Stats().InFlight.Load(), g.Stats().Streams.Load())
	}
	close(b.block)
	wg.Wait()
	if status, _, _ := call(t, "GET", srv.URL+"/v1/value"); status != 200 {
		t.Fatalf("after the slow requests ended: %d", status)
	}
	if g.Stats().Refused[ReasonTooManyRequests].Load() != 1 || g.Stats().Refused[ReasonTooManyStreams].Load() != 1 {
		t.Fatalf("refusals %v %v", g.Stats().Refused[ReasonTooManyRequests].Load(), g.Stats().Refused[ReasonTooManyStreams].Load())
	}
}

func TestOpenStreamsDoNotStarveQueries(t *testing.T) {
	l := DefaultLimits()
	l.MaxRequests, l.MaxStreams = 2, 4
	_, b, srv := testGuard(t, Access{}, l)
	for range 4 {
		go func() {
			if resp, err := http.Get(srv.URL + "/v1/stream"); err == nil {
				resp.Body.Close()
			}
		}()
		<-b.entered
	}
	for range 10 {
		if status, _, _ := call(t, "GET", srv.URL+"/v1/value"); status != 200 {
			t.Fatalf("a query while every stream slot is taken: %d", status)
		}
	}
}

func TestBodiesAboveTheLimitAreRefused(t *testing.T) {
	l := DefaultLimits()
	l.MaxBodyBytes = 1024
	g, b, srv := testGuard(t, Access{}, l)
	resp, err := http.Post(srv.URL+"/v1/body", "application/json", strings.NewReader(strings.Repeat("x", 2000)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 || g.Stats().Refused[ReasonBodyTooLarge].Load() != 1 || b.calls.Load() != 0 {
		t.Fatalf("a declared 2000-byte body: %d, backend calls %d", resp.StatusCode, b.calls.Load())
	}
	// A chunked body (no Content-Length) is cut at the limit while read.
	pr, pw := io.Pipe()
	go func() { pw.Write([]byte(strings.Repeat("y", 4000))); pw.Close() }()
	resp, err = http.Post(srv.URL+"/v1/body", "application/json", pr)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("a chunked 4000-byte body: %d", resp.StatusCode)
	}
}

// serve runs the guard's own server (its limits, its TLS) on loopback.
func serve(t *testing.T, g *Guard, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := g.NewServer(h, log.New(io.Discard, "", 0)) // handshake failures are the point of some tests
	go g.Serve(srv, ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// dialSlow opens n connections to addr that each send start and then
// nothing, closed when the test ends.
func dialSlow(t *testing.T, addr string, n int, start string) []net.Conn {
	t.Helper()
	var conns []net.Conn
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.Write([]byte(start))
		conns = append(conns, c)
	}
	return conns
}

func TestSlowHeaderClientsDoNotStarveOthers(t *testing.T) {
	l := DefaultLimits()
	l.ReadHeaderTimeout, l.MaxRequests = 300*time.Millisecond, 4
	g, err := New(Config{Limits: l}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := newBackend()
	addr := serve(t, g, b)
	// Fifty clients each send half a request line and then nothing.
	slow := dialSlow(t, addr, 50, "GET /v1/value HTTP/1.1\r\nHost: x\r\nX-Slow: ")
	for range 5 {
		resp, err := http.Get("http://" + addr + "/v1/value")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("a normal request among slow clients: %d", resp.StatusCode)
		}
	}
	// The server hangs up on each slow client once its header time is up.
	for i, c := range slow {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadAll(c); err != nil {
			t.Fatalf("slow client %d was not disconnected: %v", i, err)
		}
	}
	if b.calls.Load() != 5 {
		t.Fatalf("the backend served %d requests, want the 5 normal ones", b.calls.Load())
	}
}

func TestStreamsOutliveTheReadAndWriteTimeouts(t *testing.T) {
	l := DefaultLimits()
	l.ReadHeaderTimeout, l.ReadTimeout, l.WriteTimeout = 100*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	g, err := New(Config{Limits: l, Stream: isStream}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A stream as internal/query writes one: it lifts its write deadline.
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.SetWriteDeadline(time.Time{})
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		for i := range 16 {
			select {
			case <-r.Context().Done():
				return
			case <-tk.C:
			}
			fmt.Fprintf(w, "line %d\n", i)
			rc.Flush()
		}
	})
	addr := serve(t, g, h)
	resp, err := http.Get("http://" + addr + "/v1/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	n := 0
	for sc.Scan() {
		n++
	}
	if n != 16 {
		t.Fatalf("the stream ended after %d of 16 lines (800 ms, past the 200 ms timeouts): %v", n, sc.Err())
	}
}

func TestHeadersAboveTheLimitAreRefused(t *testing.T) {
	l := DefaultLimits()
	l.MaxHeaderBytes = 4 << 10
	g, _ := New(Config{Limits: l}, nil)
	addr := serve(t, g, newBackend())
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/value", nil)
	req.Header.Set("X-Big", strings.Repeat("x", 16<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("a 16 KiB header: %d", resp.StatusCode)
	}
}

func TestBadLimitsNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		change func(*Limits)
		want   string
	}{
		{func(l *Limits) { l.ReadTimeout = 0 }, "read_timeout"},
		{func(l *Limits) { l.WriteTimeout = 2 * time.Hour }, "write_timeout"},
		{func(l *Limits) { l.ReadHeaderTimeout = time.Minute; l.ReadTimeout = time.Second }, "read_header_timeout"},
		{func(l *Limits) { l.MaxHeaderBytes = 10 }, "max_header_bytes"},
		{func(l *Limits) { l.MaxBodyBytes = 1 << 40 }, "max_body_bytes"},
		{func(l *Limits) { l.MaxRequests = 0 }, "max_requests"},
		{func(l *Limits) { l.MaxStreams = -1 }, "max_streams"},
	} {
		l := DefaultLimits()
		tc.change(&l)
		if err := l.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}

func TestSlowBodiesDoNotStarveQueries(t *testing.T) {
	l := DefaultLimits()
	l.ReadHeaderTimeout, l.ReadTimeout, l.MaxRequests = 200*time.Millisecond, 700*time.Millisecond, 4
	g, err := New(Config{Limits: l}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := newBackend()
	addr := serve(t, g, b)
	// Six clients each promise a 1000-byte body and send ten bytes of it.
	slow := dialSlow(t, addr, 6, "POST /v1/body HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"keys\":[1")
	deadline := time.Now().Add(5 * time.Second)
	for g.Stats().Bodies.Load() < 4 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	// Queries go on while every body slot is held.
	for range 5 {
		if status, _, _ := call(t, "GET", "http://"+addr+"/v1/value"); status != 200 {
			t.Fatalf("a query while slow bodies hold every body slot: %d", status)
		}
	}
	var timeouts, busy int
	for i, c := range slow {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("slow client %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusRequestTimeout && strings.Contains(string(body), "read_timeout"):
			timeouts++
		case resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(body), "bodies"):
			busy++
		default:
			t.Fatalf("slow client %d: %d %s", i, resp.StatusCode, body)
		}
	}
	if timeouts != 4 || busy != 2 || g.Stats().Refused[ReasonBodyTimeout].Load() != 4 || b.calls.Load() != 5 {
		t.Fatalf("%d timed out, %d busy, counted %d timeouts; the backend served %d requests, want the 5 queries",
			timeouts, busy, g.Stats().Refused[ReasonBodyTimeout].Load(), b.calls.Load())
	}
	if g.Stats().Bodies.Load() != 0 {
		t.Fatalf("%d bodies still counted as being received", g.Stats().Bodies.Load())
	}
}

func TestABodyThatCannotBeReadIsRefusedBeforeTheAPI(t *testing.T) {
	g, err := New(Config{Limits: DefaultLimits()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := newBackend()
	addr := serve(t, g, b)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("POST /v1/body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nxx\r\n0\r\n\r\n"))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), "body: could not be read") ||
		g.Stats().Refused[ReasonBadBody].Load() != 1 || b.calls.Load() != 0 {
		t.Fatalf("a bad chunked body: %d %s, counted %d, backend calls %d", resp.StatusCode, body,
			g.Stats().Refused[ReasonBadBody].Load(), b.calls.Load())
	}
	// A good body reaches the backend whole.
	resp2, err := http.Post("http://"+addr+"/v1/body", "application/json", strings.NewReader(strings.Repeat("z", 3000)))
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != 200 || b.calls.Load() != 1 {
		t.Fatalf("a good body: %d, backend calls %d", resp2.StatusCode, b.calls.Load())
	}
}

func TestCrossOriginBrowserRequestsMayNotChangeState(t *testing.T) {
	cases := []struct {
		name    string
		method  string
		path    string
		headers map[string]string
		want    int
	}{
		{"a reset from another site's page", "POST", "/v1/value:reset", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"}, 403},
		{"a reset from an older browser naming another origin", "POST", "/v1/value:reset", map[string]string{"Origin": "http://evil.example"}, 403},
		{"a read with a body from another site's page", "POST", "/v1/body", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"a GET from another site's page", "GET", "/v1/value", map[string]string{"Sec-Fetch-Site": "cross-site"}, 200},
		{"a reset from the dashboard's own page", "POST", "/v1/value:reset", map[string]string{"Sec-Fetch-Site": "same-origin"}, 200},
		{"a reset from a program (no browser headers)", "POST", "/v1/value:reset", nil, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, b, srv := testGuard(t, Access{}, DefaultLimits())
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader("x=1"))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
			refused := resp.StatusCode == 403
			if refused && (b.value.Load() != 42 || b.calls.Load() != 0 || g.Stats().Refused[ReasonCrossOrigin].Load() != 1) {
				t.Fatalf("refused, yet value %d, backend calls %d, counted %d", b.value.Load(), b.calls.Load(), g.Stats().Refused[ReasonCrossOrigin].Load())
			}
		})
	}
}

func TestUnroutedRequestsAreJSONAndCounted(t *testing.T) {
	g, err := New(Config{Limits: DefaultLimits()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.Handle("/", g.Unrouted(map[string][]string{"/metrics": {http.MethodGet}}))
	srv := httptest.NewServer(g.Handler(mux))
	defer srv.Close()
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/metrics", 200},
		{"PUT", "/metrics", 405},
		{"GET", "/nope", 404},
	} {
		status, _, h := call(t, tc.method, srv.URL+tc.path) // call checks that an error is JSON
		if status != tc.want || (status == 405 && h.Get("Allow") != "GET, HEAD") {
			t.Errorf("%s %s: %d (Allow %q), want %d", tc.method, tc.path, status, h.Get("Allow"), tc.want)
		}
	}
	if g.Stats().Refused[ReasonMethod].Load() != 1 || g.Stats().Refused[ReasonNoRoute].Load() != 1 {
		t.Errorf("counted %d method, %d no_route refusals, want 1 each", g.Stats().Refused[ReasonMethod].Load(), g.Stats().Refused[ReasonNoRoute].Load())
	}
}

// A request path in a log line is quoted once, by the log handler, and only
// when it needs it; a long one is cut, invalid UTF-8 replaced.
func TestARequestPathIsLoggedAsItIs(t *testing.T) {
	for _, tc := range []struct {
		path, want string
	}{
		{"/v1/stores", "path=/v1/stores\n"},
		{"/v1/a b", `path="/v1/a b"` + "\n"},
		{"/v1/\n\"x", `path="/v1/\n\"x"` + "\n"},
		{"/" + strings.Repeat("a", 100), "path=/" + strings.Repeat("a", 79) + "...\n"},
		{"/\xff", "path=\"/\ufffd\"\n"},
	} {
		var b strings.Builder
		slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey {
				return slog.Attr{}
			}
			return a
		}})).Info("", "path", shortPath(tc.path))
		if b.String() != tc.want {
			t.Errorf("path %q logged as %q, want %q", tc.path, b.String(), tc.want)
		}
	}
}
