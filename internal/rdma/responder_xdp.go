package rdma

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/dta-go/dta/internal/transport/xdp"
)

// xdpPacket is one request an AF_XDP read loop gathered from its batch: b
// aliases a UMEM frame, valid until the batch's EndBatch returns.
type xdpPacket struct {
	b    []byte
	from netip.AddrPort
	dst  netip.Addr
	link *xdp.Link // the reader's, valid as b is
	ip   ipv4ID    // the IPv4 header's ID and DF, which the ICRC covers
}

// xdpIngest feeds one AF_XDP reader's requests to its own read loop: the
// reader calls HandleDatagram for each request of a batch, which only
// notes it, then EndBatch, which runs the batch as a UDP read loop runs
// one receive batch (prefetch, execute under the loop's lock, then what
// was deferred), and Idle when its ring has run dry. The coalesced ACKs
// and the responses queued on the TX ring go out at Idle, or after
// xdpFlushEvery batches, whichever comes first: one kick and one ACK per
// QP for all the batches of a wake-up rather than one per batch. It
// implements xdp.AddrHandler (the destination address the ICRC covers
// comes from each frame) and xdp.Idler.
type xdpIngest struct {
	l    *loop
	pend []xdpPacket
	held int // batches run since the responses were last flushed
}

// xdpFlushEvery bounds how many batches' responses wait for the reader to
// idle: a reader that always finds a full ring still answers every 4
// batches (256 requests with the default batch), well within any
// requester's window and its retransmission timeout.
const xdpFlushEvery = 4

// HandlePacket is HandleDatagram for a datagram sent to the responder's own
// address; readers call HandleDatagram.
func (h *xdpIngest) HandlePacket(b []byte, from netip.AddrPort, _ xdp.Replier) {
	h.note(b, from, h.l.r.local.Addr(), nil, ipv4ID{})
}

// HandleDatagram notes one request of the batch.
func (h *xdpIngest) HandleDatagram(d *xdp.Datagram, _ xdp.Replier) {
	h.note(d.Payload, d.From, d.Dst, &d.Link, ipv4ID{id: d.ID, df: d.DF, known: d.IPv4})
}

func (h *xdpIngest) note(b []byte, from netip.AddrPort, dst netip.Addr, link *xdp.Link, ip ipv4ID) {
	if len(h.pend) == cap(h.pend) {
		// More than a batch: never, as the reader's batch is the
		// responder's BatchSize; run what is gathered rather than grow.
		h.EndBatch()
	}
	h.pend = append(h.pend, xdpPacket{b: b, from: from, dst: dst, link: link, ip: ip})
}

// EndBatch runs the gathered requests.
func (h *xdpIngest) EndBatch() {
	if len(h.pend) == 0 {
		return
	}
	l, r := h.l, h.l.r
	r.stats.Batches.Add(1)
	t := r.mrs.Load()
	for i := range h.pend {
		l.pf.add(t, h.pend[i].b)
	}
	l.pf.reset()
	l.mu.Lock()
	l.now = time.Now().UnixNano()
	for i := range h.pend {
		p := &h.pend[i]
		if r.shut {
			break
		}
		if len(p.b) > r.maxPacket {
			l.hot.packets++
			r.stats.Truncated.Add(1)
			continue
		}
		l.link, l.ip = p.link, p.ip
		l.handle(p.b[:len(p.b):len(p.b)], p.from, p.dst)
	}
	l.link, l.ip = nil, ipv4ID{}
	if h.held++; h.held >= xdpFlushEvery {
		h.flushLocked()
	}
	l.mu.Unlock()
	if len(l.slow) > 0 {
		l.runSlow()
	}
	clear(h.pend) // the frames go back to the kernel
	h.pend = h.pend[:0]
}

// Idle sends what the batches since the last flush left: the reader has no
// more requests for now and is about to wait.
func (h *xdpIngest) Idle() {
	if h.held == 0 {
		return
	}
	h.l.mu.Lock()
	h.flushLocked()
	h.l.mu.Unlock()
}

// flushLocked sends the coalesced ACKs and the queued responses. Called
// with the loop's lock held.
func (h *xdpIngest) flushLocked() {
	h.held = 0
	h.l.flushACKs()
	h.l.flush()
}

// xdpFrameOverhead is the most bytes a request's frame adds to its
// payload: Ethernet with a VLAN tag, IPv6, UDP, and the RoCEv2 headers and
// trailer (maxHeaders); plus the headroom (XDP_PACKET_HEADROOM, 256) the
// kernel may keep in front of the frame in the UMEM frame.
const xdpFrameOverhead = 14 + 4 + 40 + 8 + maxHeaders + 256

// xdpMTU is the largest path MTU whose requests fit a UMEM frame of
// frameSize bytes: 1024 for 2048-byte frames, 2048 for 4096-byte ones.
func xdpMTU(frameSize int) int {
	m := 256
	for _, mtu := range []int{512, 1024, 2048, 4096} {
		if mtu+xdpFrameOverhead <= frameSize {
			m = mtu
		}
	}
	return m
}

// listenXDP opens the AF_XDP listener of cfg.XDP, one read loop per
// receive queue. With cfg.XDP.TXFrames each loop sends its QPs' responses
// on its socket's TX ring (queueQP), the rest (CM replies, responses to a
// QP not yet seen on the link) through the first UDP socket; without, all
// through that socket. The loops are appended to r.loops; their ids follow
// the UDP loops'.
func (r *Responder) listenXDP() error {
	xc := *r.cfg.XDP
	xc.BatchSize = r.cfg.BatchSize
	s := r.loops[0].s
	byQueue := map[int]*loop{}
	route := xdp.Route{Port: r.local.Port(), NewHandler: func(queue int) xdp.Handler {
		l := r.newLoop(len(r.loops), s, nil)
		l.xdp = true
		r.loops = append(r.loops, l)
		byQueue[queue] = l
		return &xdpIngest{l: l, pend: make([]xdpPacket, 0, xc.BatchSize)}
	}}
	ln, err := xdp.Listen(xc, []xdp.Route{route}, r.logger)
	if err != nil {
		return fmt.Errorf("rdma: responder: %w", err)
	}
	for q, l := range byQueue {
		l.xtx = ln.Transmitter(q) // before any reader runs
	}
	r.xdp = ln
	return nil
}
