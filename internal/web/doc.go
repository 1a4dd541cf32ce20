// Package web is the collector's dashboard: a page served at / (and its
// assets under /ui/) that shows live ingest rates and drop reasons per
// primitive, store occupancy, Append heads and lag, RoCEv2 queue pairs, plots
// of rates over the last minutes, and a query box per primitive.
//
// The assets are hand-written HTML, CSS and JavaScript modules embedded with
// go:embed: no CDN, no framework, nothing fetched from outside, no build
// step. The page is a client of the collector's public HTTP API only (the
// /v1 query API and /metrics, as docs/API.md and docs/openapi.yaml document
// them): every number it shows, a script could read the same way.
//
// It must not: import the collector's internals (stores, primitives,
// translator, metrics) or compute anything server-side for the page; serve
// anything but its embedded files; or load code or styles from elsewhere
// (its Content-Security-Policy forbids it).
package web
