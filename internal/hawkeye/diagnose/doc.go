// Package diagnose is HAWKEYE's analyzer (paper §3.5): it reads a poll's
// telemetry back from a DTA collector, builds the provenance graph
// (Algorithm 1) and matches the signatures of Table 2 (Algorithm 2).
//
// Reader reads only through the public client package: Append polls of the
// manifest, flow and port lists (record.PollStore, FlowStore, PortStore) and
// Key-Write lookups of the port-pair meters it needs (record.MeterStore).
// Build turns a poll's records into a Graph: port nodes with port-level
// edges weighted paused[p_i] · meter[p_i][p_j] / Σ_k meter[p_i][p_k] ·
// qdepth[p_j], flow→port edges weighted by the flow's paused packets, and
// port→flow edges weighted by the flow's contribution to the port's queue,
// computed by replaying each epoch's queue from the per-flow counts (paused
// packets excluded). Analyze walks the graph from the victim's path and
// names the anomaly, the initially congested port, the PFC spreading path or
// loop, and the root-cause flows or host.
//
// What the package must not do: it never imports the simulator or the
// switch telemetry (internal/hawkeye/netsim, internal/hawkeye/telemetry):
// everything it knows comes from the collector, in the layouts of
// internal/hawkeye/record; it knows no topology beyond the peers the port
// records name; it writes nothing to the collector.
package diagnose
