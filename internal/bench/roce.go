package bench

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"sync/atomic"
	"time"

	collectorpkg "github.com/dta-go/dta/internal/collector" // bench has its own collector type
	"github.com/dta-go/dta/internal/memop"
	"github.com/dta-go/dta/internal/rdma"
	"github.com/dta-go/dta/internal/store"
	"github.com/dta-go/dta/internal/uplink"
)

// roceSink is a run's translator writing over RoCEv2, through the loopback,
// into a software responder that serves the run's catalogue: the two halves
// of `dta translator --collector` and `dta collector` in one process. The
// responder stands in for the collector's RDMA NIC, the translator for the
// switch.
type roceSink struct {
	uplinkHalf
	resp *rdma.Responder
	stop context.CancelFunc
	done chan error   // the responder's Run
	tid  atomic.Int64 // the OS thread the responder receives and executes on
}

// dialTimeout bounds the CM handshake and the advertisement on loopback.
const dialTimeout = 10 * time.Second

// NewRoCESink is a Config.NewSink that writes over RoCEv2: it starts a
// software RDMA responder on 127.0.0.1 (a free port) serving local's stores
// as `dta collector` does (collector.NewResponder: every store a registered
// memory region, the store table advertised on each connection), and dials
// it as `dta translator` does (uplink.Dial, default requester settings). The
// translator's ops travel as RDMA WRITE, WRITE with immediate and FETCH_ADD
// packets and land in local's regions only once the responder executed them.
//
// The responder's receive goroutine is locked to its OS thread
// (rdma.ResponderConfig.OnReadLoop), so that its CPU time is read from the
// thread's schedstat as the senders' is: every request is parsed, checked,
// executed and acknowledged there. What runs elsewhere counts as the
// translator's: its timer goroutine (retransmission timeouts, a tick every
// 25 ms) and, with the responder waiting in the runtime's network poller
// (RoCEThreadSink with Kernel false), the poller's work of waking it, which is most of
// the cost of a wake-up. RoCEProcessSink measures the whole responder.
func NewRoCESink(local *store.Catalog) (Sink, error) {
	return RoCEThreadSink(ResponderWait{Kernel: true})(local)
}

// RoCEThreadSink returns NewRoCESink with the responder's read loop waiting
// as w says.
func RoCEThreadSink(w ResponderWait) func(*store.Catalog) (Sink, error) {
	return func(local *store.Catalog) (Sink, error) { return newRoCESink(local, w) }
}

func newRoCESink(local *store.Catalog, w ResponderWait) (Sink, error) {
	s := &roceSink{done: make(chan error, 1)}
	rc := rdma.DefaultResponderConfig()
	rc.Addr = "127.0.0.1:0"
	rc.KernelWait, rc.PollBeforeWait = w.Kernel, w.Poll
	rc.Pause, rc.PauseMax = w.Pause, w.PauseMax
	rc.OnReadLoop = func() { s.tid.Store(int64(threadID())) }
	resp, err := collectorpkg.NewResponder(local, rc, nil)
	if err != nil {
		return nil, fmt.Errorf("responder: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.resp, s.stop = resp, cancel
	go func() { s.done <- resp.Run(ctx) }()

	if err := s.dial(resp.LocalAddr(), local); err != nil {
		s.stopResponder()
		return nil, err
	}
	return s, nil
}

// uplinkHalf is the translator's side of a RoCE sink: the uplink to the
// responder and its requester, which the translator's ops go through.
type uplinkHalf struct {
	req *rdma.Requester // the uplink's sink
	up  *uplink.Uplink
}

// dial connects to the responder at addr as `dta translator` does
// (uplink.Dial, default requester settings) and checks that it advertises
// local's stores: the translator is built over local's descriptors, so the
// advertisement must name the same stores in the same order. On an error
// nothing stays open.
func (h *uplinkHalf) dial(addr netip.AddrPort, local *store.Catalog) error {
	rq := rdma.DefaultRequesterConfig()
	rq.Collector = addr
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	up, err := uplink.Dial(ctx, rq, nil)
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	if !reflect.DeepEqual(up.Descriptors(), local.Descriptors()) {
		up.Close()
		return errors.New("the responder advertised other stores than the run's catalogue holds")
	}
	h.up, h.req = up, up.Requester()
	return nil
}

// Apply sends ops as RDMA WRITE, WRITE with immediate and FETCH_ADD packets,
// blocking while the requester's window is full.
func (h *uplinkHalf) Apply(ops []memop.Op) error { return h.req.Apply(ops) }

// ApplyDeferred queues ops to be sent at the next Push (memop.Deferrer).
func (h *uplinkHalf) ApplyDeferred(ops []memop.Op) error { return h.req.ApplyDeferred(ops) }

// Push sends what ApplyDeferred queued.
func (h *uplinkHalf) Push() { h.req.Push() }

// Drain waits until the responder acknowledged every op sent (it executes an
// op before acknowledging it).
func (h *uplinkHalf) Drain(ctx context.Context) error {
	if err := h.up.Flush(ctx); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	return nil
}

// stats returns the requester's counters; the caller adds the responder's.
func (h *uplinkHalf) stats() SinkStats {
	q := h.req.Stats()
	return SinkStats{
		Ops:         q.Writes.Load() + q.WriteImms.Load() + q.FetchAdds.Load(),
		Packets:     q.Packets.Load(),
		Retransmits: q.Retransmits.Load(),
		Lost:        q.OpsLost.Load() + q.OpsFailed.Load(),
	}
}

// Stats reads the requester's counters, then the responder's.
func (s *roceSink) Stats() SinkStats {
	st, r := s.stats(), s.resp.Stats()
	atomics := r.Atomics.Load()
	st.Applied = r.Writes.Load() + atomics
	st.AppliedBytes = r.WriteBytes.Load() + 8*atomics
	st.RemoteCPU = threadCPU(int(s.tid.Load()))
	st.RemotePackets, st.RemoteReads = r.Packets.Load(), r.Batches.Load()
	return st
}

// Close disconnects the requester, then stops the responder.
func (s *roceSink) Close() error {
	err := s.up.Close()
	if rerr := s.stopResponder(); rerr != nil && err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("close: %w", err)
	}
	return nil
}

func (s *roceSink) stopResponder() error {
	s.stop()
	s.resp.Close()
	return <-s.done
}
