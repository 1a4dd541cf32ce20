// Package query is the collector's query API: HTTP/JSON handlers, versioned
// under /v1, that answer questions about the stores of a [store.Catalog] —
// Key-Write lookups by plurality vote, Key-Increment count-min estimates,
// Postcarding paths, Append list polls (with long-polling), store resets, and
// a stream of write-with-immediate notifications. docs/API.md describes every
// endpoint and docs/openapi.yaml is its machine-readable contract.
//
// The package turns text (query strings, JSON bodies) into calls of the
// primitives' query Stores and their answers back into JSON. One function,
// hashedKey, decides which bytes a key given as text is hashed as for each
// primitive, so that the reader finds what the translator wrote.
//
// It must not: write to a store other than through a primitive's documented
// Reset; compute an address or decode a slot itself (that is the primitive
// packages' Spec and Store code); open listeners or own an http.Server (the
// composition root does, and must allow long polls and streams to outlive a
// short WriteTimeout — the handlers extend their own write deadlines; it
// tells the composition root which requests change state and which stream,
// ChangesState and IsStream, for the HTTP guard's roles and bounds); panic
// on any input; or log per request. Every failed request is answered with a
// JSON error and counted in [Stats].
package query
