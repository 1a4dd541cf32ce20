// Package udp is the translator's batched UDP ingest.
//
// A [Listener] binds several sockets to one address with SO_REUSEPORT, so the
// kernel spreads flows over them, and reads each socket from its own goroutine
// with recvmmsg(2), BatchSize datagrams per system call. Every reader owns its
// receive buffers and its [Handler], and calls the handler synchronously for
// each datagram: nothing is copied, queued or allocated per datagram. Replies
// (ACK/NACK datagrams) leave from the socket that received the packet being
// handled, through the [Replier] handed to the handler.
//
// The group is the listener's own: its first socket is bound without
// SO_REUSEPORT, so [Listen] fails with EADDRINUSE when any socket already
// holds the address (another translator of the same user, whose sockets the
// kernel would otherwise let join the group and take a share of the reports),
// and only then lets the others join.
//
// Next to its own counters ([Stats]) the listener reports the kernel's drop
// counter for its sockets ([Listener.KernelDrops]): datagrams the kernel threw
// away because a receive buffer was full never reach user space, so no other
// counter can see them.
//
// The package knows nothing about DTA: it does not parse, validate or route
// payloads, keeps no per-flow state, and never retains a datagram after the
// handler returns. Formats live in the wire packages and translation in the
// translator; this package only moves bytes between sockets and a handler.
//
// Batched reads and SO_REUSEPORT load balancing need Linux. Elsewhere a
// listener reads one datagram per system call and binds a single socket.
package udp
