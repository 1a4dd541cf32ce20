package query

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
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

// FuzzHandlerOverAnyMemory fills every store's memory with arbitrary bytes,
// as a faulty RDMA peer holding the rkey, or a damaged checkpoint whose
// checksums pass, could leave it, and asks every read endpoint about it:
// answers may be nonsense, but never a panic or a 5xx (an Append header
// with its low watermark above its head once made a poll panic).
func FuzzHandlerOverAnyMemory(f *testing.F) {
	f.Add([]byte("00000000\xff\xff\xff\xff\xff\xff\xff\xff"), "0", uint8(0), uint64(3), uint16(100), int64(-1))
	f.Add(bytes.Repeat([]byte{0xff}, 16), "0x0102", uint8(1), uint64(3), uint16(100), int64(0))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "tcp,1.1.1.1:1,2.2.2.2:2", uint8(2), uint64(1<<63), uint16(1000), int64(7))
	cat := newTestCatalog(f)
	h := New(cat, Config{MaxWait: time.Millisecond, PollInterval: time.Millisecond, MaxBatch: 64, MaxBodyBytes: 4096}, nil).Handler()
	var buf []byte
	f.Fuzz(func(t *testing.T, mem []byte, key string, list uint8, cursor uint64, limit uint16, epoch int64) {
		if len(mem) == 0 {
			return
		}
		for _, st := range cat.Stores() {
			buf = slices.Grow(buf[:0], int(st.Region.Size()))[:st.Region.Size()]
			for i := range buf { // the pattern, varied on each repeat
				buf[i] = mem[i%len(mem)] ^ byte(i/len(mem))
			}
			if err := st.Region.Write(0, buf); err != nil {
				t.Fatal(err)
			}
		}
		k := url.QueryEscape(key)
		for _, rq := range []struct{ method, target, body string }{
			{"GET", "/v1/stores/keywrite/keywrite?key=" + k, ""},
			{"POST", "/v1/stores/keywrite/keywrite:batch", fmt.Sprintf(`{"keys":[%q,"1","2"],"threshold":1}`, key)},
			{"GET", "/v1/stores/int-paths/keywrite?key=" + k, ""},
			{"GET", "/v1/stores/keyincrement/keyincrement?key=" + k, ""},
			{"GET", "/v1/stores/postcard/postcard?key=" + k, ""},
			{"POST", "/v1/stores/postcard/postcard:batch", fmt.Sprintf(`{"keys":[%q,"1","2","3"]}`, key)},
			{"GET", "/v1/stores/append/append", ""},
			{"GET", fmt.Sprintf("/v1/stores/append/append/%d?cursor=%d&limit=%d", list%5, cursor, limit), ""},
			{"GET", fmt.Sprintf("/v1/stores/append/append/%d?from=oldest&limit=%d", list%5, limit), ""},
			{"GET", fmt.Sprintf("/v1/stores/append/append/%d/head", list%5), ""},
			{"GET", "/v1/stores/sketchmerge/sketchmerge/epochs", ""},
			{"GET", fmt.Sprintf("/v1/stores/sketchmerge/sketchmerge?key=%s&epoch=%d", k, epoch), ""},
			{"GET", fmt.Sprintf("/v1/stores/sketchmerge/sketchmerge/norms?epoch=%d", epoch), ""},
			{"GET", "/v1/stores/sketchmerge/sketchmerge/counters", ""},
			{"POST", "/v1/stores/sketchmerge/sketchmerge:topk?k=2", fmt.Sprintf(`{"keys":[%q,"1","2"]}`, key)},
			{"GET", "/v1/stores", ""},
		} {
			req, err := http.NewRequest(rq.method, "http://dta"+rq.target, strings.NewReader(rq.body))
			if err != nil {
				continue
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s %s: %d %s", rq.method, rq.target, rec.Code, rec.Body)
			}
		}
	})
}
