package bench

import (
	"context"
	"time"

	"github.com/dta-go/dta/internal/memop"
)

// Sink is where a run's DTA translator writes instead of the run's catalogue
// (Config.NewSink), with what the run measures of it. The run makes one per
// DTA run and closes it at the end of the run.
type Sink interface {
	memop.Sink
	// Drain waits until every op the sink has taken so far has been applied
	// to the stores, or ctx is done. An error means some never will be.
	Drain(ctx context.Context) error
	// Stats returns the sink's counters since it was made.
	Stats() SinkStats
	// Close releases the sink. The run calls it once, after the translator
	// has stopped.
	Close() error
}

// SinkStats are a Sink's counters since it was made. Ops is read before
// Applied, so that Applied <= Ops unless ops were applied twice.
type SinkStats struct {
	Ops          uint64        // ops taken from the translator (RoCE: WRITE, WRITE with immediate and FETCH_ADD sent)
	Packets      uint64        // request packets sent, first transmissions
	Retransmits  uint64        // request packets resent
	Lost         uint64        // ops taken that will never be applied (connection lost, refused by the remote side)
	Applied      uint64        // ops applied to the stores (RoCE: executed by the responder)
	AppliedBytes uint64        // bytes they wrote (8 per fetch-and-add)
	RemoteCPU    time.Duration // CPU time of the remote side (RoCE: the responder's process, or its receive thread)
	// RemoteProcess says that the remote side is a process of its own: its
	// CPU time is not part of this process's.
	RemoteProcess bool
	// RemotePackets and RemoteReads are the packets the remote side took in
	// and the receive calls that returned them (RoCE: the responder's).
	RemotePackets, RemoteReads uint64
	// RemoteWaits counts the times a thread of a remote side that is a
	// process of its own (RemoteProcess) waited and was woken (voluntary
	// context switches; RoCE: mostly the read loops' pauses).
	RemoteWaits uint64
	// RemoteWaitCost is what one timed wait costs that process in CPU,
	// measured once as it started (0 if unknown).
	RemoteWaitCost time.Duration
	// RemoteRSS is the resident memory of a remote side that is a process
	// of its own (RemoteProcess), bytes: its copy of the stores included.
	RemoteRSS uint64
	// RemoteXDPPackets counts the requests the remote side took through
	// AF_XDP (RoCEProcessSinkOver with ResponderXDP), since it started.
	RemoteXDPPackets uint64
	// RemoteXDPTXFrames counts the responses it sent on AF_XDP TX rings
	// (ResponderXDP).
	RemoteXDPTXFrames uint64
	// RemoteSendTime is the CPU time the remote side's threads spent in
	// the kicks of those TX rings, since it started (xdp.Stats.TXKickNanos):
	// the kernel sending its responses, over a veth the requester's receive
	// path included.
	RemoteSendTime time.Duration
}
