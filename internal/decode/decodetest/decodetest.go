// Package decodetest builds the input of internal/decode in tests: pcap and
// pcapng captures, and the Ethernet, Linux cooked, IP and UDP framing of a
// datagram, with RoCEv2 packets and CM messages built by wire/roce. It is
// for tests only; nothing outside a _test.go file may import it.
package decodetest

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dta-go/dta/wire/roce"
)

// Order is binary.LittleEndian or binary.BigEndian: the byte order a
// capture is written in.
type Order interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

// Capture is a capture file being written in memory.
type Capture struct {
	buf  bytes.Buffer
	bo   Order
	nano bool
	ng   bool
}

// NewPcap starts a classic pcap capture of the given link type, with
// microsecond timestamps, or nanosecond ones if nano.
func NewPcap(bo Order, nano bool, link uint32) *Capture {
	c := &Capture{bo: bo, nano: nano}
	magic := uint32(0xa1b2c3d4)
	if nano {
		magic = 0xa1b23c4d
	}
	h := bo.AppendUint32(nil, magic)
	h = bo.AppendUint16(h, 2)
	h = bo.AppendUint16(h, 4)
	h = bo.AppendUint32(h, 0)
	h = bo.AppendUint32(h, 0)
	h = bo.AppendUint32(h, 65535)
	h = bo.AppendUint32(h, link)
	c.buf.Write(h)
	return c
}

// NewPcapng starts a pcapng section with one interface of the given link
// type and nanosecond timestamps.
func NewPcapng(bo Order, link uint16) *Capture {
	c := &Capture{bo: bo, ng: true}
	shb := bo.AppendUint32(nil, 0x1a2b3c4d)
	shb = bo.AppendUint16(shb, 1)
	shb = bo.AppendUint16(shb, 0)
	shb = bo.AppendUint64(shb, ^uint64(0)) // section length unknown
	c.block(0x0a0d0d0a, shb)
	idb := bo.AppendUint16(nil, link)
	idb = bo.AppendUint16(idb, 0)
	idb = bo.AppendUint32(idb, 0)
	idb = bo.AppendUint16(idb, 9) // if_tsresol = 10^-9
	idb = bo.AppendUint16(idb, 1)
	idb = append(idb, 9, 0, 0, 0)
	idb = bo.AppendUint32(idb, 0) // opt_endofopt
	c.block(1, idb)
	return c
}

func (c *Capture) block(typ uint32, body []byte) {
	for len(body)%4 != 0 {
		body = append(body, 0)
	}
	total := uint32(12 + len(body))
	b := c.bo.AppendUint32(nil, typ)
	b = c.bo.AppendUint32(b, total)
	b = append(b, body...)
	b = c.bo.AppendUint32(b, total)
	c.buf.Write(b)
}

// Add appends a frame captured at ts (an enhanced packet block in pcapng).
func (c *Capture) Add(ts time.Time, frame []byte) {
	if c.ng {
		units := uint64(ts.UnixNano())
		b := c.bo.AppendUint32(nil, 0)
		b = c.bo.AppendUint32(b, uint32(units>>32))
		b = c.bo.AppendUint32(b, uint32(units))
		b = c.bo.AppendUint32(b, uint32(len(frame)))
		b = c.bo.AppendUint32(b, uint32(len(frame)))
		c.block(6, append(b, frame...))
		return
	}
	frac := uint32(ts.Nanosecond() / 1000)
	if c.nano {
		frac = uint32(ts.Nanosecond())
	}
	b := c.bo.AppendUint32(nil, uint32(ts.Unix()))
	b = c.bo.AppendUint32(b, frac)
	b = c.bo.AppendUint32(b, uint32(len(frame)))
	b = c.bo.AppendUint32(b, uint32(len(frame)))
	c.buf.Write(append(b, frame...))
}

// AppendRaw appends bytes as they are, e.g. a torn record.
func (c *Capture) AppendRaw(b []byte) { c.buf.Write(b) }

// Bytes returns the capture so far.
func (c *Capture) Bytes() []byte { return c.buf.Bytes() }

// File writes the capture to a file in a temporary directory of t and
// returns its path.
func (c *Capture) File(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "capture.pcap")
	if err := os.WriteFile(p, c.buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// IPPacket builds an IPv4 or IPv6 packet carrying proto with payload (the
// UDP header included by the caller); fragOff is IPv4's flags and
// fragment offset field (in 8-byte units; 0x2000 is More Fragments).
func IPPacket(src, dst netip.Addr, proto byte, payload []byte, fragOff uint16) []byte {
	if src.Is4() {
		h := []byte{0x45, 0, 0, 0, 0, 1, 0, 0, 64, proto, 0, 0}
		binary.BigEndian.PutUint16(h[2:], uint16(20+len(payload)))
		binary.BigEndian.PutUint16(h[6:], fragOff)
		s, d := src.As4(), dst.As4()
		h = append(append(h, s[:]...), d[:]...)
		return append(h, payload...)
	}
	h := []byte{0x60, 0, 0, 0, 0, 0, proto, 64}
	binary.BigEndian.PutUint16(h[4:], uint16(len(payload)))
	s, d := src.As16(), dst.As16()
	h = append(append(h, s[:]...), d[:]...)
	return append(h, payload...)
}

// UDP builds a UDP header (checksum 0) followed by payload.
func UDP(src, dst netip.AddrPort, payload []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, src.Port())
	b = binary.BigEndian.AppendUint16(b, dst.Port())
	b = binary.BigEndian.AppendUint16(b, uint16(8+len(payload)))
	b = append(b, 0, 0)
	return append(b, payload...)
}

// Ether wraps an IP packet in Ethernet II, with a VLAN tag if vlan, padded
// to 60 bytes (a padding the IP length must cut off).
func Ether(ip []byte, vlan bool) []byte {
	b := make([]byte, 12)
	if vlan {
		b = append(b, 0x81, 0x00, 0x00, 0x07)
	}
	et := []byte{0x08, 0x00}
	if ip[0]>>4 == 6 {
		et = []byte{0x86, 0xdd}
	}
	b = append(append(b, et...), ip...)
	for len(b) < 60 {
		b = append(b, 0)
	}
	return b
}

// SLL wraps an IP packet in a Linux cooked (v1) header.
func SLL(ip []byte) []byte {
	b := make([]byte, 14, 16+len(ip))
	if len(ip) > 0 && ip[0]>>4 == 6 {
		b = append(b, 0x86, 0xdd)
	} else {
		b = append(b, 0x08, 0x00)
	}
	return append(b, ip...)
}

// UDPFrame builds an Ethernet frame carrying payload in UDP from src to
// dst ("addr:port", IPv4 or IPv6).
func UDPFrame(src, dst string, payload []byte, vlan bool) []byte {
	return Ether(UDPPacket(src, dst, payload), vlan)
}

// UDPPacket builds the IP packet carrying payload in UDP from src to dst
// ("addr:port", IPv4 or IPv6).
func UDPPacket(src, dst string, payload []byte) []byte {
	s, d := netip.MustParseAddrPort(src), netip.MustParseAddrPort(dst)
	return IPPacket(s.Addr(), d.Addr(), 17, UDP(s, d, payload), 0)
}

// RoCEFrame builds an Ethernet frame carrying pkt from src to dst
// ("addr:port", IPv4 or IPv6), with the ICRC computed.
func RoCEFrame(t testing.TB, src, dst string, pkt roce.Packet) []byte {
	t.Helper()
	s, d := netip.MustParseAddrPort(src), netip.MustParseAddrPort(dst)
	env := roce.Envelope{Src: s.Addr(), Dst: d.Addr(), SrcPort: s.Port(), DstPort: d.Port()}
	f, err := env.AppendFrame(nil, [6]byte{2, 0, 0, 0, 0, 2}, [6]byte{2, 0, 0, 0, 0, 1}, &pkt)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// RoCEPcap writes Ethernet frames into a classic pcap with wire/roce's
// writer, each captured at 2023-11-14T22:13:20Z.
func RoCEPcap(t testing.TB, frames ...[]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := roce.NewPcapWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if err := w.WriteFrame(time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC), f); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// CMPacket returns the UD SEND to QP1 that carries a CM message.
func CMPacket(m roce.CM) roce.Packet {
	return roce.CMPacket(7, m.AppendTo(nil))
}

// REQ is rdma_cm's REQ from 10.0.0.1:40000 for TCP port 7471 (TID 0x1234,
// local comm ID 0xaabbccdd, QP 0x11, starting PSN 100, MTU 1024).
func REQ() roce.CM {
	req := roce.ConnectRequest{
		LocalCommID: 0xaabbccdd, ServiceID: roce.ServiceID(roce.PortSpaceTCP, 7471), LocalQPN: 0x11,
		StartingPSN: 100, PathMTU: roce.MTU1024, ResponderResources: 1, InitiatorDepth: 2, PKey: 0xffff,
	}
	h := roce.IPCMHeader{SrcPort: 40000, Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")}
	copy(req.PrivateData[:], h.AppendTo(nil))
	return roce.CM{Header: roce.CMHeader(roce.AttrREQ, 0x1234), REQ: req}
}
