package query

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/dta-go/dta/internal/primitive/keywrite"
	"github.com/dta-go/dta/internal/primitive/postcard"
	"github.com/dta-go/dta/wire/dta"
)

// maxParam bounds integer parameters before their range is checked against
// the store.
const maxParam = 1 << 20

// maxKeyText bounds the text of one key: longer than any form ParseKey
// accepts (0x + 128 hex digits; an IPv6 5-tuple).
const maxKeyText = 160

// parseKey parses a key given as text (see dta.ParseKey).
func parseKey(field, s string) (dta.Key, *apiError) {
	switch {
	case s == "":
		return dta.Key{}, invalid(field, "%s: missing (decimal 32-bit key, 0x-prefixed hex bytes, or PROTO,SRC:PORT,DST:PORT)", field)
	case len(s) > maxKeyText:
		return dta.Key{}, invalid(field, "%s: %d characters is longer than any key form", field, len(s))
	}
	k, err := dta.ParseKey(s)
	if err != nil {
		if msg := err.Error(); field == "key" && strings.HasPrefix(msg, "key ") {
			return dta.Key{}, invalid(field, "%s", msg)
		}
		return dta.Key{}, invalid(field, "%s: %v", field, err)
	}
	return k, nil
}

// hashedKey returns the bytes primitive p hashes for key k: the one place the
// query side decides it, matching the translator. A decimal (compat) key is
// hashed as keywrite.CompatKey (little-endian) by Key-Write and Key-Increment
// and as postcard.CompatKey (big-endian) by Postcarding; hex and 5-tuple keys
// are hashed as their bytes. buf provides the storage for compat keys.
func hashedKey(p dta.Primitive, k dta.Key, buf *[4]byte) []byte {
	if !k.Compat {
		return k.Bytes
	}
	switch p {
	case dta.SketchMerge:
		return sketchKey(k.U32(), buf)
	case dta.Postcard:
		*buf = postcard.CompatKey(k.U32())
	default:
		*buf = keywrite.CompatKey(k.U32())
	}
	return buf[:]
}

// parseQuery parses the raw query string and rejects parameters not in
// allowed and parameters given twice.
func parseQuery(raw string, allowed ...string) (url.Values, *apiError) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, invalid("", "malformed query string: %v", err)
	}
	for name, vals := range q {
		known := name == "at" // every read takes it (history.go checks it)
		for _, a := range allowed {
			known = known || a == name
		}
		switch {
		case !known:
			if len(allowed) == 0 {
				return nil, invalid(name, "unknown parameter %s: this endpoint takes none", quote(name))
			}
			return nil, invalid(name, "unknown parameter %s (want %s)", quote(name), strings.Join(allowed, ", "))
		case len(vals) > 1:
			return nil, invalid(name, "%s: given %d times, want once", name, len(vals))
		}
	}
	return q, nil
}

// intParam parses parameter name of q as an integer in [lo, hi]; def when absent.
func intParam(q url.Values, name string, lo, hi, def int) (int, *apiError) {
	s, ok := q[name]
	if !ok {
		return def, nil
	}
	v, err := strconv.Atoi(s[0])
	if err != nil || v < lo || v > hi {
		return 0, invalid(name, "%s: %s is not an integer in [%d, %d]", name, quote(s[0]), lo, hi)
	}
	return v, nil
}

// redundancy checks a query's n (0: maxN) and threshold against the store's
// N (what names it in messages) and returns the n to read.
func redundancy(n, threshold, maxN int, what string, withThreshold bool) (int, *apiError) {
	if n < 0 || n > maxN {
		return 0, invalid("n", "n: %d out of range [1, %d] (the store's %s; 0 or absent means %d)", n, maxN, what, maxN)
	}
	if n == 0 {
		n = maxN
	}
	if withThreshold && (threshold < 0 || threshold > n) {
		return 0, invalid("threshold", "threshold: %d out of range [0, n=%d]", threshold, n)
	}
	return n, nil
}

// batchRequest is the body of a :batch request.
type batchRequest struct {
	Keys      []string
	N         int
	Threshold int
}

// batchFields says which fields a batch body may carry besides keys.
type batchFields struct{ n, threshold bool }

// decodeBatch reads a batch body {"keys": [...], "n": N, "threshold": T},
// streaming the keys so that no more than maxKeys are ever held. Keys may be
// JSON strings or non-negative JSON integers (decimal compat keys).
func decodeBatch(r io.Reader, maxKeys int, allow batchFields) (batchRequest, *apiError) {
	var req batchRequest
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if err := expectDelim(dec, '{', ""); err != nil {
		return req, err
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return req, bodyError(err, "")
		}
		name, _ := tok.(string)
		if seen[name] {
			return req, invalid(name, "%s: given twice", name)
		}
		seen[name] = true
		switch {
		case name == "keys":
			if req.Keys, err = decodeKeys(dec, maxKeys); err != nil {
				return req, asAPIError(err)
			}
		case name == "n" && allow.n:
			if req.N, err = decodeInt(dec, "n"); err != nil {
				return req, asAPIError(err)
			}
		case name == "threshold" && allow.threshold:
			if req.Threshold, err = decodeInt(dec, "threshold"); err != nil {
				return req, asAPIError(err)
			}
		default:
			want := "keys"
			if allow.n {
				want += ", n"
			}
			if allow.threshold {
				want += ", threshold"
			}
			return req, invalid(name, "unknown field %s (want %s)", quote(name), want)
		}
	}
	if err := expectDelim(dec, '}', ""); err != nil {
		return req, err
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			return req, invalid("", "body: data after the JSON object")
		}
		return req, bodyError(err, "")
	}
	if !seen["keys"] {
		return req, invalid("keys", "keys: missing (want {\"keys\": [\"1\", \"0x0a0b\", ...]})")
	}
	if len(req.Keys) == 0 {
		return req, invalid("keys", "keys: empty; give at least one key")
	}
	return req, nil
}

func decodeKeys(dec *json.Decoder, maxKeys int) ([]string, error) {
	if err := expectDelim(dec, '[', "keys"); err != nil {
		return nil, err
	}
	keys := make([]string, 0, min(maxKeys, 64))
	for dec.More() {
		field := "keys[" + strconv.Itoa(len(keys)) + "]"
		if len(keys) == maxKeys {
			return nil, invalid("keys", "keys: more than %d in one batch; split it", maxKeys)
		}
		tok, err := dec.Token()
		if err != nil {
			return nil, bodyError(err, field)
		}
		switch v := tok.(type) {
		case string:
			keys = append(keys, v)
		case json.Number:
			if _, err := strconv.ParseUint(string(v), 10, 32); err != nil {
				return nil, invalid(field, "%s: %s is not a 32-bit decimal key (give other keys as strings)", field, quote(string(v)))
			}
			keys = append(keys, string(v))
		default:
			return nil, invalid(field, "%s: want a string or an integer", field)
		}
	}
	if err := expectDelim(dec, ']', "keys"); err != nil {
		return nil, err
	}
	return keys, nil
}

func decodeInt(dec *json.Decoder, field string) (int, error) {
	tok, err := dec.Token()
	if err != nil {
		return 0, bodyError(err, field)
	}
	num, ok := tok.(json.Number)
	if !ok {
		return 0, invalid(field, "%s: want an integer", field)
	}
	v, err := strconv.Atoi(string(num))
	if err != nil || v < 0 || v > maxParam {
		return 0, invalid(field, "%s: %s is not a non-negative integer", field, quote(string(num)))
	}
	return v, nil
}

// expectDelim reads the next token and checks it is d.
func expectDelim(dec *json.Decoder, d json.Delim, field string) *apiError {
	tok, err := dec.Token()
	if err != nil {
		return bodyError(err, field)
	}
	if got, ok := tok.(json.Delim); !ok || got != d {
		what := map[json.Delim]string{'{': "a JSON object", '[': "an array", '}': "end of object", ']': "end of array"}[d]
		if field == "" {
			return invalid(field, "body: want %s", what)
		}
		return invalid(field, "%s: want %s", field, what)
	}
	return nil
}

// bodyError turns a read or syntax error of the body into an API error.
func bodyError(err error, field string) *apiError {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return &apiError{status: http.StatusRequestEntityTooLarge, reason: ReasonTooLarge,
			Message: fmt.Sprintf("body: larger than %d bytes; split the batch", tooLarge.Limit)}
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return invalid(field, "body: ends early (want {\"keys\": [...]})")
	}
	return invalid(field, "body: not valid JSON: %v", err)
}

// noBody rejects a request body where the endpoint takes none (the resets,
// which reset the whole store: a body that meant less, one list say, must
// not be taken for a reset of everything).
func noBody(r *http.Request) *apiError {
	if r.Body == nil {
		return nil
	}
	var b [1]byte
	n, err := io.ReadAtLeast(r.Body, b[:], 1)
	switch {
	case n > 0:
		return invalid("", "body: %s %s takes no body (it resets the whole store); send none", r.Method, quote(r.URL.Path))
	case err != nil && err != io.EOF:
		return bodyError(err, "")
	}
	return nil
}

// asAPIError recovers the *apiError a decode helper returned as an error.
func asAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	return invalid("", "body: %v", err)
}

// Error makes *apiError an error for the decode helpers.
func (e *apiError) Error() string { return e.Message }

// appendParams are an Append poll's parameters.
type appendParams struct {
	list      uint32
	cursor    uint64
	hasCursor bool
	oldest    bool // from=oldest: start at the oldest readable entry
	limit     int
	wait      time.Duration
}

// parseList parses the {list} path segment (range is checked by the handler).
func parseList(s string) (uint32, *apiError) {
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, invalid("list", "list: %s is not a list id (a decimal 32-bit number)", quote(s))
	}
	return uint32(v), nil
}

// parseAppendQuery parses cursor, from, limit and wait.
func parseAppendQuery(raw string, cfg *Config) (appendParams, *apiError) {
	var p appendParams
	q, aerr := parseQuery(raw, "cursor", "from", "limit", "wait")
	if aerr != nil {
		return p, aerr
	}
	if s, ok := q["cursor"]; ok {
		v, err := strconv.ParseUint(s[0], 10, 64)
		if err != nil {
			return p, invalid("cursor", "cursor: %s is not an entry index (a decimal 64-bit number)", quote(s[0]))
		}
		p.cursor, p.hasCursor = v, true
	}
	if s, ok := q["from"]; ok {
		switch s[0] {
		case "oldest":
			p.oldest = true
		case "head":
		default:
			return p, invalid("from", "from: %s is not oldest or head", quote(s[0]))
		}
		if p.hasCursor {
			return p, invalid("from", "from: give either cursor or from, not both")
		}
	}
	if p.limit, aerr = intParam(q, "limit", 1, cfg.MaxEntries, cfg.DefaultEntries); aerr != nil {
		return p, aerr
	}
	if s, ok := q["wait"]; ok {
		d, err := parseWait(s[0])
		if err != nil {
			return p, invalid("wait", "wait: %s: %v", quote(s[0]), err)
		}
		p.wait = min(d, cfg.MaxWait)
	}
	return p, nil
}

// waitSyntax is the grammar of a wait, as docs/openapi.yaml states it: a Go
// duration without a sign ("500ms", "1m30s") or a number of seconds ("2.5",
// "1e3"). Forms the parsers would also take (a sign, hex floats,
// underscores) are refused, so the document and the server agree.
var waitSyntax = regexp.MustCompile(`^([0-9]+(\.[0-9]*)?|\.[0-9]+)(([eE][+-]?[0-9]+)?|(ns|us|µs|μs|ms|s|m|h)(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))*)$`)

// secondsSyntax is the part of waitSyntax that is a number of seconds.
var secondsSyntax = regexp.MustCompile(`^([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// parseWait parses a Go duration ("500ms", "10s") or a number of seconds.
// A wait too long for a duration is the longest one (callers shorten it to
// their limit).
func parseWait(s string) (time.Duration, error) {
	switch {
	case strings.HasPrefix(s, "-"):
		return 0, errors.New("negative")
	case len(s) > 64 || !waitSyntax.MatchString(s):
		return 0, errors.New("want a duration such as 500ms or 10s, or a number of seconds")
	case secondsSyntax.MatchString(s):
		// The grammar leaves ParseFloat only overflow (a wait longer than
		// any limit) and underflow (none) to report.
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !math.IsInf(f, 1) {
			f = 0
		}
		return time.Duration(min(f, 1e6) * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil { // the grammar leaves only overflow
		d = math.MaxInt64
	}
	return d, nil
}
