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
// # Direct mode (DART)
//
// A [Direct] reporter writes Key-Write slots itself, with no translator: as
// in DART (HotNets 2021), it opens one RoCEv2 connection per collector
// (rdma/requester: CM handshake, then the store advertisement, decoded by
// wire/advert), picks the collector that owns each key with the shared
// partition function (partition.Map.Owner over the key's wire bytes, the
// members named as partition.ParseMembers names them), and writes the N
// copies of the key's slot where a translator would have written them
// (package hashing, the Key-Write layout: a 4-byte little-endian checksum,
// the value, zero padding to 4 bytes), as RDMA WRITEs. With
// DirectConfig.CompareSwap it follows DART's §7 variant: the first copy is
// a WRITE, each further copy a COMPARE_SWAP of the slot's first 8 bytes
// against 0, which only takes an empty slot. Queries (dta query, the query
// API, package client) read the keys as if a translator had written them.
//
// What the package must not do: beyond the direct mode's Key-Write slots
// (whose layout a test pins to the translator's), it knows nothing of
// stores, memory layouts or RDMA (that is the translator's and collector's
// business); it never decides whether a report is accepted beyond what
// wire/dta encodes; it defines no flags and keeps no package-level state; it
// does no flow control against the collector (DTA is best effort), so a full
// retransmission window forgets its oldest datagram rather than blocking.
// It imports no internal package (arch_test.go).
package reporter
