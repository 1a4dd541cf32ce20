package requester

import "net/netip"

// Hooks for the external tests, which run against the collector's
// responder (internal/rdma) and so cannot live in this package.

// HandleForTest feeds b to the requester as a datagram from from, sends
// what that queued, and returns the window's packets, its slots and the
// atomics outstanding.
func (r *Requester) HandleForTest(b []byte, from netip.AddrPort) (n, slots, atomics int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handle(b, from)
	r.flushTx()
	return r.win.n, len(r.win.slots), r.atomicsOut
}

// WindowForTest returns the QPN, the oldest unacknowledged PSN and the
// packets in flight.
func (r *Requester) WindowForTest() (qpn, una uint32, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.qpn, r.win.una, r.win.n
}
