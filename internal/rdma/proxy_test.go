package rdma

import (
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/dta-go/dta/rdma/sock"
	"github.com/dta-go/dta/wire/roce"
)

// lossyProxy relays RoCEv2 between a requester and a responder, dropping,
// duplicating and reordering a share of the packets in both directions.
// Since the ICRC covers addresses and ports, it checks each packet's ICRC
// and reseals it for the next hop, as a NAT that knows RoCE would.
type lossyProxy struct {
	t      testing.TB
	front  *sock.Conn // the requester's "collector"
	back   *sock.Conn // talks to the responder
	target netip.AddrPort

	mu      sync.Mutex
	client  netip.AddrPort
	rng     *rand.Rand
	drop    float64
	dup     float64
	reorder float64
	held    [2][]byte
	// dropIf, if set, decides drops instead of the dice (dir 0: to the
	// responder, 1: to the requester; n counts packets per direction).
	dropIf func(dir, n int, p *roce.Packet) bool
	count  [2]int

	dropped, duplicated, reordered [2]int
	wg                             sync.WaitGroup
}

func newLossyProxy(t testing.TB, target netip.AddrPort, seed uint64, drop, dup, reorder float64) *lossyProxy {
	t.Helper()
	host := "127.0.0.1"
	if target.Addr().Is6() {
		host = "::1"
	}
	p, err := newLossyProxyAt(t, net.JoinHostPort(host, "0"), net.JoinHostPort(host, "0"), target, seed, drop, dup, reorder)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newLossyProxyAt is newLossyProxy with the proxy's two addresses chosen.
func newLossyProxyAt(t testing.TB, frontAddr, backAddr string, target netip.AddrPort, seed uint64, drop, dup, reorder float64) (*lossyProxy, error) {
	front, err := sock.Listen(frontAddr, 4<<20, 0)
	if err != nil {
		return nil, err
	}
	back, err := sock.Listen(backAddr, 4<<20, 0)
	if err != nil {
		front.Close()
		return nil, err
	}
	p := &lossyProxy{t: t, front: front, back: back, target: target,
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), drop: drop, dup: dup, reorder: reorder}
	p.wg.Go(func() { p.relay(0) })
	p.wg.Go(func() { p.relay(1) })
	t.Cleanup(func() {
		front.Close()
		back.Close()
		p.wg.Wait()
	})
	return p, nil
}

func (p *lossyProxy) addr() netip.AddrPort { return p.front.LocalAddr() }

func (p *lossyProxy) relay(dir int) {
	in := p.front
	if dir == 1 {
		in = p.back
	}
	buf := make([]byte, 9216)
	for {
		n, from, err := in.UDPConn().ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		b := append([]byte(nil), buf[:n]...)
		p.mu.Lock()
		var rx, tx roce.Envelope
		var out *sock.Conn
		var to netip.AddrPort
		if dir == 0 {
			p.client = from
			rx = roce.Envelope{Src: from.Addr(), Dst: p.front.LocalAddr().Addr(), SrcPort: from.Port(), DstPort: p.front.LocalAddr().Port()}
			tx = roce.Envelope{Src: p.back.LocalAddr().Addr(), Dst: p.target.Addr(), SrcPort: p.back.LocalAddr().Port(), DstPort: p.target.Port()}
			out, to = p.back, p.target
		} else {
			if from != p.target || !p.client.IsValid() {
				p.mu.Unlock()
				continue
			}
			rx = roce.Envelope{Src: from.Addr(), Dst: p.back.LocalAddr().Addr(), SrcPort: from.Port(), DstPort: p.back.LocalAddr().Port()}
			tx = roce.Envelope{Src: p.front.LocalAddr().Addr(), Dst: p.client.Addr(), SrcPort: p.front.LocalAddr().Port(), DstPort: p.client.Port()}
			out, to = p.front, p.client
		}
		var pkt roce.Packet
		if rx.VerifyICRC(b) != nil || pkt.Decode(b) != nil || tx.Seal(b) != nil {
			p.mu.Unlock()
			continue
		}
		p.count[dir]++
		send := func(b []byte) { _, _ = out.UDPConn().WriteToUDPAddrPort(b, to) }
		switch {
		case p.dropIf != nil && p.dropIf(dir, p.count[dir], &pkt):
			p.dropped[dir]++
		case p.dropIf == nil && p.rng.Float64() < p.drop:
			p.dropped[dir]++
		case p.dropIf == nil && p.held[dir] == nil && p.rng.Float64() < p.reorder:
			// Hold it back until after the next packet (or 2 ms).
			p.reordered[dir]++
			p.held[dir] = b
			time.AfterFunc(2*time.Millisecond, func() {
				p.mu.Lock()
				defer p.mu.Unlock()
				if h := p.held[dir]; h != nil && &h[0] == &b[0] {
					p.held[dir] = nil
					send(b)
				}
			})
		default:
			send(b)
			if p.dropIf == nil && p.rng.Float64() < p.dup {
				p.duplicated[dir]++
				send(b)
			}
			if h := p.held[dir]; h != nil {
				p.held[dir] = nil
				send(h)
			}
		}
		p.mu.Unlock()
	}
}
