// Package netsim is a packet-level, discrete-event simulator of an RDMA
// (RoCEv2) fabric, the traffic source of HAWKEYE (docs/REPRODUCTION.md,
// "HAWKEYE").
//
// A Topology declares switches, hosts and full-duplex links (FatTree(4) is
// the paper's 20 switches and 16 hosts; tests declare their own). A Sim runs
// it: every switch port has an egress FIFO, every switch a shared buffer with
// per-ingress accounting, ECMP over equal-cost shortest paths (or a flow's
// explicit route, which is how routing misconfigurations are made), RED/ECN
// marking and priority flow control: an ingress above Xoff sends a PAUSE
// frame carrying a pause time, refreshed at half that time while the ingress
// stays above Xon, and a RESUME (a PAUSE of time 0) below Xon. Hosts run RDMA
// flows that start at line rate under DCQCN (ECN-marked packets make the
// receiver send a CNP at most every 50 µs; the sender cuts its rate by α/2 and
// recovers on 55 µs timers), optionally capped by the application. Scenarios
// (scenario.go) add the paper's workload (long-tailed sizes, Poisson arrivals,
// random pairs, a load parameter) and inject one anomaly with its ground
// truth.
//
// Time is simulated in nanoseconds (time.Duration); a run is deterministic for
// its seed: one goroutine, a heap ordered by time then insertion sequence, one
// seeded random source.
//
// Observers see what a switch's data plane sees (every enqueue with the queue
// depth and whether the egress port is paused, every PFC frame received) and
// what a host sees (every acknowledged packet's RTT); telemetry attaches
// there.
//
// What the package must not do: it knows nothing of telemetry layouts, DTA,
// polling or diagnosis (those observe it from internal/hawkeye/telemetry); it
// does no I/O; it never reads a clock or a global random source.
package netsim
