package rdma

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/dta-go/dta/rdma/sock"
	"github.com/dta-go/dta/wire/roce"
)

// rawPeer is a hand-driven requester for tests: it builds every packet
// itself, so it can send what a Requester never would.
type rawPeer struct {
	t        testing.TB
	s        *sock.Conn
	out, in  roce.Envelope
	to       netip.AddrPort
	qpn      uint32 // ours
	rqpn     uint32 // the responder's
	psn      uint32 // next request PSN
	rqPSN    uint32 // PSN we asked the responder to start its SENDs at
	tid      uint64
	commID   uint32
	peerComm uint32
	res      uint8
	adv      []byte
	buf      []byte
}

func newRawPeer(t testing.TB, to netip.AddrPort) *rawPeer {
	t.Helper()
	host := "127.0.0.1"
	if to.Addr().Is6() {
		host = "::1"
	}
	return newRawPeerAt(t, host, to)
}

// newRawPeerAt is newRawPeer with its socket bound to host (an address of
// the namespace it is called in).
func newRawPeerAt(t testing.TB, host string, to netip.AddrPort) *rawPeer {
	t.Helper()
	s, err := sock.Listen(net.JoinHostPort(host, "0"), 1<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &rawPeer{
		t: t, s: s, to: to,
		out:    roce.Envelope{Src: s.LocalAddr().Addr(), Dst: to.Addr(), SrcPort: s.LocalAddr().Port(), DstPort: to.Port()},
		in:     roce.Envelope{Src: to.Addr(), Dst: s.LocalAddr().Addr(), SrcPort: to.Port(), DstPort: s.LocalAddr().Port()},
		qpn:    0x123456,
		rqPSN:  0xFFFFF0, // the advertisement crosses the PSN wrap
		tid:    0xAABBCCDD00000001,
		commID: 0x11110001,
		buf:    make([]byte, 0, 9000),
	}
}

// sendBytes sends b as it is (no sealing).
func (p *rawPeer) sendBytes(b []byte) {
	p.t.Helper()
	if _, err := p.s.UDPConn().WriteToUDPAddrPort(b, p.to); err != nil {
		p.t.Fatal(err)
	}
}

// encode returns pkt encoded and sealed for the responder.
func (p *rawPeer) encode(pkt *roce.Packet) []byte {
	b := pkt.AppendTo(nil)
	if err := p.out.Seal(b); err != nil {
		p.t.Fatal(err)
	}
	return b
}

func (p *rawPeer) send(pkt *roce.Packet) { p.sendBytes(p.encode(pkt)) }

// request sends a request to the QP at the next PSN.
func (p *rawPeer) request(pkt roce.Packet) uint32 {
	pkt.BTH.DestQP = p.rqpn
	pkt.BTH.PKey = roce.DefaultPKey
	pkt.BTH.PSN = p.psn
	p.psn = (p.psn + 1) & roce.PSNMask
	p.send(&pkt)
	return pkt.BTH.PSN
}

// recv returns the next valid packet within d, or false.
func (p *rawPeer) recv(d time.Duration) (roce.Packet, bool) {
	p.t.Helper()
	deadline := time.Now().Add(d)
	for {
		p.s.UDPConn().SetReadDeadline(deadline)
		b := p.buf[:cap(p.buf)]
		n, from, err := p.s.UDPConn().ReadFromUDPAddrPort(b)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return roce.Packet{}, false
			}
			p.t.Fatal(err)
		}
		if netip.AddrPortFrom(from.Addr().Unmap(), from.Port()) != p.to {
			continue
		}
		b = append([]byte(nil), b[:n]...)
		if err := p.in.VerifyICRC(b); err != nil {
			p.t.Fatalf("response with %v", err)
		}
		var pkt roce.Packet
		if err := pkt.Decode(b); err != nil {
			p.t.Fatalf("response: %v", err)
		}
		return pkt, true
	}
}

// expect returns the next packet, failing the test if none comes.
func (p *rawPeer) expect() roce.Packet {
	p.t.Helper()
	pkt, ok := p.recv(10 * time.Second) // generous: a loaded machine may take long; failing takes no longer
	if !ok {
		p.t.Fatal("no response")
	}
	return pkt
}

// expectAETH expects an ACK/NAK (or ATOMIC ACK) with syndrome syn and PSN psn.
func (p *rawPeer) expectAETH(op roce.Opcode, syn roce.Syndrome, psn uint32) roce.Packet {
	p.t.Helper()
	pkt := p.expect()
	if pkt.BTH.Opcode != op || pkt.AETH.Syndrome != syn || pkt.BTH.PSN != psn || pkt.BTH.DestQP != p.qpn {
		p.t.Fatalf("got %v %v PSN %#x to QP %#x, want %v %v PSN %#x", pkt.BTH.Opcode, pkt.AETH.Syndrome,
			pkt.BTH.PSN, pkt.BTH.DestQP, op, syn, psn)
	}
	return pkt
}

// expectNothing fails if a packet arrives within d.
func (p *rawPeer) expectNothing(d time.Duration) {
	p.t.Helper()
	if pkt, ok := p.recv(d); ok {
		p.t.Fatalf("unexpected %v %v PSN %#x", pkt.BTH.Opcode, pkt.AETH.Syndrome, pkt.BTH.PSN)
	}
}

// cm sends the MAD m (UD SEND to QP1).
func (p *rawPeer) cm(m *roce.CM) {
	pkt := roce.CMPacket(7, m.AppendTo(nil))
	p.send(&pkt)
}

func (p *rawPeer) req(serviceID uint64, mtu roce.MTU) {
	m := &roce.CM{Header: roce.CMHeader(roce.AttrREQ, p.tid)}
	m.REQ = roce.ConnectRequest{
		LocalCommID: p.commID, ServiceID: serviceID, LocalQPN: p.qpn, InitiatorDepth: 16,
		StartingPSN: p.rqPSN, PKey: roce.DefaultPKey, PathMTU: mtu, RNRRetryCount: 7,
	}
	p.cm(m)
}

// expectCM returns the next CM message.
func (p *rawPeer) expectCM() (*roce.CM, []byte) {
	p.t.Helper()
	for {
		pkt := p.expect()
		if pkt.BTH.DestQP != roce.GSIQP {
			continue
		}
		var m roce.CM
		if err := m.Decode(pkt.Payload); err != nil {
			p.t.Fatal(err)
		}
		return &m, pkt.AppendTo(nil)
	}
}

// connect runs the CM handshake with path MTU mtu and takes the
// advertisement, ACKing each packet.
func (p *rawPeer) connect(mtu roce.MTU) {
	p.t.Helper()
	p.req(DefaultServiceID, mtu)
	m, _ := p.expectCM()
	if m.Header.AttrID != roce.AttrREP || m.Header.TID != p.tid || m.REP.RemoteCommID != p.commID {
		p.t.Fatalf("want a REP, got %v (reason %v)", m.Header.AttrID, m.REJ.Reason)
	}
	p.rqpn, p.psn, p.peerComm, p.res = m.REP.LocalQPN, m.REP.StartingPSN, m.REP.LocalCommID, m.REP.ResponderResources
	rtu := &roce.CM{Header: roce.CMHeader(roce.AttrRTU, p.tid)}
	rtu.RTU.LocalCommID, rtu.RTU.RemoteCommID = p.commID, p.peerComm
	p.cm(rtu)
	p.adv = p.adv[:0]
	want := p.rqPSN
	for {
		pkt := p.expect()
		if pkt.BTH.PSN != want || pkt.BTH.DestQP != p.qpn {
			p.t.Fatalf("advertisement packet PSN %#x QP %#x, want %#x %#x", pkt.BTH.PSN, pkt.BTH.DestQP, want, p.qpn)
		}
		p.adv = append(p.adv, pkt.Payload...)
		last := pkt.BTH.Opcode == roce.OpSendOnly || pkt.BTH.Opcode == roce.OpSendLast
		msn := uint32(0)
		if last {
			msn = 1
		}
		ack := roce.Packet{BTH: roce.BTH{Opcode: roce.OpACK, PKey: roce.DefaultPKey, DestQP: p.rqpn, PSN: want},
			AETH: roce.AETH{Syndrome: roce.ACKUnlimited, MSN: msn}}
		p.send(&ack)
		want = (want + 1) & roce.PSNMask
		if last {
			return
		}
	}
}

func writeOnly(va uint64, rkey uint32, data []byte, ackReq bool) roce.Packet {
	return roce.Packet{
		BTH:     roce.BTH{Opcode: roce.OpWriteOnly, AckReq: ackReq},
		RETH:    roce.RETH{VA: va, RKey: rkey, DMALen: uint32(len(data))},
		Payload: data,
	}
}

func fetchAdd(va uint64, rkey uint32, add uint64) roce.Packet {
	return roce.Packet{
		BTH:       roce.BTH{Opcode: roce.OpFetchAdd, AckReq: true},
		AtomicETH: roce.AtomicETH{VA: va, RKey: rkey, SwapAdd: add},
	}
}
