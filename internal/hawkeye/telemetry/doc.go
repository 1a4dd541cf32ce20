// Package telemetry is HAWKEYE's switch telemetry and collection (paper
// §3.3–3.4) on the simulated fabric of internal/hawkeye/netsim.
//
// Telemetry is the data plane of every switch: a ring of Epochs epochs
// selected by timestamp bits (epoch = 2^EpochBits ns; index = the next
// log2(Epochs) bits, the 8 bits above them the epoch ID that tells a
// wrapped-around epoch to reset), and per epoch:
//
//   - FlowSlots flow slots indexed by a hash of the 5-tuple: packet count,
//     paused-packet count, and over the unpaused packets the queue-depth sum
//     and how many found a non-empty queue, per flow and egress port; a
//     packet of another flow evicts the slot's entry to the switch's
//     controller, which keeps it for the epoch;
//   - per egress port: packet count, paused count, queue-depth sum, PAUSE
//     frames received on it and sent out of it;
//   - the port-pair traffic meter: bytes from each ingress to each egress.
//
// A packet is paused when it enqueues while its egress port is paused by PFC
// (the PFC status register, updated by every PFC frame received). Queue depth
// is in packets.
//
// Agent is the host-side detection agent: it fires when a flow's RTT, or
// the age of its oldest unacknowledged packet, exceeds a threshold given in
// percent of the flow's base RTT. Poll is what follows (§3.4): a polling
// packet walks the victim's path (flag 01); where the victim was paused the
// next switch gets flag 11 and analyzes PFC causality: it forwards flag 10
// out of every egress port that is paused and received traffic from the
// ingress the polling packet came in by (the meter), recursively, until a
// port faces a host or nothing is paused. Every switch reached reports once:
// only causal switches report. The baselines poll every switch (full) or
// only the victim's path (victim-only).
//
// Records (record.go) are the controller's reports: fixed big-endian
// layouts, sent as DTA reports by Export and read back by
// internal/hawkeye/diagnose through the collector.
//
// What the package must not do: it never diagnoses and never reads a
// collector; it reports only what a switch could know (its own registers,
// its ports' peers) — never the simulator's ground truth; it does no I/O
// beyond the reporter it is handed.
package telemetry
