package query

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestEveryBadRequestGetsAJSONError sends one request per way of getting a
// request wrong and checks the status, the field named, the text and the
// error counter.
func TestEveryBadRequestGetsAJSONError(t *testing.T) {
	cfg := testConfig()
	cfg.MaxBatch = 8
	cfg.MaxBodyBytes = 512
	srv, _, ts := newTestServer(t, cfg)
	long := strings.Repeat("1", 200)
	tests := []struct {
		name     string
		method   string
		path     string
		body     string
		status   int
		reason   Reason
		field    string
		contains string
	}{
		// Routing.
		{"an unknown store name", "GET", "/v1/stores/nope/keywrite?key=1", "", 404, ReasonUnknownStore, "store", `no store named "nope"`},
		{"an unknown store id", "GET", "/v1/stores/999/keywrite?key=1", "", 404, ReasonUnknownStore, "store", "999"},
		{"a store id beyond 16 bits", "GET", "/v1/stores/70000", "", 404, ReasonUnknownStore, "store", "70000"},
		{"a Key-Write query of a Key-Increment store", "GET", "/v1/stores/keyincrement/keywrite?key=1", "", 404, ReasonWrongPrimitive, "store", "is a keyincrement store, not a keywrite store"},
		{"a postcard batch on an Append store", "POST", "/v1/stores/append/postcard:batch", `{"keys":["1"]}`, 404, ReasonWrongPrimitive, "store", "not a postcard store"},
		{"a reset of a Key-Write store", "POST", "/v1/stores/keywrite/keyincrement:reset", "", 404, ReasonWrongPrimitive, "store", "not a keyincrement store"},
		{"an append poll of a Postcarding store", "GET", "/v1/stores/postcard/append/0", "", 404, ReasonWrongPrimitive, "store", "is a postcard store, not an append store"},
		{"an unknown path", "GET", "/v1/nope", "", 404, ReasonNoRoute, "", "no endpoint GET"},
		{"an unknown version", "GET", "/v2/stores", "", 404, ReasonNoRoute, "", "no endpoint"},
		{"an unknown store action", "POST", "/v1/stores/keywrite/keywrite:delete", "", 404, ReasonNoRoute, "", "no endpoint"},
		{"a POST to a GET endpoint", "POST", "/v1/stores", "", 405, ReasonMethod, "", "method not allowed"},
		{"a GET of a batch endpoint", "GET", "/v1/stores/keywrite/keywrite:batch", "", 405, ReasonMethod, "", "allowed: POST)"},
		{"a DELETE of a store", "DELETE", "/v1/stores/keywrite", "", 405, ReasonMethod, "", "method not allowed"},

		// Query strings.
		{"a missing key", "GET", "/v1/stores/keywrite/keywrite", "", 400, ReasonInvalid, "key", "key: missing"},
		{"an empty key", "GET", "/v1/stores/keywrite/keywrite?key=", "", 400, ReasonInvalid, "key", "key: missing"},
		{"a key that is no key form", "GET", "/v1/stores/keywrite/keywrite?key=abc", "", 400, ReasonInvalid, "key", "decimal 32-bit"},
		{"a decimal key above 32 bits", "GET", "/v1/stores/keywrite/keywrite?key=4294967296", "", 400, ReasonInvalid, "key", "4294967296"},
		{"a negative key", "GET", "/v1/stores/keywrite/keywrite?key=-1", "", 400, ReasonInvalid, "key", "decimal"},
		{"an odd number of hex digits", "GET", "/v1/stores/keywrite/keywrite?key=0xabc", "", 400, ReasonInvalid, "key", "bad hex"},
		{"an empty hex key", "GET", "/v1/stores/keywrite/keywrite?key=0x", "", 400, ReasonInvalid, "key", "0 bytes"},
		{"a hex key above 64 bytes", "GET", "/v1/stores/keywrite/keywrite?key=0x" + strings.Repeat("ab", 65), "", 400, ReasonInvalid, "key", "65 bytes"},
		{"a 5-tuple with an unknown protocol", "GET", "/v1/stores/keywrite/keywrite?key=foo,1.2.3.4:1,1.2.3.5:2", "", 400, ReasonInvalid, "key", "unknown protocol"},
		{"a 5-tuple mixing IPv4 and IPv6", "GET", "/v1/stores/keywrite/keywrite?key=tcp,1.2.3.4:1,[::1]:2", "", 400, ReasonInvalid, "key", "both be IPv4 or both IPv6"},
		{"a 5-tuple without ports", "GET", "/v1/stores/keywrite/keywrite?key=tcp,1.2.3.4,1.2.3.5", "", 400, ReasonInvalid, "key", "source"},
		{"a key longer than any form", "GET", "/v1/stores/keywrite/keywrite?key=" + long, "", 400, ReasonInvalid, "key", "200 characters"},
		{"a key given twice", "GET", "/v1/stores/keywrite/keywrite?key=1&key=2", "", 400, ReasonInvalid, "key", "given 2 times"},
		{"n above the store's maximum", "GET", "/v1/stores/keywrite/keywrite?key=1&n=5", "", 400, ReasonInvalid, "n", "out of range [1, 4]"},
		{"a negative n", "GET", "/v1/stores/keywrite/keywrite?key=1&n=-1", "", 400, ReasonInvalid, "n", "not an integer in"},
		{"a non-numeric n", "GET", "/v1/stores/keyincrement/keyincrement?key=1&n=two", "", 400, ReasonInvalid, "n", `"two"`},
		{"a huge n", "GET", "/v1/stores/keywrite/keywrite?key=1&n=99999999999999999999", "", 400, ReasonInvalid, "n", "not an integer"},
		{"a threshold above n", "GET", "/v1/stores/keywrite/keywrite?key=1&n=2&threshold=3", "", 400, ReasonInvalid, "threshold", "out of range [0, n=2]"},
		{"a threshold above the default n", "GET", "/v1/stores/keywrite/keywrite?key=1&threshold=5", "", 400, ReasonInvalid, "threshold", "n=4"},
		{"a misspelt parameter", "GET", "/v1/stores/keywrite/keywrite?key=1&thresold=2", "", 400, ReasonInvalid, "thresold", "unknown parameter"},
		{"a threshold for Key-Increment", "GET", "/v1/stores/keyincrement/keyincrement?key=1&threshold=1", "", 400, ReasonInvalid, "threshold", "want key, n"},
		{"an n for Postcarding", "GET", "/v1/stores/postcard/postcard?key=1&n=1", "", 400, ReasonInvalid, "n", "unknown parameter"},
		{"a malformed query string", "GET", "/v1/stores/keywrite/keywrite?key=%zz", "", 400, ReasonInvalid, "", "malformed query string"},
		{"a semicolon in the query string", "GET", "/v1/stores/keywrite/keywrite?key=1;n=2", "", 400, ReasonInvalid, "", "malformed query string"},
		{"parameters to the store list", "GET", "/v1/stores?verbose=1", "", 400, ReasonInvalid, "verbose", "takes none"},
		{"parameters to the notification stream", "GET", "/v1/notifications?store=x", "", 400, ReasonInvalid, "store", "takes none"},
		{"parameters to a reset", "POST", "/v1/stores/append/append:reset?list=1", "", 400, ReasonInvalid, "list", "takes none"},
		{"a body to an Append reset (which resets every list)", "POST", "/v1/stores/append/append:reset", `{"lists":[1]}`, 400, ReasonInvalid, "", "takes no body"},
		{"a body to a Key-Increment reset", "POST", "/v1/stores/keyincrement/keyincrement:reset", "garbage{{{", 400, ReasonInvalid, "", "takes no body"},
		{"parameters to the epoch list", "GET", "/v1/epochs?x=1", "", 400, ReasonInvalid, "x", "takes none"},
		{"at given twice", "GET", "/v1/stores/keywrite/keywrite?key=1&at=1&at=2", "", 400, ReasonInvalid, "at", "given 2 times"},
		{"at with a wait of zero spelt 0.0", "GET", "/v1/stores/append/append/0?at=1&wait=0.0", "", 400, ReasonInvalid, "at", "keeps no history"},
		{"at with a wait", "GET", "/v1/stores/append/append/0?at=1&wait=0.5", "", 400, ReasonInvalid, "at", "drop wait"},
		{"an unknown parameter with a long name", "GET", "/v1/stores?" + long + "=1", "", 400, ReasonInvalid, long[:80] + "...", "(200 bytes, shortened)"},

		// Batch bodies.
		{"an empty body", "POST", "/v1/stores/keywrite/keywrite:batch", "", 400, ReasonInvalid, "", "ends early"},
		{"a body that is not JSON", "POST", "/v1/stores/keywrite/keywrite:batch", "keys=1", 400, ReasonInvalid, "", "not valid JSON"},
		{"a body that is an array", "POST", "/v1/stores/keywrite/keywrite:batch", `["1"]`, 400, ReasonInvalid, "", "want a JSON object"},
		{"a truncated body", "POST", "/v1/stores/keywrite/keywrite:batch", `{"keys": ["1"`, 400, ReasonInvalid, "keys", "ends early"},
		{"a body without keys", "POST", "/v1/stores/keywrite/keywrite:batch", `{"n": 2}`, 400, ReasonInvalid, "keys", "keys: missing"},
		{"an empty key list", "POST", "/v1/stores/keywrite/keywrite:batch", `{"keys": []}`, 400, ReasonInvalid, "keys", "keys: empty"},
		{"keys that are not a list", "POST", "/v1/stores/keywrite/keywrite:batch", `{"keys": "1"}`, 400, ReasonInvalid, "keys", "want an array"},
		{"keys that are null", "POST", "/v1/stores/keywrite/keywrite:batch", `{"keys": null}`, 400, ReasonInvalid, "keys", "want an array"},
		{"a key that is an object", "POST", "/v1/stores/keywrite/keywrite:batch", `{"keys": ["1", {}]}`, 400, ReasonInvalid, "keys[1]", "want a string or an integer"},
		{"a key that is a boolean", "POST", "/v1/stores/keywrite/keywrite:batch", `{"keys": [true]}`, 400, ReasonInvalid, "keys[0]", "want a string"},
		{"a key that is a fraction", "POST", "/v1/stores/keywrite/keywrite:batch", `{"keys": [1.5]}`, 400, ReasonInvalid, "keys[0]", "not a 32-bit decimal key"},
		{"a key that is a negative number", "POST", "/v1/stores/keywrite/keywrite:batch", `{"keys": [-1]}`, 400, ReasonInvalid, "keys[0]", "not a 32-bit decimal key"},
		{"a bad key among good ones", "POST", "/v1/stores/keywrite/keywrite:batch", `{"keys": ["1", "2", "0xzz"]}`, 400, ReasonInvalid, "keys[2]", "bad hex"},
		{"more keys than a batch may carry", "POST", "/v1/stores/keywrite/keywrite:batch", `{"keys": [1,2,3,4,5,6,7,8,9]}`, 400, ReasonInvalid, "keys", "more than 8 in one batch"},
		{"a body above the size limit", "POST", "/v1/stores/keywrite/keywrite:batch", `{"keys": ["` + strings.Repeat("1", 600) + `"]}`, 413, ReasonTooLarge, "", "larger than 512 bytes"},
		{"an unknown body field with a long name", "POST", "/v1/stores/keywrite/keywrite:batch", `{"` + long + `": 1}`, 400, ReasonInvalid, long[:80] + "...", "(200 bytes, shortened)"},
		{"an unknown body field", "POST", "/v1/stores/keywrite/keywrite:batch", `{"keys": ["1"], "copies": 2}`, 400, ReasonInvalid, "copies", `unknown field "copies" (want keys, n, threshold)`},
		{"a field given twice", "POST", "/v1/stores/keywrite/keywrite:batch", `{"keys": ["1"], "keys": ["2"]}`, 400, ReasonInvalid, "keys", "given twice"},
		{"data after the object", "POST", "/v1/stores/keywrite/keywrite:batch", `{"keys": ["1"]} {}`, 400, ReasonInvalid, "", "data after the JSON object"},
		{"an n that is a string", "POST", "/v1/stores/keywrite/keywrite:batch", `{"keys": ["1"], "n": "2"}`, 400, ReasonInvalid, "n", "want an integer"},
		{"an n above the store's maximum in a body", "POST", "/v1/stores/keywrite/keywrite:batch", `{"keys": ["1"], "n": 9}`, 400, ReasonInvalid, "n", "out of range [1, 4]"},
		{"a negative threshold in a body", "POST", "/v1/stores/keywrite/keywrite:batch", `{"keys": ["1"], "threshold": -1}`, 400, ReasonInvalid, "threshold", "non-negative"},
		{"a threshold in a Key-Increment batch", "POST", "/v1/stores/keyincrement/keyincrement:batch", `{"keys": ["1"], "threshold": 1}`, 400, ReasonInvalid, "threshold", "(want keys, n)"},
		{"an n in a Postcarding batch", "POST", "/v1/stores/postcard/postcard:batch", `{"keys": ["1"], "n": 1}`, 400, ReasonInvalid, "n", "(want keys)"},
		{"a bad key in a Postcarding batch", "POST", "/v1/stores/postcard/postcard:batch", `{"keys": ["x"]}`, 400, ReasonInvalid, "keys[0]", "decimal"},

		// Append.
		{"a list that is not a number", "GET", "/v1/stores/append/append/one", "", 400, ReasonInvalid, "list", `"one" is not a list id`},
		{"a list beyond the store's lists", "GET", "/v1/stores/append/append/4", "", 404, ReasonUnknownList, "list", "beyond store \"append\"'s 4 lists (0..3)"},
		{"the head of a list beyond the store's lists", "GET", "/v1/stores/append/append/99/head", "", 404, ReasonUnknownList, "list", "99"},
		{"the head of a list that is not a number", "GET", "/v1/stores/append/append/-1/head", "", 400, ReasonInvalid, "list", "not a list id"},
		{"a cursor that is not a number", "GET", "/v1/stores/append/append/0?cursor=abc", "", 400, ReasonInvalid, "cursor", "not an entry index"},
		{"a cursor ahead of the head", "GET", "/v1/stores/append/append/0?cursor=5", "", 409, ReasonCursorAhead, "cursor", "ahead of the list's head 0"},
		{"an unknown from", "GET", "/v1/stores/append/append/0?from=newest", "", 400, ReasonInvalid, "from", "not oldest or head"},
		{"both cursor and from", "GET", "/v1/stores/append/append/0?cursor=0&from=oldest", "", 400, ReasonInvalid, "from", "either cursor or from"},
		{"a limit of zero", "GET", "/v1/stores/append/append/0?limit=0", "", 400, ReasonInvalid, "limit", "[1, 10000]"},
		{"a limit above the maximum", "GET", "/v1/stores/append/append/0?limit=10001", "", 400, ReasonInvalid, "limit", "[1, 10000]"},
		{"a wait that is no duration", "GET", "/v1/stores/append/append/0?wait=soon", "", 400, ReasonInvalid, "wait", "want a duration"},
		{"a negative wait", "GET", "/v1/stores/append/append/0?wait=-1s", "", 400, ReasonInvalid, "wait", "negative"},
		{"a wait that is not a number", "GET", "/v1/stores/append/append/0?wait=NaN", "", 400, ReasonInvalid, "wait", "want a duration"},
		{"an unknown poll parameter", "GET", "/v1/stores/append/append/0?timeout=1s", "", 400, ReasonInvalid, "timeout", "want cursor, from, limit, wait"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ae apiError
			resp := do(t, ts, tc.method, tc.path, tc.body, &ae)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d (%+v)", resp.StatusCode, tc.status, ae)
			}
			if ae.Field != tc.field {
				t.Errorf("field %q, want %q (%s)", ae.Field, tc.field, ae.Message)
			}
			if !strings.Contains(ae.Message, tc.contains) {
				t.Errorf("error %q does not contain %q", ae.Message, tc.contains)
			}
			if tc.status == 405 && resp.Header.Get("Allow") == "" {
				t.Errorf("405 without an Allow header")
			}
		})
	}
	// Every reason the table exercised was counted.
	var total uint64
	for e := range NumEndpoints {
		for r := range NumReasons {
			total += srv.Stats().Errors[e][r].Load()
		}
	}
	if total != uint64(len(tests)) {
		t.Errorf("%d errors counted, want %d", total, len(tests))
	}
	for _, r := range []Reason{ReasonInvalid, ReasonUnknownStore, ReasonWrongPrimitive, ReasonUnknownList, ReasonNoRoute, ReasonMethod, ReasonCursorAhead, ReasonTooLarge} {
		var n uint64
		for e := range NumEndpoints {
			n += srv.Stats().Errors[e][r].Load()
		}
		if n == 0 {
			t.Errorf("reason %v never counted", r)
		}
	}
}

func TestWaitsFollowTheDocumentedGrammar(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"500ms", 500 * time.Millisecond, true},
		{"1m30s", 90 * time.Second, true},
		{"2.5", 2500 * time.Millisecond, true},
		{".5", 500 * time.Millisecond, true},
		{"1e3", 1000 * time.Second, true},
		{"1e-400", 0, true},                            // underflows to no wait
		{"1e400", 1e6 * time.Second, true},             // longer than any limit
		{"99999999999999999999h", math.MaxInt64, true}, // the same, as a duration
		{"0", 0, true},
		{"10µs", 10 * time.Microsecond, true},
		{"-1s", 0, false},
		{"-0", 0, false},
		{"+1s", 0, false},
		{"0x1p-2", 0, false},
		{"1_000", 0, false},
		{"NaN", 0, false},
		{"Inf", 0, false},
		{"1s ", 0, false},
		{"", 0, false},
		{"1d", 0, false},
		{strings.Repeat("1", 65), 0, false},
	} {
		got, err := parseWait(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseWait(%q) = %v, %v; want %v (accepted: %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
