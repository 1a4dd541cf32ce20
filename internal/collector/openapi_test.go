package collector

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/dta-go/dta/internal/httpguard"
	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/primitive/appendlist"
	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/internal/primitive/sketchmerge"
	"github.com/dta-go/dta/internal/region"
	"github.com/dta-go/dta/internal/snapshot"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/sketch"
)

// The tokens of the conformance collector (read and admin roles).
const (
	readToken  = "read-token-0123456789abcdef"
	adminToken = "admin-token-0123456789abcdef"
)

// apiDoc loads docs/openapi.yaml as a client generator would, checks it is a
// valid OpenAPI 3 document, and makes every object schema of a response
// closed (additionalProperties: false), so that a field the server sends
// but the document does not name is a failure, not silently accepted.
func apiDoc(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(filepath.Join("..", "..", "docs", "openapi.yaml"))
	if err != nil {
		t.Fatalf("docs/openapi.yaml does not load: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("docs/openapi.yaml is not a valid OpenAPI document: %v", err)
	}
	closed := map[*openapi3.Schema]bool{}
	var closeSchema func(s *openapi3.Schema)
	closeSchema = func(s *openapi3.Schema) {
		if s == nil || closed[s] {
			return
		}
		closed[s] = true
		if s.Type.Is("object") && len(s.Properties) > 0 && len(s.AllOf) == 0 && s.AdditionalProperties.Schema == nil {
			no := false
			s.AdditionalProperties.Has = &no
		}
		for _, p := range s.Properties {
			closeSchema(p.Value)
		}
		if s.Items != nil {
			closeSchema(s.Items.Value)
		}
		for _, group := range [][]*openapi3.SchemaRef{s.AllOf, s.OneOf, s.AnyOf} {
			for _, r := range group {
				closeSchema(r.Value)
			}
		}
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for _, resp := range op.Responses.Map() {
				for _, mt := range resp.Value.Content {
					if mt.Schema != nil {
						closeSchema(mt.Schema.Value)
					}
				}
			}
		}
	}
	return doc
}

// route finds the document's operation for a request by its path template
// (the document's paths carry colons, e.g. keywrite:batch, which the
// library's routers do not take as literals).
func route(doc *openapi3.T, method, path string) (*routers.Route, map[string]string, error) {
	for tmpl, item := range doc.Paths.Map() {
		var names []string
		re := "^" + regexp.MustCompile(`\\\{[a-z_]+\\\}`).ReplaceAllStringFunc(regexp.QuoteMeta(tmpl), func(m string) string {
			names = append(names, strings.Trim(m, `\{}`))
			return "([^/]+)"
		}) + "$"
		m := regexp.MustCompile(re).FindStringSubmatch(path)
		if m == nil {
			continue
		}
		op := item.GetOperation(method)
		if op == nil {
			return nil, nil, fmt.Errorf("%s has no %s operation in the document", tmpl, method)
		}
		params := map[string]string{}
		for i, n := range names {
			params[n] = m[i+1]
		}
		return &routers.Route{Spec: doc, Path: tmpl, PathItem: item, Method: method, Operation: op}, params, nil
	}
	return nil, nil, fmt.Errorf("no path of the document matches %s", path)
}

// conformanceCollector runs a collector with every kind of store (shrunk),
// durable stores with history, and authentication on, over loopback.
func conformanceCollector(t *testing.T) *Collector {
	t.Helper()
	cfgs := store.DefaultConfigs()
	cfgs[0].Slots, cfgs[1].Slots = 1024, 1024
	cfgs[2].Chunks = 256
	cfgs[3].Lists, cfgs[3].Capacity = 4, 64
	cfgs[4].Columns = 256
	cfgs = append(cfgs, store.Config{Name: "tea", ID: 20, Primitive: "teatable", Buckets: 64, ValueSize: 8})
	descs, err := store.DescribeAll(cfgs)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := httpguard.ParseTokens([]byte(readToken + " read\n" + adminToken + " admin\n"))
	if err != nil {
		t.Fatal(err)
	}
	dur := snapshot.DefaultConfig()
	dur.Dir, dur.Interval, dur.History = t.TempDir(), time.Hour, 4
	c, err := New(Config{
		HTTP:       "127.0.0.1:0",
		Region:     region.Config{HugePages: region.HugePagesOff},
		Stores:     descs,
		Durability: &dur,
		Name:       "conformance",
		Guard:      httpguard.Config{Access: httpguard.Access{Tokens: tokens, Open: []string{"/healthz"}}},
	}, nil)
	if err != nil {
		if runtime.GOOS != "linux" {
			t.Skipf("collectors are not supported on %s: %v", runtime.GOOS, err)
		}
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		c.Close()
	})
	return c
}

// filledCollector is conformanceCollector with its stores filled and one
// checkpoint taken (epoch 1, for ?at=); it returns the API's base URL too.
func filledCollector(t *testing.T) (*Collector, string) {
	t.Helper()
	c := conformanceCollector(t)
	fill(t, c.Catalog())
	if _, err := c.Durable().Checkpoint(); err != nil {
		t.Fatal(err)
	}
	return c, "http://" + c.HTTPAddr().String()
}

// fill writes into every report-fed store through the primitives' own
// translation, as a translator would: key 42 in each, two paths, entries in
// list 1, an epoch of the sketch with three keys, and a notification.
func fill(t *testing.T, cat *store.Catalog) {
	t.Helper()
	b := memop.NewBatch(64, 4096)
	apply := func() {
		t.Helper()
		if err := cat.Apply(b.Ops); err != nil {
			t.Fatal(err)
		}
		b.Reset()
	}
	key := keywrite.CompatKey(42)
	kw := cat.ByName("keywrite")
	kws := kw.KeyWrite.Spec()
	if err := kws.Translate(b, kw.Index, key[:], []byte{0, 0, 0, 7}, 2, true); err != nil {
		t.Fatal(err)
	}
	apply()
	ki := cat.ByName("keyincrement")
	kis := ki.KeyIncrement.Spec()
	kis.Translate(b, ki.Index, key[:], 5)
	apply()

	pc := cat.ByName("postcard")
	pcs := pc.Postcard.Spec()
	cache, err := postcard.NewCache(64)
	if err != nil {
		t.Fatal(err)
	}
	pkey := postcard.CompatKey(42)
	for hop := 1; hop <= 3; hop++ {
		if err := cache.Add(&pcs, pc.Index, pkey[:], hop, 3, uint32(100+hop), false, 0, b, cat); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cache.Flush(1, 0, b, cat); err != nil {
		t.Fatal(err)
	}

	ap := cat.ByName("append")
	aw, err := appendlist.NewWriter(ap.Append.Spec(), ap.Index)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := aw.Add(1, []byte{0, 0, 0, byte(i)}, false, 0, b, cat); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := aw.Flush(0, 0, b, cat); err != nil {
		t.Fatal(err)
	}

	sm := cat.ByName("sketchmerge")
	sms := sm.SketchMerge.Spec()
	sketchmerge.NewOpener(&sms).Open(b, sm.Index, 3)
	apply()
	sk, err := sketch.New(sms.Geometry)
	if err != nil {
		t.Fatal(err)
	}
	for k := range 30 {
		sk.Update(binary.BigEndian.AppendUint32(nil, uint32(k%3)), int64(k%3+1))
	}
	if err := sk.Runs(64, func(r sketch.Run) error {
		var v []byte
		for _, c := range r.Counters {
			v = binary.BigEndian.AppendUint64(v, uint64(c))
		}
		sms.Add(b, sm.Index, &sketchmerge.Run{Epoch: 3, Row: r.Row, Column: r.Column, Counters: v})
		defer b.Reset()
		return cat.Apply(b.Ops)
	}); err != nil {
		t.Fatal(err)
	}
	sketchmerge.NewOpener(&sms).Open(b, sm.Index, 4) // closes epoch 3
	apply()
}

// brief makes a validation error name the value and the rule it breaks,
// without printing the whole schema.
var brief = []openapi3.SchemaValidationOption{openapi3.DisableSchemaErrorDetails()}

// exchange is one request of the conformance run and what it must get.
type exchange struct {
	name   string
	method string
	path   string
	body   string
	token  string // "" none
	origin string // an Origin header (a browser's cross-site POST)
	status int
	// valid: the request itself follows the document (checked too).
	valid bool
}

func TestEveryAnswerMatchesTheOpenAPIDocument(t *testing.T) {
	doc := apiDoc(t)
	c, base := filledCollector(t)
	manyKeys := `{"keys":[` + strings.Repeat(`"0x`+strings.Repeat("ab", 64)+`",`, 40000) + `1]}`

	r, a := readToken, adminToken
	cases := []exchange{
		{"stores are listed", "GET", "/v1/stores", "", r, "", 200, true},
		{"stores are listed as they were at an epoch", "GET", "/v1/stores?at=1", "", r, "", 200, true},
		{"a store is described", "GET", "/v1/stores/keywrite", "", r, "", 200, true},
		{"a sketch store is described", "GET", "/v1/stores/sketchmerge", "", r, "", 200, true},
		{"a TEA table store is described", "GET", "/v1/stores/tea", "", r, "", 200, true},
		{"a store is described by its id", "GET", "/v1/stores/2", "", r, "", 200, true},
		{"an unknown store is not found", "GET", "/v1/stores/nosuch", "", r, "", 404, true},
		{"an unknown parameter is refused", "GET", "/v1/stores?bogus=1", "", r, "", 400, false},
		{"no token is unauthorized", "GET", "/v1/stores", "", "", "", 401, false},
		{"a wrong token is unauthorized", "GET", "/v1/stores", "", "not-a-configured-token-123", "", 401, false},

		{"a Key-Write key is found", "GET", "/v1/stores/keywrite/keywrite?key=42", "", r, "", 200, true},
		{"a Key-Write key is found at an epoch", "GET", "/v1/stores/keywrite/keywrite?key=42&at=1", "", r, "", 200, true},
		{"a Key-Write key is empty", "GET", "/v1/stores/keywrite/keywrite?key=43&n=2&threshold=1", "", r, "", 200, true},
		{"a 5-tuple key is looked up", "GET", "/v1/stores/keywrite/keywrite?key=" + "tcp,10.0.0.1:1,10.0.0.2:2", "", r, "", 200, true},
		{"a malformed key is refused", "GET", "/v1/stores/keywrite/keywrite?key=0xz", "", r, "", 400, false},
		{"a missing key is refused", "GET", "/v1/stores/keywrite/keywrite", "", r, "", 400, false},
		{"n out of range is refused", "GET", "/v1/stores/keywrite/keywrite?key=1&n=99", "", r, "", 400, false},
		{"an epoch not kept is not found", "GET", "/v1/stores/keywrite/keywrite?key=42&at=99", "", r, "", 404, true},
		{"an endpoint of another primitive is not found", "GET", "/v1/stores/keyincrement/keywrite?key=1", "", r, "", 404, true},
		{"Key-Write keys are looked up in a batch", "POST", "/v1/stores/keywrite/keywrite:batch", `{"keys":[42,"43","0x0000002a"],"n":2,"threshold":1}`, r, "", 200, true},
		{"an empty batch is refused", "POST", "/v1/stores/keywrite/keywrite:batch", `{"keys":[]}`, r, "", 400, false},
		{"a batch that is not JSON is refused", "POST", "/v1/stores/keywrite/keywrite:batch", `{"keys":`, r, "", 400, false},
		{"a body too large is refused", "POST", "/v1/stores/keywrite/keywrite:batch", manyKeys, r, "", 413, false},

		{"a Key-Increment count is read", "GET", "/v1/stores/keyincrement/keyincrement?key=42", "", r, "", 200, true},
		{"a Key-Increment count is read from n counters", "GET", "/v1/stores/keyincrement/keyincrement?key=42&n=2", "", r, "", 200, true},
		{"Key-Increment counts are read in a batch", "POST", "/v1/stores/keyincrement/keyincrement:batch", `{"keys":[42,7],"n":1}`, r, "", 200, true},
		{"a reset with a read token is forbidden", "POST", "/v1/stores/keyincrement/keyincrement:reset", "", r, "", 403, true},
		{"a cross-site reset is forbidden", "POST", "/v1/stores/keyincrement/keyincrement:reset", "", a, "http://evil.example", 403, true},
		{"a reset with a body is refused", "POST", "/v1/stores/keyincrement/keyincrement:reset", `{"keys":[1]}`, a, "", 400, false},

		{"a path is read", "GET", "/v1/stores/postcard/postcard?key=42", "", r, "", 200, true},
		{"an unknown path is empty", "GET", "/v1/stores/postcard/postcard?key=9", "", r, "", 200, true},
		{"paths are read in a batch", "POST", "/v1/stores/postcard/postcard:batch", `{"keys":[42,9]}`, r, "", 200, true},

		{"Append heads are paged", "GET", "/v1/stores/append/append?first=0&limit=2", "", r, "", 200, true},
		{"the last page of Append heads", "GET", "/v1/stores/append/append?first=2", "", r, "", 200, true},
		{"an Append list is polled from its oldest entry", "GET", "/v1/stores/append/append/1?from=oldest&limit=3", "", r, "", 200, true},
		{"an Append list is polled from a cursor", "GET", "/v1/stores/append/append/1?cursor=2", "", r, "", 200, true},
		{"an Append poll waits for nothing new", "GET", "/v1/stores/append/append/1?wait=10ms", "", r, "", 200, true},
		{"an Append poll at an epoch", "GET", "/v1/stores/append/append/1?from=oldest&at=1", "", r, "", 200, true},
		{"a cursor ahead of the head conflicts", "GET", "/v1/stores/append/append/1?cursor=1000", "", r, "", 409, true},
		{"a list out of range is not found", "GET", "/v1/stores/append/append/4", "", r, "", 404, true},
		{"a list head is read", "GET", "/v1/stores/append/append/1/head", "", r, "", 200, true},
		{"a wait at an epoch is refused", "GET", "/v1/stores/append/append/1?wait=1s&at=1", "", r, "", 400, true},

		{"a sketch estimate is read", "GET", "/v1/stores/sketchmerge/sketchmerge?key=2", "", r, "", 200, true},
		{"a sketch estimate of an epoch is read", "GET", "/v1/stores/sketchmerge/sketchmerge?key=2&epoch=3", "", r, "", 200, true},
		{"top keys are ranked", "POST", "/v1/stores/sketchmerge/sketchmerge:topk?k=2&epoch=3", `{"keys":[0,1,"2"]}`, r, "", 200, true},
		{"norms are read", "GET", "/v1/stores/sketchmerge/sketchmerge/norms?epoch=3", "", r, "", 200, true},
		{"epochs of a sketch are listed", "GET", "/v1/stores/sketchmerge/sketchmerge/epochs", "", r, "", 200, true},
		{"counters of a sketch epoch are read", "GET", "/v1/stores/sketchmerge/sketchmerge/counters?epoch=3", "", r, "", 200, true},
		{"an epoch out of range is refused", "GET", "/v1/stores/sketchmerge/sketchmerge/norms?epoch=-1", "", r, "", 400, false},

		{"kept epochs are listed", "GET", "/v1/epochs", "", r, "", 200, true},
		{"metrics are served", "GET", "/metrics", "", r, "", 200, true},
		{"health is served without a token", "GET", "/healthz", "", "", "", 200, true},

		// Last: they change state.
		{"a Key-Increment store is reset", "POST", "/v1/stores/keyincrement/keyincrement:reset", "", a, "", 200, true},
		{"an Append store is reset", "POST", "/v1/stores/append/append:reset", "", a, "", 200, true},
	}
	ctx := context.Background()
	covered := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			req, err := http.NewRequestWithContext(ctx, tc.method, base+tc.path, body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
				req.Header.Set("Sec-Fetch-Site", "cross-site")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("%s %s: status %d, want %d: %.300s", tc.method, tc.path, resp.StatusCode, tc.status, raw)
			}
			// The request as a client built from the document sends it.
			check, err := http.NewRequest(tc.method, base+tc.path, bytes.NewReader([]byte(tc.body)))
			if err != nil {
				t.Fatal(err)
			}
			check.Header = req.Header.Clone()
			rt, params, err := route(doc, tc.method, check.URL.Path)
			if err != nil {
				t.Fatal(err)
			}
			in := &openapi3filter.RequestValidationInput{
				Request: check, PathParams: params, Route: rt,
				Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true,
					RejectWhenRequestBodyNotSpecified: true, SchemaValidationOptions: brief},
			}
			if tc.valid {
				if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
					t.Errorf("the request does not follow the document: %v", err)
				}
			}
			out := &openapi3filter.ResponseValidationInput{
				RequestValidationInput: in,
				Status:                 resp.StatusCode,
				Header:                 resp.Header,
				Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, SchemaValidationOptions: brief},
			}
			out.SetBodyBytes(raw)
			if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
				t.Errorf("%s %s → %d does not match the document: %v\nbody: %.600s", tc.method, tc.path, resp.StatusCode, err, raw)
			}
			if resp.StatusCode/100 == 2 {
				covered[rt.Operation.OperationID] = true
			}
		})
	}

	t.Run("a notification stream's lines are Notifications", func(t *testing.T) {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(sctx, "GET", base+"/v1/notifications", nil)
		req.Header.Set("Authorization", "Bearer "+r)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		kw := c.Catalog().ByName("keywrite")
		spec := kw.KeyWrite.Spec()
		b := memop.NewBatch(8, 64)
		key := keywrite.CompatKey(7)
		if err := spec.Translate(b, kw.Index, key[:], []byte{0, 0, 0, 1}, 1, true); err != nil {
			t.Fatal(err)
		}
		if err := c.Catalog().Apply(b.Ops); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(resp.Body).ReadBytes('\n')
		if err != nil {
			t.Fatalf("no notification: %v", err)
		}
		rt, params, err := route(doc, "GET", "/v1/notifications")
		if err != nil {
			t.Fatal(err)
		}
		out := &openapi3filter.ResponseValidationInput{
			RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: rt},
			Status:                 resp.StatusCode,
			Header:                 resp.Header,
			Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, SchemaValidationOptions: brief},
		}
		out.SetBodyBytes(line)
		if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
			t.Errorf("a notification does not match the document: %v\nline: %s", err, line)
		}
		covered[rt.Operation.OperationID] = true
	})

	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if !covered[op.OperationID] {
				t.Errorf("operation %s was not answered with a 2xx in this run", op.OperationID)
			}
		}
	}
}

// ndjsonDecoder lets the validator read one line of a newline-delimited JSON
// stream as the document's schema for it.
func ndjsonDecoder(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	line, err := bufio.NewReader(body).ReadBytes('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(line, &v); err != nil {
		return nil, fmt.Errorf("a line of the stream is not JSON: %w", err)
	}
	return v, nil
}

func TestMain(m *testing.M) {
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", ndjsonDecoder)
	os.Exit(m.Run())
}

// TestAPIExamplesMatchTheDocument reads every curl example of docs/API.md
// and the JSON answer shown after it, and checks both against
// docs/openapi.yaml as the conformance tests check the server: the request
// follows the document, and the answer is one the operation documents.
func TestAPIExamplesMatchTheDocument(t *testing.T) {
	doc := apiDoc(t)
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "API.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("```sh\n([^`]*)```\n```json\n([^`]*)```").FindAllStringSubmatch(string(raw), -1)
	urlRE := regexp.MustCompile(`https?://127\.0\.0\.1:8040(/[^\s'"]*)`)
	bodyRE := regexp.MustCompile(`(?s)-d '([^']*)'`)
	methodRE := regexp.MustCompile(`-X ([A-Z]+)`)
	checked := 0
	for _, b := range blocks {
		cmd, answer := strings.ReplaceAll(b[1], "\\\n", " "), b[2]
		u := urlRE.FindStringSubmatch(cmd)
		if u == nil || !strings.Contains(cmd, "curl") {
			continue
		}
		method, body := http.MethodGet, ""
		if m := bodyRE.FindStringSubmatch(cmd); m != nil {
			method, body = http.MethodPost, m[1]
		}
		if m := methodRE.FindStringSubmatch(cmd); m != nil {
			method = m[1]
		}
		req, err := http.NewRequest(method, "http://127.0.0.1:8040"+u[1], strings.NewReader(body))
		if err != nil {
			t.Errorf("%s: %v", u[1], err)
			continue
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rt, params, err := route(doc, method, req.URL.Path)
		if err != nil {
			t.Errorf("example %s %s: %v", method, u[1], err)
			continue
		}
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: rt,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
				RejectWhenRequestBodyNotSpecified: true, SchemaValidationOptions: brief}}
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			t.Errorf("example %s %s: the request does not follow the document: %v", method, u[1], err)
		}
		// The answer shown is one of the operation's documented answers.
		var errs []string
		matched := false
		for code, resp := range rt.Operation.Responses.Map() {
			if resp.Value == nil || resp.Value.Content.Get("application/json") == nil {
				continue
			}
			var status int
			if _, err := fmt.Sscan(code, &status); err != nil {
				continue
			}
			hdr := http.Header{"Content-Type": {"application/json"}}
			out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: hdr,
				Options: &openapi3filter.Options{IncludeResponseStatus: true, SchemaValidationOptions: brief}}
			out.SetBodyBytes([]byte(answer))
			if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
				errs = append(errs, code+": "+err.Error())
				continue
			}
			matched = true
			break
		}
		if !matched {
			t.Errorf("example %s %s: the answer shown matches no documented answer:\n%s\n%s", method, u[1], answer, strings.Join(errs, "\n"))
		}
		checked++
	}
	if checked < 15 {
		t.Errorf("%d examples checked; docs/API.md has more (the pattern no longer finds them?)", checked)
	}
	t.Logf("%d examples checked", checked)
}
