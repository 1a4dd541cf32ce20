// Package admit decides whether a datagram from a source address is let in:
// an allowlist of IP prefixes ([Prefixes]) and per-source rate limits (a
// bounded table of token buckets), combined in a [Gate] whose [Policy] can be
// swapped atomically while datagrams are being judged (SIGHUP reload).
//
// The translator's report sockets ask a Gate about every datagram before
// decoding it; the collector's RoCEv2 responder asks a Prefixes set about
// every packet. Both paths are hot: Contains and Admit allocate nothing, a
// lookup in a list of any length is a binary search over merged address
// ranges, and an open policy (no allowlist, no rate) costs one atomic load.
//
// Rate limiting uses the generic cell rate algorithm (one int64 per source:
// the theoretical arrival time of its next datagram), in a fixed table of
// set-associative buckets hashed with a per-process random seed. The table
// never grows: a flood from spoofed addresses evicts the source whose bucket
// is fullest, which loses nothing when that bucket is full anyway.
//
// The package must not: read clocks (callers pass the time), log, import
// anything beyond the standard library, or keep a reference to a caller's
// buffers.
package admit
