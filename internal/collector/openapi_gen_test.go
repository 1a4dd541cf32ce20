package collector

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
)

// paramValues are the values tried for a parameter: the document's own
// bounds and enums, one past them, and values of the wrong form, as an
// OpenAPI-driven fuzzer (schemathesis and the like) derives them.
func paramValues(p *openapi3.Parameter) []string {
	switch p.Name {
	case "key":
		return []string{"42", "0", "4294967295", "0x0102", "0x" + strings.Repeat("ab", 64), "tcp,10.0.0.1:1,10.0.0.2:2",
			"udp,[2001:db8::1]:5,[2001:db8::2]:6", "", "0x", "0xzz", "-1", "4294967296", "x", strings.Repeat("9", 5000)}
	case "at":
		return []string{"1", "0", "99", "-1", "2026-11-24T10:05:00Z", "23:59", "23:59:59", "25:00", "garbage", ""}
	case "wait": // short ones only: a valid wait holds the request that long (TestWaitsFollowTheDocumentedGrammar has the others)
		return []string{"1ms", "0.001", ".001", "1e-3", "1e-400", "0", "-1s", "+1ms", "0x1p-20", "abc", "", "NaN", "Inf"}
	case "store":
		return []string{"keywrite", "keyincrement", "postcard", "append", "sketchmerge", "tea", "1", "65535", "nosuch", "%00"}
	}
	s := p.Schema.Value
	var vs []string
	switch {
	case s.Type.Is("integer"):
		vs = []string{"0", "1", "7", "-1", "abc", "1.5", "", "9223372036854775808"}
		if s.Min != nil {
			vs = append(vs, fmt.Sprint(int64(*s.Min)), fmt.Sprint(int64(*s.Min)-1))
		}
		if s.Max != nil {
			vs = append(vs, fmt.Sprint(int64(*s.Max)), fmt.Sprint(int64(*s.Max)+1))
		}
		if s.Format == "int32" {
			vs = append(vs, "2147483647", "2147483648")
		}
	case s.Type.Is("string"):
		vs = []string{"", "x"}
		for _, e := range s.Enum {
			vs = append(vs, fmt.Sprint(e))
		}
	}
	return vs
}

// bodies are the request bodies tried for an operation: for one that takes
// none, none and a few; for one that takes JSON, variants of its schema and
// bodies that break it.
func bodies(method string, op *openapi3.Operation) []string {
	if op.RequestBody == nil {
		if method == http.MethodGet { // a GET's body has no meaning; fuzzers send none
			return []string{""}
		}
		return []string{"", "{}", `{"lists":[1]}`}
	}
	out := []string{
		`{"keys":[42]}`, `{"keys":["42","0x0102",7]}`, `{"keys":[0,4294967295]}`,
		`{}`, `{"keys":[]}`, `{"keys":[-1]}`, `{"keys":[4294967296]}`, `{"keys":[1.5]}`, `{"keys":[null]}`,
		`{"keys":"42"}`, `{"keys":[[1]]}`, `[]`, `null`, `"keys"`, `{"keys":[1],"bogus":1}`, `{"keys":`, ``,
		`{"keys":[1],"keys":[2]}`,
	}
	props := map[string]bool{}
	var walk func(s *openapi3.Schema)
	walk = func(s *openapi3.Schema) {
		for n := range s.Properties {
			props[n] = true
		}
		for _, r := range s.AllOf {
			walk(r.Value)
		}
	}
	walk(op.RequestBody.Value.Content.Get("application/json").Schema.Value)
	for _, f := range []string{"n", "threshold"} {
		if props[f] {
			for _, v := range []string{"0", "1", "2", "8", "9", "-1", "1.5", `"2"`, "null"} {
				out = append(out, `{"keys":[42],"`+f+`":`+v+`}`)
			}
		}
	}
	return out
}

// TestGeneratedRequestsGetDocumentedAnswers sends every operation of
// docs/openapi.yaml the parameter values and bodies an OpenAPI-driven fuzzer
// would derive from it, one varied at a time, against every kind of store,
// and checks each answer as such a tool does: never a server error, a status
// the operation documents with a body that matches its schema, and a 4xx for
// every request the document says is invalid.
func TestGeneratedRequestsGetDocumentedAnswers(t *testing.T) {
	doc := apiDoc(t)
	_, base := filledCollector(t)
	ctx := context.Background()

	type request struct {
		method, path, query, body string
	}
	var reqs []request
	paths := doc.Paths.InMatchingOrder()
	sort.Strings(paths)
	for _, tmpl := range paths {
		item := doc.Paths.Value(tmpl)
		for method, op := range item.Operations() {
			if op.OperationID == "notifications" { // a stream: TestEveryAnswerMatchesTheOpenAPIDocument reads it
				continue
			}
			params := slices.Concat(item.Parameters, op.Parameters)
			// A baseline request: each path parameter at its first value,
			// each required query parameter at its first value.
			pathVals := map[string]string{}
			base := url.Values{}
			for _, pr := range params {
				p := pr.Value
				switch {
				case p.In == "path" && p.Name == "list":
					pathVals[p.Name] = "1"
				case p.In == "path":
					pathVals[p.Name] = paramValues(p)[0]
				case p.In == "query" && p.Required:
					base.Set(p.Name, paramValues(p)[0])
				}
			}
			// The store that the endpoint reads, when its path names a
			// primitive.
			for _, prim := range []string{"keywrite", "keyincrement", "postcard", "append", "sketchmerge"} {
				if strings.HasPrefix(tmpl, "/v1/stores/{store}/"+prim) {
					pathVals["store"] = prim
				}
			}
			expand := func(pv map[string]string) string {
				p := tmpl
				for k, v := range pv {
					p = strings.ReplaceAll(p, "{"+k+"}", v)
				}
				return p
			}
			body := bodies(method, op)[0]
			if op.RequestBody == nil {
				body = ""
			}
			reqs = append(reqs, request{method, expand(pathVals), base.Encode(), body})
			for _, pr := range params {
				p := pr.Value
				vals := paramValues(p)
				if p.Name == "list" {
					vals = []string{"0", "3", "4", "-1", "abc", "2147483647", "99999999999"}
				}
				for _, v := range vals {
					switch p.In {
					case "path":
						pv := maps.Clone(pathVals)
						pv[p.Name] = v
						reqs = append(reqs, request{method, expand(pv), base.Encode(), body})
					case "query":
						q := url.Values{}
						for k, vs := range base {
							q[k] = vs
						}
						q.Set(p.Name, v)
						reqs = append(reqs, request{method, expand(pathVals), q.Encode(), body})
					}
				}
			}
			for _, b := range bodies(method, op) {
				reqs = append(reqs, request{method, expand(pathVals), base.Encode(), b})
			}
		}
	}
	// Resets last: they empty stores the others read.
	slices.SortStableFunc(reqs, func(a, b request) int {
		ra, rb := strings.Contains(a.path, ":reset"), strings.Contains(b.path, ":reset")
		switch {
		case ra == rb:
			return 0
		case ra:
			return 1
		}
		return -1
	})

	failures := 0
	for _, rq := range reqs {
		if failures >= 40 {
			t.Fatalf("more than 40 answers disagree with the document; stopping")
		}
		target := base + rq.path
		if rq.query != "" {
			target += "?" + rq.query
		}
		var body io.Reader
		if rq.body != "" {
			body = strings.NewReader(rq.body)
		}
		req, err := http.NewRequestWithContext(ctx, rq.method, target, body)
		if err != nil {
			t.Fatalf("%s %s: %v", rq.method, target, err)
		}
		if rq.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", rq.method, target, err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		what := fmt.Sprintf("%s %s body %.80q → %d %.200s", rq.method, target, rq.body, resp.StatusCode, raw)

		check, _ := http.NewRequest(rq.method, target, strings.NewReader(rq.body))
		check.Header = req.Header.Clone()
		rt, params, err := route(doc, rq.method, check.URL.Path)
		if err != nil {
			// A path parameter of the wrong form ("a/b") may match no template.
			if resp.StatusCode/100 != 4 {
				t.Errorf("%s: matches no operation, yet not a 4xx", what)
				failures++
			}
			continue
		}
		in := &openapi3filter.RequestValidationInput{
			Request: check, PathParams: params, Route: rt,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
				RejectWhenRequestBodyNotSpecified: true, SchemaValidationOptions: brief},
		}
		reqErr := openapi3filter.ValidateRequest(ctx, in)
		switch {
		case resp.StatusCode >= 500:
			t.Errorf("%s: a server error", what)
			failures++
		case reqErr == nil && resp.StatusCode == 400 && !storeBound(raw):
			t.Errorf("%s: the document says the request is valid, yet it was refused", what)
			failures++
		case reqErr != nil && resp.StatusCode/100 != 4:
			t.Errorf("%s: the document says the request is invalid (%v), yet it was not refused", what, reqErr)
			failures++
		}
		out := &openapi3filter.ResponseValidationInput{
			RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
			Options: &openapi3filter.Options{IncludeResponseStatus: true, SchemaValidationOptions: brief},
		}
		out.SetBodyBytes(raw)
		if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
			t.Errorf("%s: the answer does not match the document: %v", what, err)
			failures++
		}
	}
	t.Logf("%d requests over %d paths", len(reqs), len(paths))
}

// storeBound reports whether a 400 names a bound that depends on the store
// (n and threshold at most its redundancy, first below its lists) or a
// rule a schema cannot state (a member of the body given twice): the
// document says so in words, not in the schema.
func storeBound(body []byte) bool {
	var e struct{ Error, Field string }
	if json.Unmarshal(body, &e) != nil {
		return false
	}
	return e.Field == "n" || e.Field == "threshold" || e.Field == "first" || strings.HasSuffix(e.Error, "given twice")
}
