// Package requester is a software RoCEv2 requester over a real UDP socket
// (port 4791): one RC queue pair to one collector, on which it posts RDMA
// WRITE, WRITE with immediate, FETCH_ADD, COMPARE_SWAP and RDMA READ with
// the reliability an RDMA NIC gives them. The translator uses it (through
// internal/rdma, as the roce sink) to write stores in a collector's memory;
// a DART reporter (package reporter, direct mode) uses it to write them
// without a translator. Packets are encoded and checked by wire/roce; the
// socket, capture and timer are rdma/sock's. The package is public and
// uses only the standard library and those two packages.
//
// # Connection management
//
// [Dial] runs the IBA CM handshake, carried in UD SENDs to QP1
// (spec/rocev2.md §10): a REQ (random TID, local comm ID, QPN, the PSN it
// expects to receive, the path MTU and, as initiator depth, MaxAtomic),
// retransmitted every CMTimeout up to CMRetries times; the responder's REP
// gives its QPN, starting PSN and responder resources (the atomics it keeps
// results of), or a REJ ends Dial with a *RejectError. The requester
// answers the REP with an RTU, and, per the Linux CM wiring, sends from the
// REP's starting PSN to the REP's QPN.
//
// Right after the handshake the responder posts its advertisement (what a
// DTA collector hosts: see wire/advert) as an RC SEND on the QP, segmented
// by the path MTU. The requester takes it in order, NAKs a gap once,
// re-ACKs duplicates and ACKs with the SEND's PSN; if it does not arrive
// within CMTimeout the RTU is resent. Dial returns once the advertisement is
// complete (Advertisement returns it); the caller decodes it and calls
// SetTargets, which maps an Op's Target index to {VA, R_Key, Length}. That
// is all the requester knows of the collector's memory.
//
// A connection lost (Retries ACK timeouts without progress, a DREQ or a
// REJ from the responder) is re-established in the background with
// exponential backoff (ReconnectMin to ReconnectMax); OnReconnect's
// function receives the new advertisement before Post accepts ops again
// (new targets: a restarted collector has new keys). Post returns
// ErrNotConnected meanwhile. Close sends a DREQ and waits up to Timeout for
// the DREP.
//
// # PSNs, window, acknowledgements and atomics
//
// PSNs are 24-bit, assigned consecutively from the REP's starting PSN and
// compared modulo 2^24. Every packet sent is kept, sealed (ICRC included),
// in a window of Window slots until acknowledged; an ACK or ATOMIC ACK for
// PSN n completes everything up to n. AckReq is set every AckEvery packets,
// on the last packet of each Post call and on the packet that fills the
// window. On NAK PSN sequence error the window is resent go-back-N from the
// NAK's PSN (a second NAK for the same PSN within Timeout is a duplicate
// and ignored); on an ACK timeout it is resent from its oldest packet. A
// class C NAK (remote access error, invalid request, remote operational
// error) means the responder consumed the request without executing it: it
// is counted, logged at a bounded rate and dropped, and the connection
// goes on.
//
// Atomics (FETCH_ADD, COMPARE_SWAP) operate on 8-byte aligned words in the
// responder's byte order (little-endian on the hosts DTA runs on, as with
// rxe). At most MaxAtomic, lowered to the REP's responder resources, are in
// flight, so that the responder still holds the saved result of every one
// the requester may resend. Each completes once, in PSN order, through the
// function set with OnAtomic: with the original value its ATOMIC ACK
// carried; with ErrRefused if it was NAKed; with ErrNotConnected if the
// connection went down first. An ACK beyond an atomic whose ATOMIC ACK has
// not come means that response was lost: as IBA requires for atomics and
// READs (an implied NAK), the requester resends from the atomic and the
// responder answers the duplicate from its saved result without executing
// it again, so a COMPARE_SWAP's outcome is never lost to a dropped packet
// (Stats.AtomicsLost counts these resends).
//
// # READs
//
// A Read op of n bytes is one READ Request that takes max(1, ⌈n/PMTU⌉)
// PSNs, one per READ Response packet, reserved in the window (so a READ
// may be at most Window path MTUs long); READs count against the atomic
// limit (IBA's responder resources cover both). Responses are taken in
// order and copied into the op's Dst; the first response of a READ
// acknowledges every op before it, unless an atomic or READ there still
// lacks its own response (then, as for an ACK beyond it, the window is
// resent from there). A missing response, a timeout or a NAK PSN sequence
// error resends the READ Request, which the responder executes again;
// parts already received are ignored when they come again. Each READ
// completes exactly once, in PSN order, through OnRead's function (or to a
// blocking Requester.Read): with Dst filled, ErrRefused, or
// ErrNotConnected (matching ErrTimeout too after Retries ACK timeouts).
// Stats.ReadsLost counts the READs resent for a missing response.
//
// Post blocks while the window or the atomic limit is full, and, with a
// RateLimit, paces first transmissions with a token bucket of RateBurst
// packets. Flush waits until everything sent is acknowledged. Post is
// allocation-free once the window is warm; the receive path is fuzzed.
//
// # Sockets and the ICRC
//
// The socket is bound to the source address the kernel's route to the
// collector picks (or Local), with DF set so that IPv4 packets carry ID 0,
// which the ICRC covers (rdma/sock). Responses come back to the requester's
// UDP port, ephemeral unless Local names one (RoCE NICs use 4791 both ways:
// set Local to "IP:4791" where no collector shares the host). Capture
// writes every packet sent and every valid packet received to a pcap file
// that tshark dissects.
//
// # Not implemented
//
// SEND from the requester, receive queues beyond the
// advertisement, UC/UD/RD/XRC transports (CM on QP1 excepted), memory
// windows, path migration, alternate paths, congestion control (ECN/CNP),
// IPv6 link-local peers.
package requester
