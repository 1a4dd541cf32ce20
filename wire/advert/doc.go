// Package advert encodes and decodes the store advertisement: the message a
// collector posts, as an RDMA SEND, on every RoCEv2 connection right after
// the CM handshake, telling the requester (a translator, or a DART reporter
// writing directly) which stores it hosts, their geometry, and where each
// store's memory region is reachable (VA, R_Key, length). The byte layout is
// in docs/PROTOCOL.md, "Store advertisement".
//
// It is the one codec of that format: the collector encodes with it, and
// both internal/store (which then validates every store as a configuration
// is validated, geometry against the primitive's Spec) and the public
// reporter decode with it.
//
// Decode checks everything the format itself promises and nothing more: the
// magic and version, every count bounded before use (at most MaxStores
// stores, MaxHeads Append heads, each check against the bytes left), known
// primitives, non-empty, unique names, unique non-zero ids, at most one
// default store per primitive, heads that name an Append list of the
// message in increasing list order, and no trailing bytes. It never panics
// (fuzzed), and allocates only the returned stores and their names and
// heads. Whether a geometry is usable (slot counts, value sizes, a region
// large enough for it) is the primitive's business: the caller checks what
// it uses.
//
// The package uses only the standard library and the module's public,
// standard-library-only packages (wire/dta for primitive numbers, hashing
// for hash family numbers). It does no I/O.
package advert
