package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/dta-go/dta/internal/cli/clitest"
)

// chromium returns the browser to drive: $DTA_CHROMIUM, or chromium on
// PATH (the Debian package, which .ci/run installs). Without one the test
// skips, except in CI (CI=true), where it fails.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DTA_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH and CI=true: .ci/run installs the Debian package chromium; the browser tests must run in CI")
	}
	t.Skip("no chromium on PATH (Debian: apt-get install chromium); skipping the browser tests")
	return ""
}

// browser is a headless Chromium and the problems its pages reported: console
// errors and warnings, uncaught exceptions, failed loads.
type browser struct {
	ctx      context.Context
	mu       sync.Mutex
	problems []string
}

// newBrowser starts Chromium for the test; it is closed when the test ends.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1024),
		// Without these Chromium reaches out to Google's services, and on a
		// machine without the internet it hangs on refused connections.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &browser{}
	// The listener sees every event of the tab from its start.
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(b.onEvent))
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b.ctx = ctx
	if err := chromedp.Do(ctx); err != nil { // starts the browser, with no timeout
		t.Fatalf("start %s: %v", path, err)
	}
	return b
}

// onEvent keeps the events that tell of a problem. It runs in the tab's
// event loop: it only appends.
func (b *browser) onEvent(ev any) {
	var p string
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning ||
			ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, a.Description+string(a.Value))
			}
			p = fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		p = fmt.Sprintf("uncaught exception at %s:%d: %s", d.URL, d.LineNumber+1, d.Text)
		if d.Exception != nil {
			p += " " + d.Exception.Description
		}
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
			p = fmt.Sprintf("%s %s: %s (%s)", ev.Entry.Source, ev.Entry.Level, ev.Entry.Text, ev.Entry.URL)
		}
	}
	// Chromium aborts the requests in flight when an interface comes or
	// goes (the network namespace tests of other packages, run at the same
	// time, add and delete veth pairs); the page polls again, so that is
	// the machine's doing, not the page's.
	if p != "" && !strings.Contains(p, "ERR_NETWORK_CHANGED") {
		b.mu.Lock()
		b.problems = append(b.problems, p)
		b.mu.Unlock()
	}
}

// takeProblems returns and forgets the problems reported so far.
func (b *browser) takeProblems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.problems
	b.problems = nil
	return p
}

func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// text returns the text of the first element matching the CSS selector sel,
// or "" when there is none.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return eval[string](t, ctx, fmt.Sprintf(`(() => { const e = document.querySelector(%s); return e ? e.textContent : ''; })()`, strconv.Quote(sel)))
}

// eval evaluates the JavaScript expression js in the page.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(tctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// waitText polls the text of sel until ok accepts it, and returns it. The
// page samples every second or two and the machine may be busy: the test
// waits for what it expects rather than sleeping a fixed time.
func waitText(t *testing.T, ctx context.Context, sel, what string, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := text(t, ctx, sel)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s reads %q", what, sel, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// askUntil clicks a query box's button until its result (sel) holds want,
// and returns the result: the report asked about may still be on its way.
func askUntil(t *testing.T, ctx context.Context, sel, button, what, want string) string {
	t.Helper()
	return waitText(t, ctx, sel, what, func(s string) bool {
		if strings.Contains(s, want) {
			return true
		}
		run(t, ctx, "ask again", chromedp.Click(chromedp.CSS(button)))
		time.Sleep(200 * time.Millisecond)
		return false
	})
}

// number reads a formatted integer such as "12,345 total".
func number(s string) (int64, bool) {
	digits := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, strings.Fields(s + " x")[0])
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil
}

func checkNoProblems(t *testing.T, b *browser) {
	t.Helper()
	for _, p := range b.takeProblems() {
		t.Errorf("the page reported: %s", p)
	}
}

func TestDashboardInChromiumAgainstUpDemo(t *testing.T) {
	b := newBrowser(t)
	udpAddr, base := startUp(t, "--demo", "--demo-rate", "400")
	ctx := b.ctx
	run(t, ctx, "open the dashboard", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#ingest-cards")))
	// The interval is remembered across visits; one second keeps the test short.
	run(t, ctx, "sample every second", chromedp.SetValue(chromedp.CSS("#interval"), "1000"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('interval').dispatchEvent(new Event('change'))`))

	t.Run("the numbers change while reports arrive", func(t *testing.T) {
		first := waitText(t, ctx, "#total-reports", "a first count of reports", func(s string) bool {
			n, ok := number(s)
			return ok && n > 0
		})
		n0, _ := number(first)
		waitText(t, ctx, "#total-reports", "the count of reports grows", func(s string) bool {
			n, ok := number(s)
			return ok && n > n0
		})
		waitText(t, ctx, "#rate-keywrite", "a Key-Write rate", func(s string) bool {
			return s != "" && s != "–" && s != "0"
		})
		occ := waitText(t, ctx, "#store-keywrite .occupancy", "Key-Write occupancy above zero", func(s string) bool {
			return strings.HasSuffix(s, "%") && s != "0 %"
		})
		t.Logf("reports %s, then more; Key-Write store %s in use", first, occ)
		if got := text(t, ctx, "#roce-note"); !strings.Contains(got, "local sink") {
			t.Errorf("RoCEv2 section with the local sink: %q", got)
		}
	})

	t.Run("a key typed into the Key-Write box shows its value", func(t *testing.T) {
		rep := newReporter(t, udpAddr)
		rep.keyWrite(3_000_000_000, 0xC0FFEE42) // far above the demo's keys
		run(t, ctx, "type the key", chromedp.SendKeys(chromedp.CSS("#kw-key"), "3000000000"))
		askUntil(t, ctx, "#kw-result", "#kw-go", "the reported value", "c0ffee42")
		if got := text(t, ctx, "#kw-result"); !strings.Contains(got, "found") || !strings.Contains(got, "3237998146") {
			t.Errorf("Key-Write result %q, want status found and u32 3237998146", got)
		}
	})

	t.Run("the Append box shows a list's latest entries", func(t *testing.T) {
		rep := newReporter(t, udpAddr)
		for v := uint32(1); v <= 6; v++ { // list 6 is not the demo's
			rep.appendEntry(6, 0xA000_0000+v)
		}
		run(t, ctx, "choose list 6, four entries", chromedp.SetValue(chromedp.CSS("#al-list"), "6"),
			chromedp.SetValue(chromedp.CSS("#q-append input[name=count]"), "4"))
		got := askUntil(t, ctx, "#al-result", "#al-go", "the last four entries", "head 6")
		want := []string{"a0000003", "a0000004", "a0000005", "a0000006"}
		last := -1
		for _, w := range want {
			i := strings.Index(got, w)
			if i < last {
				t.Errorf("Append result %q: %s missing or out of order", got, w)
			}
			last = i
		}
		if strings.Contains(got, "a0000002") {
			t.Errorf("Append result %q holds more than the 4 latest entries", got)
		}
		waitText(t, ctx, "#append-append tr[data-list='6'] .head", "list 6's head in the heads table", func(s string) bool { return s == "6" })
	})

	checkNoProblems(t, b)
}

func TestDashboardShowsRoCEv2QueuePairs(t *testing.T) {
	b := newBrowser(t)
	_, base := startUp(t, "--sink", "roce", "--demo", "--demo-rate", "200")
	ctx := b.ctx
	run(t, ctx, "open the dashboard", chromedp.Navigate(base+"/"))
	waitText(t, ctx, "#qp-count", "the translator's queue pair", func(s string) bool { return s == "1 queue pair connected" })
	waitText(t, ctx, "#requester-state", "the requester's state", func(s string) bool { return s == "connected" })
	psn := waitText(t, ctx, "#qp-table tbody td:nth-child(3)", "an expected PSN", func(s string) bool { return s != "" })
	waitText(t, ctx, "#qp-table tbody td:nth-child(3)", "the expected PSN advances as writes arrive", func(s string) bool { return s != psn })
	checkNoProblems(t, b)
}

// TestDashboardSendsTheAPIToken puts the collector behind a proxy that wants
// a bearer token for everything but the page and its assets, as an
// authenticating collector would, and checks that the page asks for the
// token and then sends it with every request.
func TestDashboardSendsTheAPIToken(t *testing.T) {
	b := newBrowser(t)
	_, base := startUp(t, "--demo")
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	const token = "s3cret-token"
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	seen := map[string]bool{} // data paths requested with the token
	guard := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		open := r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, "/ui/")
		if !open && r.Header.Get("Authorization") != "Bearer "+token {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, `{"error": "unauthorized"}`, http.StatusUnauthorized)
			return
		}
		if !open {
			mu.Lock()
			seen[r.URL.Path] = true
			mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(guard.Close)
	ctx := b.ctx
	run(t, ctx, "open the dashboard", chromedp.Navigate(guard.URL+"/"))
	waitText(t, ctx, "#status", "the page asks for a token", func(s string) bool { return strings.Contains(s, "API token") })
	// A wrong token is told apart from none, with the server's reason; a
	// token no HTTP header can carry is refused before any request.
	run(t, ctx, "enter a wrong token", chromedp.SendKeys(chromedp.CSS("#token"), "wrong-token"), chromedp.Click(chromedp.CSS("#auth button[type=submit]")))
	waitText(t, ctx, "#status", "the wrong token refused, with the server's reason", func(s string) bool {
		return strings.Contains(s, "was not accepted (unauthorized)")
	})
	eval[bool](t, ctx, `(document.getElementById('token').value = 'two words', true)`)
	run(t, ctx, "enter a token with a space", chromedp.Click(chromedp.CSS("#auth button[type=submit]")))
	waitText(t, ctx, "#status", "the token with a space refused", func(s string) bool {
		return strings.Contains(s, "characters an HTTP header cannot carry")
	})
	eval[bool](t, ctx, `(document.getElementById('token').value = '', true)`)
	// The browser logs the refused requests; those are expected here.
	b.takeProblems()
	run(t, ctx, "enter the token", chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Click(chromedp.CSS("#auth button[type=submit]")))
	waitText(t, ctx, "#total-reports", "numbers once the token is sent", func(s string) bool {
		n, ok := number(s)
		return ok && n > 0
	})
	// The page fetches its data paths independently: the first number may
	// show before the last of them went out, so wait for each (a loaded
	// machine can take seconds), and fail only on one never requested.
	missing := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var m []string
		for _, p := range []string{"/metrics", "/healthz", "/v1/stores", "/v1/stores/append/append"} {
			if !seen[p] {
				m = append(m, p)
			}
		}
		return m
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(missing()) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if m := missing(); len(m) > 0 {
		mu.Lock()
		t.Errorf("%v never requested with the token (seen: %v)", m, seen)
		mu.Unlock()
	}
	if stored := eval[string](t, ctx, `sessionStorage.getItem('dta.token')`); stored != token {
		t.Errorf("sessionStorage holds %q", stored)
	}
	checkNoProblems(t, b)
}

// TestDashboardOfACollectorWithoutTranslator runs dta collector and dta
// translator apart, as across machines: the collector's dashboard shows the
// writes its RoCEv2 responder executed and the translator's queue pair, and
// says where the translator's own numbers are.
func TestDashboardOfACollectorWithoutTranslator(t *testing.T) {
	b := newBrowser(t)
	cfg := clitest.Config(t, 8)
	col := clitest.Start(t, clitest.CollectorReady, "collector", "--config", cfg, "--rdma", "127.0.0.1:0", "--http", "127.0.0.1:0")
	tr := clitest.Start(t, clitest.TranslatorReady, "translator", "--config", cfg, "--collector", col[1],
		"--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	rep := newReporter(t, tr[1])
	ctx := b.ctx
	run(t, ctx, "open the collector's dashboard", chromedp.Navigate(col[2]+"/"))
	waitText(t, ctx, "#qp-count", "the translator's queue pair", func(s string) bool { return s == "1 queue pair connected" })
	if note := text(t, ctx, "#ingest-note"); !strings.Contains(note, "No translator runs in this process") {
		t.Errorf("ingest note %q", note)
	}
	if got := text(t, ctx, "#roce-requester"); got != "" {
		t.Errorf("a requester section without a requester: %q", got)
	}
	for i := range uint32(50) {
		rep.keyWrite(i, i)
	}
	waitText(t, ctx, "#total-writes", "the responder's RDMA WRITEs", func(s string) bool {
		n, ok := number(s)
		return ok && n >= 100 // 50 reports, 2 copies each
	})
	checkNoProblems(t, b)
}
