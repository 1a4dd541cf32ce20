package query

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// FuzzParsers feeds arbitrary query strings and bodies to every parser: none
// may panic, and a successful parse must respect the bounds it promises.
func FuzzParsers(f *testing.F) {
	for _, s := range []struct{ query, body string }{
		{"key=1&n=2&threshold=1", `{"keys":["1","0x0a",3],"n":2,"threshold":1}`},
		{"key=tcp,10.0.0.1:1,10.0.0.2:2", `{"keys":["udp,[::1]:53,[::2]:53"]}`},
		{"cursor=18446744073709551615&limit=10000&wait=30s", `{"keys":[1.5]}`},
		{"from=oldest&wait=0.5", `{"keys":[],"n":-1}`},
		{"key=%zz", `{"keys":[true,null,{}]}`},
		{"wait=1e308", `{"keys":["1"]}{}`},
		{"key=0x" + strings.Repeat("ff", 64), `[`},
	} {
		f.Add(s.query, []byte(s.body))
	}
	cfg := DefaultConfig()
	f.Fuzz(func(t *testing.T, query string, body []byte) {
		if q, err := parseQuery(query, "key", "n", "threshold"); err == nil {
			if k, err := parseKey("key", q.Get("key")); err == nil && (len(k.Bytes) == 0 || len(k.Bytes) > 64) {
				t.Fatalf("key of %d bytes accepted", len(k.Bytes))
			}
			if n, err := intParam(q, "n", 0, maxParam, 0); err == nil {
				if n, err := redundancy(n, 0, 4, "redundancy", true); err == nil && (n < 1 || n > 4) {
					t.Fatalf("n %d accepted", n)
				}
			}
		}
		if p, err := parseAppendQuery(query, &cfg); err == nil {
			if p.limit < 1 || p.limit > cfg.MaxEntries || p.wait < 0 || p.wait > cfg.MaxWait {
				t.Fatalf("append params %+v accepted", p)
			}
		}
		_, _ = parseList(query)
		_, _ = parseWait(query)
		for _, allow := range []batchFields{{}, {n: true}, {n: true, threshold: true}} {
			req, err := decodeBatch(bytes.NewReader(body), 16, allow)
			if err != nil {
				if err.status < 400 || err.status > 499 || err.Message == "" {
					t.Fatalf("batch error %+v", err)
				}
				continue
			}
			if len(req.Keys) == 0 || len(req.Keys) > 16 || (!allow.n && req.N != 0) || (!allow.threshold && req.Threshold != 0) {
				t.Fatalf("batch %+v accepted with %+v", req, allow)
			}
			_, _ = parseKeys(req.Keys)
		}
	})
}

// FuzzHandler sends arbitrary requests through the whole handler over a real
// catalogue: no panic, never a 5xx, and every answer is JSON (NDJSON for the
// notification stream).
func FuzzHandler(f *testing.F) {
	for _, s := range []struct{ method, target, body string }{
		{"GET", "/v1/stores", ""},
		{"GET", "/v1/stores/keywrite/keywrite?key=1&n=2", ""},
		{"POST", "/v1/stores/1/keywrite:batch", `{"keys":["1",2],"threshold":1}`},
		{"GET", "/v1/stores/keyincrement/keyincrement?key=0x0102", ""},
		{"POST", "/v1/stores/keyincrement/keyincrement:reset", ""},
		{"POST", "/v1/stores/postcard/postcard:batch", `{"keys":["tcp,1.1.1.1:1,2.2.2.2:2"]}`},
		{"GET", "/v1/stores/append/append/3?cursor=0&limit=5&wait=1s", ""},
		{"GET", "/v1/stores/append/append/1/head", ""},
		{"POST", "/v1/stores/4/append:reset", ""},
		{"GET", "/v1/notifications", ""},
		{"PUT", "/v1/stores/3/", "x"},
	} {
		f.Add(s.method, s.target, []byte(s.body))
	}
	cat := newTestCatalog(f)
	cfg := Config{MaxWait: time.Millisecond, PollInterval: time.Millisecond, MaxBatch: 64, MaxBodyBytes: 4096}
	h := New(cat, cfg, nil).Handler()
	f.Fuzz(func(t *testing.T, method, target string, body []byte) {
		if !strings.HasPrefix(target, "/") {
			target = "/" + target
		}
		req, err := http.NewRequest(method, "http://dta"+target, bytes.NewReader(body))
		if err != nil {
			return // not a request net/http would hand to a handler
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req.WithContext(ctx))
		if rec.Code >= 500 {
			t.Fatalf("%s %q: status %d: %s", method, target, rec.Code, rec.Body)
		}
		switch ct := rec.Header().Get("Content-Type"); {
		case rec.Body.Len() == 0 && ctx.Err() != nil:
			// The "client" went away during a long poll: nobody to answer.
		case ct == "application/json":
			var v map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
				t.Fatalf("%s %q: body %q is not a JSON object: %v", method, target, rec.Body, err)
			}
			if rec.Code >= 400 && v["error"] == nil {
				t.Fatalf("%s %q: status %d without an error: %s", method, target, rec.Code, rec.Body)
			}
		case ct == "application/x-ndjson":
		case rec.Code == http.StatusMovedPermanently || rec.Code == http.StatusTemporaryRedirect:
			// ServeMux cleaning the path (//, /./, ..).
		default:
			t.Fatalf("%s %q: status %d, content type %q: %s", method, target, rec.Code, ct, rec.Body)
		}
	})
}
