// Package httpguard stands in front of the HTTP servers of dta (the
// collector's query API, /metrics and /healthz; the translator's /metrics):
// it decides who may call them (bearer tokens with a read or an admin role,
// from a token file), how much one client may take (timeouts, header and
// body sizes, a bound on concurrent requests and a separate one on
// long-lived streams), and over what (TLS 1.2 or later with a certificate
// that can be replaced while serving).
//
// Tokens are compared in constant time against every configured token (the
// SHA-256 of the presented token against each stored SHA-256), so the
// timing of an answer reveals neither which token nearly matched nor any
// token's length. Who may call what ([Access]) and the certificate can be
// replaced at run time (SIGHUP); the limits are fixed for a server's life.
//
// Every refusal is answered with a JSON error in the query API's shape
// ({"error": "..."}), counted per reason in [Stats], and logged at a bounded
// rate. The package must not: know the API's routes (the composition root
// tells it which requests change state and which are streams), log a token
// or a line per accepted request, or import anything beyond the standard
// library and internal/ratelog.
package httpguard
