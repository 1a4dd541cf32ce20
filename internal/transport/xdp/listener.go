package xdp

import (
	"errors"
	"sync/atomic"

	"github.com/dta-go/dta/internal/transport/udp"
)

// ErrUnsupported is returned by [Listen] where AF_XDP does not exist.
var ErrUnsupported = errors.New("xdp: AF_XDP needs Linux")

// Handler processes the datagrams of one port for one reader: the UDP
// path's handler, so that translator workers are fed identically.
type Handler = udp.Handler

// AddrHandler is a Handler that is also given each datagram's destination
// address, for a service whose checks cover it (RoCEv2's ICRC covers the
// IP header: the collector's RDMA responder). A reader calls HandleDatagram
// instead of HandlePacket for a handler that implements it. d and its
// payload stay valid until the handler's EndBatch for that batch returns
// (the frames go back to the fill ring after it), so a handler may gather
// a batch in HandleDatagram and work on it in EndBatch; it must not keep
// them longer.
type AddrHandler interface {
	Handler
	HandleDatagram(d *Datagram, r Replier)
}

// Idler is a Handler that is told when its reader has run out of frames
// and is about to wait (pause or poll) after handing it datagrams: a
// handler that defers work over several batches (the RDMA responder
// coalesces its acknowledgements over a wake-up's batches) does it then.
// Idle is called on the reader's goroutine, at most once per wait, and only
// after a batch that gave the handler a datagram.
type Idler interface {
	Idle()
}

// Replier sends a reply datagram; the UDP path's.
type Replier = udp.Replier

// Route hands the datagrams sent to one UDP port to handlers.
type Route struct {
	// Port is the UDP destination port (1 to 65535).
	Port uint16
	// NewHandler is called once per reader, with the reader's index (the
	// queue it reads).
	NewHandler func(reader int) Handler
}

// Stats counts a listener's traffic over all its readers. Counters are
// updated once per batch, before the batch is handed to the handlers.
type Stats struct {
	// Packets counts datagrams handed to handlers.
	Packets atomic.Uint64
	// Bytes counts the UDP payload bytes of those datagrams.
	Bytes atomic.Uint64
	// Batches counts non-empty reads of an RX ring.
	Batches atomic.Uint64
	// EmptyPolls counts waits for frames (poll(2)) after an RX ring was
	// found empty.
	EmptyPolls atomic.Uint64
	// FillStarved counts refills that found the kernel's fill ring empty:
	// frames arriving at that moment had nowhere to go (the kernel counts
	// them in rx_fill_ring_empty_descs).
	FillStarved atomic.Uint64
	// InvalidDescs counts RX descriptors pointing outside the UMEM.
	InvalidDescs atomic.Uint64
	// ReplyErrors counts failed Replier.Reply calls.
	ReplyErrors atomic.Uint64
	// TXFrames counts frames queued on the sockets' TX rings by
	// Transmitters, counted when flushed.
	TXFrames atomic.Uint64
	// TXFull counts Transmitter.Add calls refused for want of a free frame
	// or TX ring slot (the caller sent that datagram another way).
	TXFull atomic.Uint64
	// TXErrors counts failed kicks of a TX ring (sendto errors other than
	// "try again").
	TXErrors atomic.Uint64
	// TXKickNanos is the CPU time the flushing threads spent in the kicks
	// of the TX rings (the sendto(2) calls of Transmitter.Flush), in
	// nanoseconds of their thread CPU clocks: the kernel's work of sending
	// the frames, which over a veth includes the peer's receive path, run
	// in softirq on the sending CPU.
	TXKickNanos atomic.Uint64
	// Malformed counts frames not handed on, by reason (index: Reason).
	Malformed [numReasons]atomic.Uint64
}

// KernelStats are the kernel's counters of a listener's sockets, summed
// (XDP_STATISTICS).
type KernelStats struct {
	// RxDropped counts frames dropped for other reasons, mostly frames
	// larger than a UMEM frame.
	RxDropped uint64
	// RxInvalidDescs counts invalid fill-ring descriptors.
	RxInvalidDescs uint64
	// RxRingFull counts frames dropped because the RX ring was full: the
	// readers did not keep up.
	RxRingFull uint64
	// RxFillRingEmpty counts frames dropped because the fill ring was
	// empty.
	RxFillRingEmpty uint64
}
