package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"
)

//go:embed assets
var embedded embed.FS

// contentType returns the media type of an asset from its extension; an
// asset of another kind makes New fail.
func contentType(ext string) (string, bool) {
	switch ext {
	case ".html":
		return "text/html; charset=utf-8", true
	case ".js":
		return "text/javascript; charset=utf-8", true
	case ".css":
		return "text/css; charset=utf-8", true
	case ".svg":
		return "image/svg+xml", true
	}
	return "", false
}

// contentSecurityPolicy allows the page its own scripts, styles, images and
// same-origin requests, and nothing else: no inline script, no other origin,
// no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// IndexPath and AssetPrefix are where the dashboard is served: the page at
// IndexPath, the files it loads under AssetPrefix.
const (
	IndexPath   = "/"
	AssetPrefix = "/ui/"
)

// asset is one embedded file, ready to serve.
type asset struct {
	name  string
	body  []byte
	ctype string
	etag  string
}

// Dashboard serves the embedded page and its assets. It is safe for
// concurrent use.
type Dashboard struct {
	index  *asset
	assets map[string]*asset // by path below AssetPrefix
	// NotFound, if set, answers a path that is no asset (the server's own
	// refusal: a JSON 404, counted); otherwise a plain-text 404.
	NotFound http.Handler
}

// New returns the dashboard over the embedded assets.
func New() (*Dashboard, error) {
	return newDashboard(embedded)
}

func newDashboard(fsys fs.FS) (*Dashboard, error) {
	sub, err := fs.Sub(fsys, "assets")
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	d := &Dashboard{assets: map[string]*asset{}}
	err = fs.WalkDir(sub, ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		ctype, ok := contentType(path.Ext(p))
		if !ok {
			return fmt.Errorf("asset %s: no content type for %q", p, path.Ext(p))
		}
		body, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		a := &asset{name: p, body: body, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		if p == "index.html" {
			d.index = a
		} else {
			d.assets[p] = a
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	if d.index == nil {
		return nil, fmt.Errorf("web: no index.html among the assets")
	}
	return d, nil
}

// Assets returns the paths the dashboard serves: IndexPath and every asset
// under AssetPrefix, sorted.
func (d *Dashboard) Assets() []string {
	paths := []string{IndexPath}
	for p := range d.assets {
		paths = append(paths, AssetPrefix+p)
	}
	slices.Sort(paths)
	return paths
}

// ServeHTTP serves GET and HEAD of IndexPath and of the assets; anything else
// is a 404 (or a 405 for other methods). Responses carry an ETag, so a
// browser revalidates instead of downloading again, and a
// Content-Security-Policy that keeps the page to its own origin.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var a *asset
	switch p := r.URL.Path; {
	case p == IndexPath:
		a = d.index
	case strings.HasPrefix(p, AssetPrefix):
		a = d.assets[strings.TrimPrefix(p, AssetPrefix)]
	}
	if a == nil {
		if d.NotFound != nil {
			d.NotFound.ServeHTTP(w, r)
			return
		}
		http.Error(w, "404 page not found: the dashboard is at /", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "405 method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("ETag", a.etag)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.body))
}

// IsPage reports whether r asks for the dashboard's page or one of its
// assets (GET or HEAD). They carry no data, so an HTTP server that demands
// tokens serves them without one; the page then asks for a token for its
// API calls.
func IsPage(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	return r.URL.Path == IndexPath || strings.HasPrefix(r.URL.Path, AssetPrefix)
}
