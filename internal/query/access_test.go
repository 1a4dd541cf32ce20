package query

import (
	"net/http/httptest"
	"testing"
)

func TestRequestsAreClassifiedForTheGuard(t *testing.T) {
	for _, tc := range []struct {
		method, target  string
		changes, stream bool
	}{
		{"GET", "/v1/stores", false, false},
		{"HEAD", "/v1/stores/keywrite", false, false},
		{"GET", "/v1/stores/keywrite/keywrite?key=1", false, false},
		{"POST", "/v1/stores/keywrite/keywrite:batch", false, false},
		{"POST", "/v1/stores/keyincrement/keyincrement:batch", false, false},
		{"POST", "/v1/stores/keyincrement/keyincrement:reset", true, false},
		{"POST", "/v1/stores/append/append:reset", true, false},
		{"POST", "/v1/snapshots", true, false}, // an endpoint not known here counts as a change
		{"DELETE", "/v1/stores/keywrite", true, false},
		{"PUT", "/v1/stores/keywrite/keywrite:batch", true, false},
		{"GET", "/v1/notifications", false, true},
		{"GET", "/v1/stores/append/append/3?wait=10s", false, true},
		{"GET", "/v1/stores/append/append/3?cursor=5&wait=2.5", false, true},
		{"GET", "/v1/stores/append/append/3?wait=0s", false, false},
		{"GET", "/v1/stores/append/append/3?cursor=5", false, false},
		{"GET", "/v1/stores/append/append/3?wait=soon", false, false},
		{"GET", "/v1/stores/append/append/3/head?wait=10s", false, false},
		{"POST", "/v1/notifications", true, false},
	} {
		r := httptest.NewRequest(tc.method, tc.target, nil)
		if got := ChangesState(r); got != tc.changes {
			t.Errorf("%s %s: ChangesState = %v", tc.method, tc.target, got)
		}
		if got := IsStream(r); got != tc.stream {
			t.Errorf("%s %s: IsStream = %v", tc.method, tc.target, got)
		}
	}
	// Every POST route the server has is either a batch lookup or a reset.
	for _, rt := range (&Server{}).routes() {
		r := httptest.NewRequest(rt.method, rt.path, nil)
		if ChangesState(r) != (rt.endpoint == EndpointKeyIncrementReset || rt.endpoint == EndpointAppendReset) {
			t.Errorf("%s %s: ChangesState = %v", rt.method, rt.path, ChangesState(r))
		}
	}
}
