// Package xdp is an AF_XDP ingest for UDP services: an alternative to
// internal/transport/udp for hosts where the kernel's UDP receive path is the
// bottleneck. The translator takes reports through it (transport: xdp), and
// the collector's software RDMA responder RoCEv2 requests
// (rdma.ResponderConfig.XDP).
//
// [Listen] loads a small XDP program, written instruction by instruction with
// cilium/ebpf's asm package (no C toolchain), attaches it to one network
// interface through a BPF link, and opens one AF_XDP socket per receive
// queue. The program parses Ethernet (one VLAN tag allowed), IPv4 or IPv6 and
// UDP, and redirects a frame to the queue's socket when its UDP destination
// port is one of the configured ports (the DTA port and, when configured, the
// INT port); every other frame (ARP, ICMP, TCP, other UDP ports, IPv4
// fragments after the first) passes to the kernel untouched. Each socket is
// read by its own goroutine, which drains up to BatchSize descriptors from the
// RX ring, checks each frame ([ParseFrame]), hands the UDP payload to the
// [Handler] of its port, and returns the frames to the fill ring in one batch.
// Nothing is copied or allocated per packet. After a batch shorter than
// BatchSize a reader pauses (Config.Coalesce; under load the pause grows up
// to Config.CoalesceMax) so that each wake-up finds many frames: on a busy
// host a wake-up, not a frame, is the dearest thing a reader does.
//
// Handlers are the same as the UDP path's (udp.Handler), so the translator's
// workers are fed identically; one that also needs each datagram's
// destination address implements [AddrHandler], and one that defers work
// over a wake-up's batches implements [Idler], told when the reader has run
// out of frames and is about to wait. Replies through the
// [Replier] leave through one ordinary UDP socket shared by the readers,
// through the kernel's routing and neighbour tables. With Config.TXFrames
// each socket also has a TX ring and frames of its own for it, and
// [Listener.Transmitter] gives the handler of that queue a [Transmitter]:
// datagrams it adds go out as whole frames the package builds (Ethernet,
// one optional VLAN tag, IPv4 with ID 0 and DF, or IPv6, and UDP) over the
// link the caller names, usually the one a request came in on reversed
// ([Datagram.Link], [Link.Reverse]), skipping the kernel's UDP send path;
// sent frames come back through the completion ring and are reused.
//
// Frames the kernel would have rejected (short, bad IPv4 header or checksum,
// lengths that disagree, fragments) are counted by reason in [Stats] and never
// handed on. UDP checksums are not verified: frames from local senders over a
// veth carry partial checksums, and the link layer's CRC has already been
// checked by the NIC. The kernel's own AF_XDP counters (frames dropped because
// the RX ring was full or the fill ring empty) are read with
// [Listener.KernelStats].
//
// The program is attached through a BPF link, never through netlink alone: the
// link, and with it the program, goes away when the process exits, killed or
// not, so a crashed translator leaves no program steering traffic to a socket
// nobody reads. [Listener.Close] detaches it at once.
//
// The package knows nothing about DTA payloads: it does not decode, validate
// or route reports, keeps no per-flow state, never retains a frame after the
// handler returns, and a Listener transmits on its AF_XDP sockets only what
// a Transmitter's caller adds ([Sender] is a load generator for benchmarks
// and tests); it resolves no neighbours and routes nothing. It needs Linux,
// CAP_NET_ADMIN and CAP_BPF (or root); elsewhere [Listen] returns
// [ErrUnsupported].
package xdp
