// Package nf is network functions on a TEA table (Kim et al., SIGCOMM 2020,
// §5): a source NAT and an L4 load balancer whose translation table is a
// tea.Table, looked up through a tea.Engine. The table may be in this
// process's memory (a tea.MemoryReader: the server-based baseline) or in a
// server's memory over RDMA (internal/tea/remote: TEA proper).
//
// The life of a packet: Process parses the IPv4 and TCP/UDP headers (Parse:
// a pure function over the bytes that never panics), forms the key of the
// NF's Kind, parks the packet (in the row's scratchpad when the table has
// one large enough, else in the NF's own slot) and posts the lookup. When
// the engine's Result arrives the packet's address and port are rewritten
// with incremental checksum updates (RFC 1624) and handed to Config.Send;
// a packet whose key is not in the table is dropped and counted, as is
// every other drop (Stats).
//
// Serve runs an NF between two packet devices (package nf/tun opens Linux
// TUN devices): what is read from the inside device is Outbound, what is
// read from the outside device is Inbound, and each translated packet is
// written to the other device, where the kernel routes it on.
//
// It translates IPv4 TCP and UDP only (no IPv6, ICMP or fragments, which
// are dropped and counted), keeps no per-flow state of its own (the table
// is the state: the control plane inserts both directions of a flow,
// NATEntries and LBEntries), and does not allocate ports.
package nf
