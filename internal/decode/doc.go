// Package decode describes DTA and RoCEv2 traffic for people and programs:
// it turns captured or hand-written bytes into typed results that print as
// text (the lines dta decode shows) or marshal to JSON (dta decode -o
// json), so that the command, the dashboard and tests share one
// description of a datagram.
//
// What it reads:
//
//   - captures: ReadCapture walks a pcap or pcapng file frame by frame;
//     FindUDP digs the IPv4/IPv6 UDP datagram out of a frame (Ethernet
//     with VLAN tags, Linux cooked v1/v2, loopback, raw IP);
//     Decoder.Frame picks what a frame carries by its UDP ports.
//   - datagrams: Decoder.DTA and Decoder.Ack (a DTA report datagram with
//     every field of every report, an ACK/NACK), DecodeRoCE and
//     DecodeRoCEIP (a RoCEv2 packet: BTH, RETH, AtomicETH, AETH,
//     AtomicAckETH, ImmDt, DETH, payload, ICRC verdict, and the CM message
//     of a MAD sent to QP1 with DecodeCM), ParseHex (a datagram typed in
//     hex).
//
// Every result (Datagram, RoCE, CM) is self-contained: it copies what it
// shows and never aliases the input, has exported fields with the JSON
// names of dta decode -o json and a Text method giving the lines dta
// decode prints; Datagram and RoCE say whether they Failed, RoCE whether
// it has a BadICRC. Malformed input is described
// in an Error field (or returned as an error by the file reader), never a
// panic: every reader and decoder has a fuzz target.
//
// Every header is parsed by the protocol packages, wire/dta and wire/roce;
// this package only chooses what to show and how. It does not send,
// receive or write memory, open files (callers hand it an io.Reader),
// define flags, or decide exit codes: it decodes and describes, nothing
// else.
package decode
