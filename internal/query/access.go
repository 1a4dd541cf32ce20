package query

import (
	"net/http"
	"net/url"
	"strings"
)

// ChangesState reports whether r may change what the collector holds (and so
// needs an admin token when authentication is on). Only GET and HEAD
// requests, the batch lookups (POST .../{primitive}:batch) and the
// Sketch-Merge top-k (POST .../sketchmerge:topk), which read, are reads; every other request — the resets, and any endpoint added
// later unless it is listed here — counts as a change.
func ChangesState(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return false
	case http.MethodPost:
		return !strings.HasSuffix(r.URL.Path, ":batch") && !strings.HasSuffix(r.URL.Path, "/sketchmerge:topk")
	}
	return true
}

// IsStream reports whether r may stay open long: the notification stream,
// and an Append poll that asks to wait (by GET, or HEAD, which waits as GET
// does). The composition root bounds these separately from other requests
// (max_streams), so that readers following lists never starve queries.
func IsStream(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	p := r.URL.Path
	if p == "/v1/notifications" {
		return true
	}
	if !strings.HasPrefix(p, "/v1/stores/") || !strings.Contains(p, "/append/") || strings.HasSuffix(p, "/head") {
		return false
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil || q.Get("wait") == "" {
		return false
	}
	d, err := parseWait(q.Get("wait"))
	return err == nil && d > 0
}
