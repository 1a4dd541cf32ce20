// Package dta implements the DTA report protocol: the UDP payloads that
// reporters send to a translator (port 40040) and the ACK/NACK datagrams the
// translator sends back (port 40044).
//
// Two families of formats share one 3-byte base header {opcode, seqnum, flags}:
//
//   - the original prototype's compat formats (opcodes 1-4), accepted byte for
//     byte: 32-bit keys, 4-byte values, 64-bit counters;
//   - extended formats (opcodes 0x11-0x14, 0x20) that carry a store id,
//     variable-length keys (e.g. a 13-byte IPv4 or 37-byte IPv6 5-tuple),
//     variable-size values, the path length for Postcarding, and several
//     reports in one datagram.
//
// The prototype's 2-byte base header (no seqnum) is decoded when a Decoder is
// told so; a 2-byte report cannot be told apart from a 3-byte one by its bytes.
//
// Every byte is documented in docs/PROTOCOL.md. Decoding fills caller-owned
// structs in place, checks every length before use, never panics and never
// allocates; decoded Key and Value slices alias the datagram and are valid
// only as long as it is. Encoding appends to a caller-owned slice and refuses
// to emit anything the decoder would reject.
//
// This package knows nothing of stores, memory layouts or sockets.
package dta
