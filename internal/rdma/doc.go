// Package rdma implements software RoCEv2 endpoints over real UDP sockets
// (port 4791): a [Responder] that behaves like an RDMA NIC on the collector
// side, executing RDMA WRITE, WRITE with immediate, FETCH_ADD and
// COMPARE_SWAP into registered memory regions, and a [Requester] on the
// translator side that turns memory operations ([memop.Op]) into those
// packets. The requester itself is the public package rdma/requester
// (which DART reporters use too); [Requester] wraps it as a memop sink, and
// its configuration, statistics and errors are aliases of that package's.
// Bytes in, bytes out: packets are encoded and checked by wire/roce, the
// sockets are rdma/sock's, memory is internal/region. The package knows
// nothing about DTA stores or primitives; what a collector advertises to
// its translators is an opaque byte string.
//
// # Connection management
//
// A connection is one RC queue pair (QP) per requester, set up with the IBA
// CM handshake carried in UD SENDs to QP1 (spec/rocev2.md §10). The
// requester sends a REQ (random TID, local comm ID, QPN and the PSN it
// expects to receive) and retransmits it every CMTimeout; the responder
// validates service ID, transport type and path MTU, allocates a QP (a
// random 24-bit QPN and starting PSN) and answers a REP carrying them and
// its responder resources (AtomicDepth, at least 1, at most the REQ's
// initiator depth), or a REJ (invalid service ID, invalid transport type,
// invalid MTU, no resources when MaxQPs QPs exist and none has been idle
// for IdleTimeout, consumer defined for a source outside AllowTranslators,
// whose other packets are dropped unanswered before their ICRC is checked). A retransmitted REQ (same address, TID and comm ID)
// gets the same REP bytes; a REQ with a new TID from the same address
// replaces the old QP (the requester restarted or reconnects). The
// requester answers the REP with an RTU; the RTU, or failing that the
// first request on the QP, establishes it. A half-open QP is dropped after
// HandshakeTimeout. DREQ is answered with DREP and tears the QP down; the
// requester sends one from Close, the responder one to every established
// QP from its Close, so requesters reconnect at once. Per the Linux CM
// wiring, the requester sends from the REP's starting PSN to the REP's QPN.
// Once its Close has begun the responder ignores every packet, so that no
// requester reconnects to a responder about to vanish.
//
// Right after the handshake the responder posts the advertisement (set
// with SetAdvertisement) as an RC SEND on the QP, segmented by the path
// MTU (SEND Only, or First/Middle/Last), every packet with AckReq, from
// the PSN the REQ asked for. It keeps up to 64 packets in flight,
// retransmits go-back-N on timeout or NAK sequence error and gives the QP
// up after Retries timeouts. The requester takes the SEND in order, NAKs a
// gap once, re-ACKs duplicates and ACKs with the SEND's PSN and MSN 1. If
// the advertisement does not arrive within CMTimeout it resends the RTU.
// Dial returns once the advertisement is complete; the caller decodes it
// and calls SetTargets, which maps Op.Store to {VA, RKey, Length}. That is
// all the requester knows of the collector's memory: the advertisement's
// format belongs to the collector (internal/store), not to this package.
// An MR's VA is synthetic (random, page aligned, 2 MiB apart from the
// next), its R_Key random and never 0, so a stale target from a previous
// collector incarnation draws NAK remote access error, not a stray write.
//
// # PSNs, window and acknowledgements
//
// PSNs are 24-bit and compared modulo 2^24 (roce.ComparePSN: the 2^23
// PSNs behind a reference are before it). The responder keeps the
// expected PSN (ePSN) and MSN per QP and applies the IBA rules: a request
// at ePSN is checked and executed; a PSN ahead of ePSN is a gap, dropped,
// and answered with one NAK PSN sequence error carrying ePSN per gap (no
// further NAK until ePSN arrives); a PSN behind ePSN is a duplicate, never
// executed again: a WRITE gets a re-ACK of ePSN-1, an atomic the ATOMIC
// ACK it got the first time, from a ring of the last AtomicDepth results
// (a miss is dropped silently, as rxe does; the requester's atomic limit
// makes it impossible for a conforming requester). A READ, which changes
// nothing, is the exception IBA makes: a duplicate READ Request is executed
// again and its responses resent with the original PSNs.
//
// An RDMA READ Request (MR access AccessRemoteRead, DMA length at most
// 2^31) is answered with READ Response Only, or First/Middle…/Last
// segmented at the path MTU, one PSN each from the request's, with the
// MSN in the AETHs of First, Last and Only; ePSN advances by the number of
// response packets, also when the READ is refused with a remote access
// error (the requester reserved those PSNs). ACKs are coalesced:
// the responder acknowledges a packet with AckReq, or every ACKCoalesce
// packets, with one ACK per QP per receive batch (recvmmsg; per wake-up on
// AF_XDP, below) for the latest PSN; ATOMIC ACKs go out for every atomic.
//
// The requester assigns consecutive PSNs from the REP's starting PSN and
// keeps every packet it sends, sealed, in a window of Window slots until
// it is acknowledged; an ACK or ATOMIC ACK for PSN n completes everything
// up to n, except an atomic whose own ATOMIC ACK is missing: the requester
// resends from it (an implied NAK) and gets the saved result (package
// rdma/requester has the details). It sets AckReq
// every AckEvery packets, on the last packet of each Apply call and on the
// packet that fills the window, and limits atomics in flight to the REP's
// responder resources, so that every duplicate atomic finds its saved
// result. Apply blocks while the window (or atomic limit) is full. On NAK
// sequence error it resends go-back-N from the NAK's PSN (a second NAK for
// the same PSN within Timeout is a network duplicate and ignored); on an
// ACK timeout it resends from the oldest packet, and after Retries
// timeouts without progress it declares the connection lost, drops the
// window (Stats.OpsLost), and reconnects in the background with
// exponential backoff, then calls OnReconnect with the new advertisement
// before Apply accepts ops again. Apply returns ErrNotConnected meanwhile.
// A token bucket (RateLimit, RateBurst) paces first transmissions. Flush
// waits until everything sent is acknowledged, and reports a connection
// lost meanwhile (ops lost). Apply is allocation-free once the window is
// warm, and so is the responder's receive path; both are fuzzed.
//
// # What the responder enforces
//
// Like a NIC: a wrong ICRC is dropped silently and counted, as are
// undecodable packets, packets for an unknown QP and packets for a QP from
// another address. Requests are checked before any byte is written: the
// R_Key must name a registered MR with the right (remote write, remote
// atomic), and VA..VA+length must lie inside it, else NAK remote access
// error; atomics must be 8-byte aligned, opcodes in message order and
// payloads sized by the rules of spec/rocev2.md §6 (FIRST/MIDDLE exactly
// PMTU, LAST the rest, ONLY = DMA length ≤ PMTU, pad = (-len) & 3, DMA
// length ≤ 2^31), else NAK invalid request. A multi-packet WRITE is
// checked whole on its FIRST (RETH DMA length) and placed packet by packet
// as the VA advances. FETCH_ADD is region.Add64 on a little-endian word
// (the host order, as rxe does), COMPARE_SWAP region.CompareAndSwap64;
// an 8-byte aligned 8-byte WRITE is one atomic store. WRITE with immediate
// calls OnImmediate after the bytes landed.
//
// Deviation from IBA: a class C error (invalid request, remote access)
// does not move the QP to the error state. The responder consumes the
// offending request (and the rest of its message) without executing it,
// NAKs it once with its PSN (again for a duplicate of it) and goes on;
// the requester counts and logs the NAK (rate-limited) and drops that op.
// One bad op then costs one op, not the connection, which suits a
// telemetry sink.
//
// # Sockets and the ICRC
//
// The ICRC covers the IPv4 ID and DF bit, which a UDP socket neither sets
// nor shows. Both ends use unconnected sockets with IP_PMTUDISC_DO, so
// Linux sends IPv4 packets with DF and ID 0, and both compute ICRCs for
// that header. rxe and RDMA NICs number their packets: a received packet
// whose trailer does not match ID 0 with DF is checked against the ID and
// DF bit its trailer implies (roce.ICRCCache.VerifyAnyID solves for them;
// the ICRC is affine in those 17 bits), counted as ForeignIPID, so such
// peers are served; a corrupted packet then passes with odds of about
// 2^-15 rather than 2^-32. The AF_XDP path reads the ID and DF bit from
// each frame's header and checks them exactly (VerifyID, 2^-32). A
// capture shows such a packet with its own ID and DF bit, and so with the
// ICRC it arrived with. The responder learns each
// packet's destination address with IP_PKTINFO and answers from it, so a
// wildcard bind works on a multi-homed host; the requester binds the
// source address its route to the collector picks. Responses go to the
// requester's UDP port, ephemeral unless RequesterConfig.Local names one
// (RoCE NICs use 4791 both ways: set Local to "IP:4791" where no collector
// shares the host). Over IPv6 the kernel computes the UDP
// checksum. Capture writes every packet sent and every valid packet
// received as an Ethernet frame to a pcap file that tshark dissects
// (shared/tools/tshark_check.sh).
//
// # The receive path
//
// A read loop (a goroutine and its socket) receives a batch of datagrams
// per recvmmsg call and works through it under one lock taken per batch,
// not per packet. With ResponderConfig.ReadLoops above 1 the responder has
// that many loops on an SO_REUSEPORT group of sockets bound to one address
// (rdma/sock.ListenGroup), which sends every packet of one requester
// socket (source address and port) to one loop, which owns the
// QPs whose REQ it received and executes them under its own lock, so the
// QPs of different requesters execute in parallel. What spans loops (the
// QP table and limits, the CM exchanges about another loop's QP, the
// timer, Close, the allowlist) takes every loop's lock, and a packet that
// reaches a loop other than its QP's owner is run after the batch that
// way: never two loops on one QP at once. Between a
// requester and a responder on one host, runs of packets travel as UDP GSO
// super-datagrams received whole with UDP GRO (rdma/sock, "Runs of packets
// on one host"); the responder splits each into the packets sent and
// checks every one on its own (ICRC, QP, PSN, rkey, bounds), as if it had
// come alone. Before executing a batch it reads every packet's target
// address and asks for those cache lines (Region.Prefetch), so that the
// batch's cache misses overlap; an aligned 8-byte WRITE is one plain store
// on amd64 (single-copy atomic and in program order there, as a NIC's DMA
// writes), an atomic store elsewhere. The per-packet counters are plain integers
// added to Stats once per batch, before any response leaves.
//
// With ResponderConfig.XDP the requests that arrive on one interface skip
// the kernel's UDP receive path: internal/transport/xdp's program steers
// them to an AF_XDP socket per receive queue, and each socket's reader runs
// a read loop of its own over each ring batch (xdpIngest), with the
// destination address the ICRC covers taken from the frame. Such a loop
// owns QPs as a socket's loop does. With XDP.TXFrames it sends a QP's
// responses (ACKs, NAKs, ATOMIC ACKs, READ responses, the advertisement) on
// its socket's TX ring, back over the link the QP's latest in-sequence
// request came in on: source and destination MAC swapped, the same VLAN
// tag. That is the QP's address vector, learnt as a NIC's is set at
// connection time, but from the requests themselves, so no neighbour table
// is consulted. What has no such link (CM replies, a QP's responses before
// its first request) and what finds the ring full leaves through the first
// UDP socket, as every response does without TXFrames. The frames carry
// what the ICRC was sealed over (IPv4 ID 0 and DF). The path MTU is capped
// so that a request fits a frame. Such a loop coalesces its ACKs, and sends
// its queued responses, over all the batches of one wake-up rather than per
// batch: when its reader runs out of frames and is about to wait
// (xdp.Idler), or after xdpFlushEvery (4) batches under unbroken load.
//
// # Not implemented
//
// SEND from the requester (NAK invalid request), receive
// queues, SRQ, RNR NAKs from the responder (OnImmediate needs no receive
// WQE), UC/UD/RD/XRC transports (CM on QP1 excepted), memory windows,
// invalidation, path migration, alternate paths, MRA, LAP, SIDR,
// congestion control (ECN/CNP), IPv6 link-local peers, IPv4 options and
// fragments, credits (ACKs carry "unlimited"). One QP is executed by one
// goroutine at a time: a single requester does not get faster with more
// read loops.
package rdma
