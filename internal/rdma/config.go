package rdma

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/dta-go/dta/internal/admit"
	"github.com/dta-go/dta/internal/transport/xdp"
	"github.com/dta-go/dta/rdma/requester"
	"github.com/dta-go/dta/rdma/sock"
	"github.com/dta-go/dta/wire/roce"
)

// DefaultServiceID is the CM service ID a responder listens on and a
// requester connects to unless configured otherwise: the rdma_cm TCP port
// space with port 4791 (IBA Annex A11 form, roce.ServiceID(PortSpaceTCP,
// 4791) = 0x010612B7).
const DefaultServiceID = requester.DefaultServiceID

// Bounds checked by the Validate methods.
const (
	maxQPs         = 1 << 16
	maxWindow      = 1 << 16 // far below the 2^23 unacknowledged PSNs IBA allows
	maxAtomicDepth = 255     // the CM's 8-bit responder resources field
	maxBatch       = 1024
	maxAdvert      = 64 << 20
	maxSockBuffer  = 1 << 30
	maxReadLoops   = 64
	minPause       = 10 * time.Microsecond
	maxPauseMax    = 10 * time.Millisecond
)

// ResponderConfig configures a [Responder]. Start from
// [DefaultResponderConfig]: a zero ResponderConfig does not validate.
type ResponderConfig struct {
	// Addr is the UDP host:port to listen on; default ":4791", all IPv4 and
	// IPv6 addresses. Port 0 picks a free port (tests). On Linux the
	// destination address of every packet is read with IP_PKTINFO, so a
	// wildcard address works on multi-homed hosts; elsewhere bind a
	// specific address (the ICRC covers the destination address).
	Addr string
	// MTU is the largest path MTU accepted in a CM REQ, in payload bytes:
	// 256, 512, 1024, 2048 or 4096 (default). The connection uses the
	// REQ's MTU; a REQ asking for more is rejected (REJ invalid MTU).
	MTU int
	// MaxQPs bounds the connected QPs (1 to 65536, default 64). A REQ beyond
	// it first reclaims the longest-idle QP idle for more than IdleTimeout;
	// if there is none it is rejected (REJ no resources).
	MaxQPs int
	// ACKCoalesce: without AckReq the responder acknowledges at most every
	// ACKCoalesce packets (1 = every packet; default 16). Packets with
	// AckReq are always acknowledged, coalesced per receive batch (per
	// wake-up of an AF_XDP read loop, at most 4 batches: XDP).
	ACKCoalesce int
	// AtomicDepth is the number of FETCH_ADD/COMPARE_SWAP results each QP
	// keeps for replaying duplicates, advertised in the REP as responder
	// resources: 1 to 255, default 128. A requester may keep that many
	// atomics unacknowledged.
	AtomicDepth int
	// Timeout is the retransmission timeout of the advertisement SEND
	// (default 100ms).
	Timeout time.Duration
	// Retries is the number of advertisement retransmissions without an
	// ACK before the QP is given up (default 7).
	Retries int
	// HandshakeTimeout bounds how long a QP waits for the RTU after its REP
	// (default 5s); the REP is kept to answer retransmitted REQs.
	HandshakeTimeout time.Duration
	// IdleTimeout: a QP that received nothing for this long may be reclaimed
	// when the QP table is full (default 1m; 0 never reclaims).
	IdleTimeout time.Duration
	// ServiceID is the CM service ID accepted in REQs (default DefaultServiceID).
	ServiceID uint64
	// BatchSize is the number of datagrams read per recvmmsg call and the
	// most responses sent per sendmmsg call (1 to 1024, default 64).
	BatchSize int
	// RecvBuffer is the socket receive buffer requested, in bytes (0 keeps
	// the kernel default; default 16 MiB). A requester's window of packets
	// arrives in one burst: a small buffer turns bursts into losses and
	// go-back-N retransmissions.
	RecvBuffer int
	// Capture, if set, receives a pcap file (Ethernet frames) of every
	// packet sent and every valid packet received, for tshark. Capturing
	// costs an allocation-free but serialised encode per packet.
	Capture io.Writer
	// AllowTranslators lists the source addresses (requesters) the
	// responder talks to; nil or empty allows every source. A CM REQ from
	// another source is answered with a REJ "consumer defined" (what an
	// rdma_cm application's rdma_reject sends) so that the requester learns
	// at once that it is refused; every other packet from it is dropped
	// silently, before its ICRC is checked. Both are counted. Replace it
	// while running with [Responder.SetAllowTranslators].
	AllowTranslators *admit.Prefixes
	// ReadLoops is the number of sockets receiving on Addr, each read and
	// served by its own goroutine (1 to 64, default 1). Above 1 they are
	// one SO_REUSEPORT group (sock.ListenGroup) that spreads requesters
	// over the sockets by a hash of their source address and port: the QPs
	// of different requesters then execute in parallel, on up to ReadLoops
	// CPUs, while each QP is still executed in order by one loop. Each loop
	// has BatchSize receive buffers and a RecvBuffer of its own. Linux
	// only: elsewhere a value above 1 is logged and 1 is used.
	ReadLoops int
	// OnReadLoop, if set, makes Run lock each goroutine that receives and
	// executes requests (one per read loop) to its OS thread
	// (runtime.LockOSThread) and call OnReadLoop on it, once, before the
	// first packet: what it notes of the thread (its ID, for per-thread CPU
	// accounting as dta bench does) then holds for all that loop's packet
	// work. With several read loops it is called on each, concurrently. It
	// must not block. Without KernelWait, locking costs a thread hand-off
	// at each wake-up in the network poller: leave it nil outside
	// measurements then. With KernelWait the loops are locked anyway.
	OnReadLoop func()
	// KernelWait runs each read loop on an OS thread of its own
	// (runtime.LockOSThread) that waits for requests in a blocking system
	// call (sock.Receiver.WaitInKernel) rather than in the Go runtime's
	// network poller. On the 2-vCPU VM of docs/BENCHMARKS.md a responder at
	// capacity spends 9 to 22 % less CPU per request so (with the poller a
	// second thread keeps waking), and one woken for every request a little
	// more (28 against 20 µs per wake-up, BenchmarkWakeUp in rdma/sock).
	// Default true. Linux only: elsewhere it is ignored.
	KernelWait bool
	// KeepProcessor, with KernelWait, makes each read loop keep its Go
	// processor while it waits (sock.Receiver.KeepProcessor; at most
	// GOMAXPROCS - 1 waits keep one at a time over the process), which
	// saves the runtime's work at each wait: about a tenth of the
	// responder's CPU per request at capacity on the VM of
	// docs/BENCHMARKS.md (6 to 18 % by primitive). For a process whose main
	// work is the responder (dta collector sets it): in one that also
	// translates (dta up) a kept processor is one the translator lacks, and
	// on that VM the responder then spent up to 3 times more. A loop idle for
	// 10 ms hands its processor back until a request comes, so that an idle
	// process does not wake every 10 ms. Default false.
	KeepProcessor bool
	// PollBeforeWait, with KernelWait, makes each read loop poll its socket
	// for up to this long before it waits in the kernel
	// (sock.Receiver.PollBeforeWait): a batch that comes meanwhile costs no
	// wake-up, the polling costs CPU. 0 (the default) waits at once; at most
	// 1 ms. On the 2-vCPU VM of docs/BENCHMARKS.md every value tried (5 to
	// 50 µs) cost more CPU per report than it saved, as polling took CPU from
	// the translator on the same host.
	PollBeforeWait time.Duration
	// Pause, with KernelWait, makes each read loop stop being woken by
	// every datagram while requests keep coming: after a read of fewer
	// than BatchSize datagrams it sleeps Pause and reads what has arrived
	// (sock.Receiver.ReadAfter), and only after 4 such reads in a row find
	// nothing does it wait to be woken again. A wake-up then serves all
	// the requests of a pause: on the 2-vCPU VM of docs/BENCHMARKS.md,
	// where one costs about 20 µs of CPU, Append's batched writes over
	// loopback took 2 to 4 times fewer CPU seconds per request. The price
	// is latency, up to the pause per round trip, and with it the rate of
	// a requester that waits for ACKs with a full window: this
	// repository's translator at capacity lost half its rate for Key-Write
	// with multi-report datagrams there. A requester waiting on its READs
	// and atomics is seen (a read and the one before answered as many of
	// a QP's as its responder resources allow) and the loop then waits to
	// be woken instead of pausing, so Key-Increment keeps the rate it has
	// without a pause. A DTA switch, which does not wait for ACKs, pays
	// only the latency. 0 (the default) is woken by every datagram; 10µs
	// to 1ms. The rule is the AF_XDP reader's (xdp.Config.Coalesce).
	Pause time.Duration
	// PauseMax is how long the pause may grow while requests keep coming:
	// doubled while each read after a pause finds 8 to 2×BatchSize
	// datagrams, halved above 4×BatchSize, back to Pause below 8. Pause to
	// 10ms; 0 means Pause (a fixed pause).
	PauseMax time.Duration
	// XDP, when set, also takes the requests that arrive on XDP.Interface
	// through AF_XDP sockets (internal/transport/xdp) instead of the
	// kernel's UDP receive path: an XDP program steers the frames sent to
	// Addr's UDP port to one AF_XDP socket per receive queue, each read by
	// its own goroutine (on an OS thread of its own) that runs a read loop
	// of its own, as each of ReadLoops' sockets has: its QPs, batches and
	// lock. Responses still leave through the first UDP socket, and the
	// UDP sockets still serve requests that arrive elsewhere (loopback).
	// Addr's port must not be 0. A request must fit one UMEM frame with its
	// Ethernet, IP and UDP headers, so MTU is capped (with a logged note)
	// at 1024 for XDP.FrameSize 2048 (the default) and at 2048 for 4096:
	// a REQ asking for more is rejected (REJ invalid MTU), whichever path
	// it came by. Its BatchSize is the responder's. Needs Linux, root (CAP_NET_ADMIN and
	// CAP_BPF) and an interface that takes an XDP program; NewResponder
	// fails, naming the step, where it cannot be set up. OnReadLoop is not
	// called for AF_XDP readers. Start from [DefaultXDPConfig]. Default nil
	// (off).
	XDP *xdp.Config
}

// DefaultResponderConfig returns the defaults documented on
// [ResponderConfig].
func DefaultResponderConfig() ResponderConfig {
	return ResponderConfig{
		Addr:             ":" + strconv.Itoa(roce.Port),
		MTU:              4096,
		MaxQPs:           64,
		ACKCoalesce:      16,
		AtomicDepth:      128,
		Timeout:          100 * time.Millisecond,
		Retries:          7,
		HandshakeTimeout: 5 * time.Second,
		IdleTimeout:      time.Minute,
		ServiceID:        DefaultServiceID,
		BatchSize:        64,
		RecvBuffer:       16 << 20,
		ReadLoops:        1,
		KernelWait:       true,
	}
}

// DefaultXDPConfig returns the AF_XDP defaults of a responder
// (ResponderConfig.XDP) on interface iface: xdp.DefaultConfig with the
// responses on the TX ring (TXFrames 1024) and a 150µs pause after a short
// batch instead of 50µs. The pause is what a wake-up is spread over: on a
// 2-vCPU VM, with packets one by one over a veth, 150µs took 1.15 to 1.9
// times the request packets per CPU second of 50µs, every primitive, at the
// same accepted rates (docs/BENCHMARKS.md, seventh session). The pause
// grows under load up to CoalesceMax (500µs); a QP's outstanding atomics
// (AtomicDepth, 128) are then at most 128 per pause: 850 k/s at 150µs,
// 256 k/s at 500µs, per QP.
func DefaultXDPConfig(iface string) xdp.Config {
	c := xdp.DefaultConfig()
	c.Interface = iface
	c.TXFrames = 1024
	c.Coalesce = 150 * time.Microsecond
	return c
}

// Validate reports every field out of range, naming it.
func (c ResponderConfig) Validate() error {
	var errs []error
	_, port, addrErr := sock.ParseLocal(c.Addr)
	if addrErr != nil {
		errs = append(errs, fmt.Errorf("rdma: ResponderConfig.Addr: %w", addrErr))
	}
	if _, ok := roce.MTUFromBytes(c.MTU); !ok {
		errs = append(errs, fmt.Errorf("rdma: ResponderConfig.MTU = %d, want 256, 512, 1024, 2048 or 4096", c.MTU))
	}
	errs = appendRange(errs, "ResponderConfig.MaxQPs", c.MaxQPs, 1, maxQPs)
	errs = appendRange(errs, "ResponderConfig.ACKCoalesce", c.ACKCoalesce, 1, maxWindow)
	errs = appendRange(errs, "ResponderConfig.AtomicDepth", c.AtomicDepth, 1, maxAtomicDepth)
	errs = appendRange(errs, "ResponderConfig.Retries", c.Retries, 0, 100)
	errs = appendRange(errs, "ResponderConfig.BatchSize", c.BatchSize, 1, maxBatch)
	errs = appendRange(errs, "ResponderConfig.RecvBuffer", c.RecvBuffer, 0, maxSockBuffer)
	errs = appendRange(errs, "ResponderConfig.ReadLoops", c.ReadLoops, 1, maxReadLoops)
	if c.Timeout < time.Millisecond {
		errs = append(errs, fmt.Errorf("rdma: ResponderConfig.Timeout = %v, want at least 1ms", c.Timeout))
	}
	if c.HandshakeTimeout < c.Timeout {
		errs = append(errs, fmt.Errorf("rdma: ResponderConfig.HandshakeTimeout = %v, want at least Timeout (%v)", c.HandshakeTimeout, c.Timeout))
	}
	if c.IdleTimeout < 0 {
		errs = append(errs, fmt.Errorf("rdma: ResponderConfig.IdleTimeout = %v, want >= 0", c.IdleTimeout))
	}
	switch {
	case c.PollBeforeWait < 0 || c.PollBeforeWait > time.Millisecond:
		errs = append(errs, fmt.Errorf("rdma: ResponderConfig.PollBeforeWait = %v, want 0 to 1ms", c.PollBeforeWait))
	case c.PollBeforeWait > 0 && !c.KernelWait:
		errs = append(errs, fmt.Errorf("rdma: ResponderConfig.PollBeforeWait = %v needs KernelWait", c.PollBeforeWait))
	}
	switch {
	case c.Pause != 0 && (c.Pause < minPause || c.Pause > time.Millisecond):
		errs = append(errs, fmt.Errorf("rdma: ResponderConfig.Pause = %v, want 0 or %v to 1ms", c.Pause, minPause))
	case c.Pause != 0 && !c.KernelWait:
		errs = append(errs, fmt.Errorf("rdma: ResponderConfig.Pause = %v needs KernelWait", c.Pause))
	case c.PauseMax != 0 && (c.PauseMax < c.Pause || c.PauseMax > maxPauseMax || c.Pause == 0):
		errs = append(errs, fmt.Errorf("rdma: ResponderConfig.PauseMax = %v, want 0 or Pause (%v) to %v, with a Pause", c.PauseMax, c.Pause, maxPauseMax))
	}
	if c.XDP != nil {
		x := *c.XDP
		x.BatchSize = c.BatchSize
		if err := x.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("rdma: ResponderConfig.XDP: %w", err))
		}
		if addrErr == nil && port == 0 {
			errs = append(errs, fmt.Errorf("rdma: ResponderConfig.Addr = %q: XDP steers a fixed port, not 0", c.Addr))
		}
	}
	if c.KeepProcessor && !c.KernelWait {
		errs = append(errs, errors.New("rdma: ResponderConfig.KeepProcessor needs KernelWait"))
	}
	return errors.Join(errs...)
}

// RequesterConfig configures a [Requester]: the public requester's
// Config (rdma/requester). Start from [DefaultRequesterConfig] and set
// Collector.
type RequesterConfig = requester.Config

// DefaultRequesterConfig returns the requester defaults
// (requester.DefaultConfig); Collector is left empty.
func DefaultRequesterConfig() RequesterConfig { return requester.DefaultConfig() }

func appendRange(errs []error, name string, v, lo, hi int) []error {
	if v < lo || v > hi {
		errs = append(errs, fmt.Errorf("rdma: %s = %d, want %d to %d", name, v, lo, hi))
	}
	return errs
}
