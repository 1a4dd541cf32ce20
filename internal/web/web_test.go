package web

import (
	"bufio"
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func newTestServer(t *testing.T) (*Dashboard, *httptest.Server) {
	t.Helper()
	d, err := New()
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(d)
	t.Cleanup(ts.Close)
	return d, ts
}

func get(t *testing.T, ts *httptest.Server, p string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, ts.URL+p, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestEveryAssetOnDiskIsEmbeddedAndServedWithItsContentType(t *testing.T) {
	d, ts := newTestServer(t)
	files, err := os.ReadDir("assets")
	if err != nil {
		t.Fatal(err)
	}
	served := d.Assets()
	wantType := map[string]string{
		".html": "text/html; charset=utf-8",
		".js":   "text/javascript; charset=utf-8",
		".css":  "text/css; charset=utf-8",
		".svg":  "image/svg+xml",
	}
	for _, f := range files {
		p := AssetPrefix + f.Name()
		if f.Name() == "index.html" {
			p = IndexPath
		}
		t.Run(p+" is served as "+wantType[path.Ext(f.Name())], func(t *testing.T) {
			if !slices.Contains(served, p) {
				t.Fatalf("%s is not among the served paths %v", p, served)
			}
			disk, err := os.ReadFile(filepath.Join("assets", f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			resp := get(t, ts, p)
			var body bytes.Buffer
			body.ReadFrom(resp.Body)
			h := resp.Header
			switch {
			case resp.StatusCode != http.StatusOK:
				t.Errorf("status %d", resp.StatusCode)
			case h.Get("Content-Type") != wantType[path.Ext(f.Name())]:
				t.Errorf("Content-Type %q, want %q", h.Get("Content-Type"), wantType[path.Ext(f.Name())])
			case !bytes.Equal(body.Bytes(), disk):
				t.Errorf("body differs from assets/%s", f.Name())
			case h.Get("ETag") == "" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cache-Control") != "no-cache":
				t.Errorf("caching headers: %v", h)
			case !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") ||
				!strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'"):
				t.Errorf("Content-Security-Policy %q", h.Get("Content-Security-Policy"))
			}
			// A browser that has the file revalidates and gets 304.
			if r := get(t, ts, p, "If-None-Match", h.Get("ETag")); r.StatusCode != http.StatusNotModified {
				t.Errorf("If-None-Match its ETag: status %d, want 304", r.StatusCode)
			}
		})
	}
	if len(served) != len(files) {
		t.Errorf("served %v, but assets/ holds %d files", served, len(files))
	}
}

func TestOtherPathsAndMethodsAreRefused(t *testing.T) {
	_, ts := newTestServer(t)
	for _, tt := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/index.html", http.StatusNotFound},
		{http.MethodGet, "/ui/", http.StatusNotFound},
		{http.MethodGet, "/ui/nope.js", http.StatusNotFound},
		{http.MethodGet, "/ui/../web.go", http.StatusNotFound},
		{http.MethodGet, "/assets/app.js", http.StatusNotFound},
		{http.MethodPost, "/", http.StatusMethodNotAllowed},
		{http.MethodDelete, "/ui/app.js", http.StatusMethodNotAllowed},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, ts.URL+tt.path, nil)
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.status)
			}
		})
	}
}

// assetText returns the text of every embedded asset by name.
func assetText(t *testing.T) map[string]string {
	t.Helper()
	d, err := New()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{"index.html": string(d.index.body)}
	for name, a := range d.assets {
		out[name] = string(a.body)
	}
	return out
}

func TestThePageLoadsNothingFromOutside(t *testing.T) {
	// The one absolute URL allowed: the SVG namespace, which is a name, not a
	// download.
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	for name, text := range assetText(t) {
		for _, m := range external.FindAllString(text, -1) {
			if m != "http://www.w3.org" {
				t.Errorf("%s refers to %s: the dashboard must load nothing from another origin", name, m)
			}
		}
	}
	// Every file the page or a module loads is embedded.
	d, _ := New()
	served := d.Assets()
	refs := regexp.MustCompile(`(?:src|href)="(/ui/[^"]+)"|from '\./([^']+)'`)
	for name, text := range assetText(t) {
		for _, m := range refs.FindAllStringSubmatch(text, -1) {
			p := m[1]
			if p == "" {
				p = AssetPrefix + m[2]
			}
			if !slices.Contains(served, p) {
				t.Errorf("%s loads %s, which is not embedded", name, p)
			}
		}
	}
	if strings.Contains(assetText(t)["index.html"], "<script>") || strings.Contains(assetText(t)["index.html"], "style=") {
		t.Error("index.html has inline script or style, which the Content-Security-Policy blocks")
	}
}

// openAPIGets returns the paths docs/openapi.yaml documents a GET for.
func openAPIGets(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "docs", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pathRE := regexp.MustCompile(`^  (/\S*):\s*$`)
	var gets []string
	cur := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		switch line := sc.Text(); {
		case pathRE.MatchString(line):
			cur = pathRE.FindStringSubmatch(line)[1]
		case line == "    get:" && cur != "":
			gets = append(gets, cur)
		case line != "" && !strings.HasPrefix(line, " "):
			cur = ""
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return gets
}

func TestScriptsRequestOnlyDocumentedPaths(t *testing.T) {
	documented := openAPIGets(t)
	if len(documented) < 5 {
		t.Fatalf("found only %v in docs/openapi.yaml", documented)
	}
	assets := assetText(t)
	// Every request goes through one fetch call, in app.js's request(), which
	// takes the name of an entry of the API table.
	fetches := 0
	for name, text := range assets {
		if strings.HasSuffix(name, ".js") {
			fetches += strings.Count(text, "fetch(")
			if strings.Contains(text, "XMLHttpRequest") || strings.Contains(text, "EventSource") || strings.Contains(text, "WebSocket") {
				t.Errorf("%s makes requests other than through request()", name)
			}
		}
	}
	if fetches != 1 {
		t.Errorf("%d fetch calls in the scripts, want exactly the one in request()", fetches)
	}
	app := assets["app.js"]
	start := strings.Index(app, "const API = {")
	end := strings.Index(app[max(start, 0):], "};")
	if start < 0 || end < 0 {
		t.Fatal("app.js has no `const API = {...};` table")
	}
	table := app[start : start+end]
	entry := regexp.MustCompile(`(\w+): '([^']*)'`)
	entries := entry.FindAllStringSubmatch(table, -1)
	if len(entries) < 5 {
		t.Fatalf("API table has %d entries: %s", len(entries), table)
	}
	for _, e := range entries {
		if !slices.Contains(documented, e[2]) {
			t.Errorf("API.%s = %s: docs/openapi.yaml documents no GET %s", e[1], e[2], e[2])
		}
	}
	// And no path literal elsewhere in the scripts bypasses the table.
	literal := regexp.MustCompile(`'(/(?:v1|metrics|healthz)[^']*)'`)
	for name, text := range assets {
		if !strings.HasSuffix(name, ".js") {
			continue
		}
		if name == "app.js" {
			text = strings.Replace(text, table, "", 1)
		}
		for _, m := range literal.FindAllStringSubmatch(text, -1) {
			t.Errorf("%s names the path %s outside the API table", name, m[1])
		}
	}
}
