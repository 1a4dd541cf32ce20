// Package reporter builds DTA reports and sends them to a translator over
// UDP: the Go library behind `dta report`, for programs (agents, exporters,
// tests) that produce telemetry.
//
// A Reporter owns one UDP socket. It packs reports into datagrams (one
// report per datagram in the single-report formats, or several per OpBatch
// datagram up to MTU bytes), paces them with a token bucket, and, when asked
// to, marks datagrams retransmittable, keeps the last WindowSize of them by
// sequence number and resends what the translator NACKs (go-back-N) or does
// not acknowledge in time. Building and queueing a report allocates nothing
// on the steady-state path.
//
// The KeyWrite, KeyIncrement, Append and Postcard helpers choose the wire
// format for a report: the prototype's compat opcode when the report fits it
// (a 32-bit key, a 4-byte value, the default store), the extended one
// otherwise. Generator produces deterministic, realistic telemetry streams
// (INT path tracing, INT postcards, congestion and loss events, per-host
// counters) for demos, tests and benchmarks.
//
// What the package must not do: it knows nothing of stores, memory layouts,
// hashing or RDMA (that is the translator's and collector's business); it
// never decides whether a report is accepted beyond what wire/dta encodes;
// it defines no flags and keeps no package-level state; it does no flow
// control against the collector (DTA is best effort), so a full
// retransmission window forgets its oldest datagram rather than blocking.
package reporter
