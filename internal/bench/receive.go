package bench

import (
	"context"
	"net/netip"

	"github.com/dta-go/dta/internal/transport/udp"
)

// receiveOnly is the ingest ceiling of a run: a collector with the same UDP
// listener, sockets and reads as DTA's and the baseline's, whose handler
// does nothing. Every datagram it takes counts as its per reports (each
// datagram of a run carries the same number); it drops none. What it costs
// per report is what the other two pay before their own work starts.
type receiveOnly struct {
	l   *udp.Listener
	per uint64
}

// discard is the receive-only handler.
type discard struct{}

func (discard) HandlePacket([]byte, netip.AddrPort, udp.Replier) {}
func (discard) EndBatch()                                        {}

func newReceiveOnly(uc udp.Config, per int) (*receiveOnly, error) {
	l, err := udp.Listen(uc, func(int) udp.Handler { return discard{} }, nil)
	if err != nil {
		return nil, err
	}
	return &receiveOnly{l: l, per: uint64(per)}, nil
}

func (c *receiveOnly) addr() netip.AddrPort          { return c.l.LocalAddr() }
func (c *receiveOnly) run(ctx context.Context) error { return c.l.Run(ctx) }
func (c *receiveOnly) close()                        { c.l.Close() }
func (c *receiveOnly) listener() *udp.Listener       { return c.l }
func (c *receiveOnly) ops() (uint64, uint64)         { return 0, 0 }
func (c *receiveOnly) sinkStats() (SinkStats, bool)  { return SinkStats{}, false }
func (c *receiveOnly) drainSink() error              { return nil }
func (c *receiveOnly) release() error                { return nil }
func (c *receiveOnly) counts() (uint64, uint64) {
	return c.l.Stats().Datagrams.Load() * c.per, 0
}
