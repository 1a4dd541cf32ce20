// Package rdmabench runs the TEA experiments that need the RDMA path (the
// paper's Figs. 8, 9b and 10) over this repository's software RoCEv2 path:
// each TEA server is a region registered with an internal/rdma responder on
// loopback UDP, reached by an rdma/requester, and the lookup engine
// (internal/tea) reads it through internal/tea/remote. Everything is timed
// with the wall clock, so the numbers depend on the machine; the shapes
// (latency against packet size, throughput against servers, fail-over
// without lost lookups) are what compare with the paper.
//
// It refuses to be a load generator for real hardware: it starts its own
// responders in-process and measures the software path end to end.
package rdmabench
