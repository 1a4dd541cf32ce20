// Package intreport decodes and encodes P4.org Telemetry Reports, version
// 2.0 (the Telemetry Report Format Specification of p4lang/p4-applications,
// 2020-10-08), and the INT-MD v2.1 metadata that an Inner-Only or INT report
// may carry in its truncated packet (the INT Dataplane Specification v2.1,
// "INT over TCP/UDP").
//
// A telemetry report packet (a UDP payload) is one Telemetry Report Group
// Header (8 bytes: version, hardware id, sequence number, node id) followed
// by one or more Individual Reports. Each Individual Report has a 4-byte
// header (report type, inner type, report length and metadata length in
// 4-byte words, the D/Q/F/I flags), for report type INT the main contents
// (RepMdBits, domain specific id, DSMdBits, DSMdstatus, then the baseline
// metadata RepMdBits selects and the domain specific metadata), and the inner
// contents: a truncated packet (Ethernet, IPv4 or IPv6), TLVs or domain
// specific extension data. A truncated packet may carry an INT shim and an
// INT-MD header with the metadata stack of the hops before the reporting
// node (the most recent hop first), or an INT-MX header.
//
// Decoding is in place: a Decoder walks a packet without allocating, and
// every slice it returns aliases the packet (valid until the packet's buffer
// is reused). Every length read from the wire is checked against the bytes
// present before it is used; a malformed packet or report is an error that
// wraps one of the sentinel errors below, so that callers count it by
// reason. Encoders (Append* functions) build the same formats, for report
// generators and tests.
//
// The package uses only the standard library and knows nothing of DTA's
// stores: mapping INT semantics onto primitives is the translator's
// business (internal/intmap).
package intreport
