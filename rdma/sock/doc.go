// Package sock is the network plumbing that both ends of a software RoCEv2
// connection share around the codec (wire/roce): the UDP socket, set up so
// that ICRCs match what the kernel sends; batched receive and send with
// each datagram's addresses; a pcap capture of an endpoint's packets; and
// the retransmission ticker that sleeps while nothing is outstanding. The
// requester (rdma/requester, public) and the collector's responder
// (internal/rdma) are built on it.
//
// # The socket and the ICRC
//
// The ICRC covers the IPv4 ID and DF bit, which a UDP socket neither sets
// nor shows. [Listen] leaves the socket unconnected and sets
// IP_PMTUDISC_DO, so that Linux sends every IPv4 packet with DF and ID 0,
// and both ends compute and check ICRCs for that header (roce.Envelope
// with ID 0 and NoDF false). It asks for each datagram's destination
// address (IP_PKTINFO, IPV6_RECVPKTINFO), so that a socket bound to a
// wildcard address answers from the address a packet came to, and sends
// IPv4 with UDP checksum 0, as RoCEv2 NICs and rxe do (the ICRC protects
// the packet). On Linux a [Receiver] reads up to a batch of datagrams per
// recvmmsg call and a [Sender] sends its queue with sendmmsg; elsewhere
// they move one datagram per system call, and the IPv4 ID and DF bit of
// what the kernel sends are unknown.
//
// # Runs of packets on one host
//
// Per-datagram kernel work dominates a software endpoint (about 1 µs per
// loopback datagram here). Between two endpoints on one host, a Sender on a
// socket with [Conn.EnableGSO] sends each run of consecutive datagrams of one
// size to one destination as one UDP GSO super-datagram, and a Receiver on a
// socket with [Conn.EnableGRO] gets it whole, with the size of its segments
// ([Receiver.SegmentSize]): the kernel pays once per run, and the endpoint
// splits it back into the datagrams sent, byte for byte. The requester turns
// both on towards a loopback collector, the responder when bound to a
// loopback address. Not on a wire: the kernel refuses GSO with UDP checksum
// 0, so such a socket sends checksums (which RoCEv2 receivers ignore), and
// segmenting numbers the IPv4 IDs of the segments 0, 1, 2..., where each
// packet's ICRC covers ID 0. If the kernel refuses a super-datagram, the
// Sender falls back to one datagram per message for good.
//
// # Several sockets on one address
//
// [ListenGroup] binds n sockets to one address as an SO_REUSEPORT group,
// so that n goroutines receive in parallel (the responder's read loops).
// A classic BPF program on the group picks each datagram's socket from its
// source address and port, so that one peer socket always reaches the same
// socket, and only the group's own sockets are ever picked: Linux lets a
// socket of the same user bound to port 0 with SO_REUSEPORT land on a
// port a group holds, and without the program it would receive a share.
//
// What it refuses to do: it knows no QPs, PSNs or connections, never
// decodes a packet except to record it in a capture, and allocates nothing
// per datagram. It uses only the standard library (syscall, not
// golang.org/x/sys) and wire/roce.
package sock
