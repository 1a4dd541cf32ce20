// Package client is a typed Go client of the DTA collector's query API
// (docs/API.md): store listing, Key-Write, Key-Increment and Postcarding
// lookups (single and batch), Append polls and long-poll following, resets,
// and the write-with-immediate notification stream.
//
// Keys are given in their text forms, as on the command line: a decimal
// 32-bit key (the prototype's compat keys), 0x-prefixed hex bytes, or a
// 5-tuple PROTO,SRC:PORT,DST:PORT. The collector hashes each form the way the
// translator does; the client never interprets them.
//
// A collector with authentication on needs a bearer token ([WithToken]); one
// serving HTTPS may need its CA ([WithTLS], [CAFile]). A request without a
// valid token is answered 401, a reset with a read-only token 403.
//
// The client trusts no answer blindly: one JSON answer is read up to
// [DefaultMaxResponseBytes] ([WithMaxResponseBytes] raises it), and
// counters of several collectors are added only when each has the shape
// it states ([SketchCounters.Add]).
//
// Every error the server answers with is an [*Error] carrying the HTTP status
// and the server's text. The package uses only the standard library; it must
// not depend on the collector's internal packages, keep state between calls
// beyond the http.Client, or retry on its own (Follow stops at the first
// error and says which).
package client
