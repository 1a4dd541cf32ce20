// Package roce encodes and decodes RoCEv2 packets: the subset of the
// InfiniBand transport over UDP/IP that Direct Telemetry Access uses to turn
// telemetry reports into RDMA WRITE, WRITE with immediate, FETCH_ADD and
// COMPARE_SWAP operations, the ACK / NAK / ATOMIC ACK a responder returns, and the
// Communication Manager handshake (REQ, REP, RTU, REJ, MRA, DREQ, DREP) on
// QP1 that sets up the connection. The byte-level facts it implements are
// in spec/rocev2.md; field and opcode names follow the IBA specification.
//
// What it offers:
//
//   - one fixed-size struct per header (BTH, RETH, AtomicETH, AETH,
//     AtomicAckETH, ImmDt, DETH, MADHeader, the CM messages, IPCMHeader,
//     Ethernet) with Decode(b []byte) error, filling the struct in place, and
//     AppendTo(b []byte) []byte;
//   - Packet, a view over a UDP payload (headers chosen by the opcode,
//     Payload aliasing the buffer) and a builder that sets PadCnt and the
//     pad bytes; the opcode table (Opcode.Info) says which headers and how
//     much payload each opcode carries;
//   - Envelope, the IP/UDP headers of a connection: it builds whole IPv4 or
//     IPv6 datagrams and Ethernet frames, and parses them;
//   - the ICRC over IPv4 and IPv6 (ICRC, VerifyICRC, Envelope.ICRC/Seal/
//     VerifyICRC), reproducing a ConnectX-4 Lx capture;
//   - a classic pcap writer, so that captures can be checked with tshark.
//
// Every encode and decode path is allocation-free given a buffer with room,
// checks lengths before reading, returns sentinel errors (ErrTruncated,
// ErrUnknownOpcode, ...) and never panics on any input (fuzzed).
// Decoded slices alias the input and are valid only as long as it is.
//
// What it refuses to do: it keeps no connection or QP state (no PSN
// windows, MSN, retransmission, memory regions: that is rdma/requester and
// the collector's responder, internal/rdma),
// does no I/O beyond the io.Writer handed to PcapWriter, and does not
// interpret payloads. Its decoders reject only what cannot be parsed
// (truncation, TVer ≠ 0, unknown opcodes, a pad longer than the payload,
// payload on an opcode without one); rules that a responder must answer
// with a NAK rather than a silent drop (payload size against the path MTU,
// pad count against the DMA length, alignment) are left to the caller, with
// PayloadRule.Allows and PadCount to check them. It knows no UC, RD, XRC,
// SEND with Invalidate or IBA 1.5 opcodes, no IPv4 options, IPv6 extension
// headers or 802.1Q tags, and it never checks UDP checksums (the ICRC
// protects the packet; it sends 0 over IPv4 as Linux rxe does, and a real
// checksum over IPv6).
package roce
