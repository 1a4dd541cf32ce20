// Package bench measures DTA end to end on this machine: real UDP senders on
// loopback → ingest (recvmmsg readers) → translator → collector stores, and,
// over the same datagrams in the same run, a baseline CPU collector (package
// baseline) that parses each report and inserts it into a Go hash table or an
// in-memory log, as a collector written without DTA would.
//
// A run offers one primitive's reports in one mode (one report per datagram or
// multi-report datagrams; recvmmsg batches or one read per datagram) for a
// bounded duration and measures the offered and accepted rates, drops split
// into kernel (socket buffer overflow) and application (translator refusals),
// the collector's CPU time per million reports (getrusage of the process minus
// the sender threads), the memory operations per report counted from the op
// stream (the paper's Fig. 8), allocations per report and resident memory
// beyond the store regions. Over a remote sink (Config.NewSink, NewRoCESink:
// RoCEv2 into a software RDMA responder serving the stores) it also splits
// the CPU between the responder and the translator.
//
// The package holds no flags (internal/cli's `dta bench` binds them) and writes
// only the progress line it is given a writer for. It is a measurement tool:
// it refuses to run for longer than MaxDuration per run and never touches a
// collector it did not start.
package bench
