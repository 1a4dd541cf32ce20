package decode

import (
	"net/netip"
	"time"

	"github.com/dta-go/dta/wire/dta"
	"github.com/dta-go/dta/wire/roce"
)

// Meta is what is known of a datagram besides its bytes: where it was
// found and when. Its zero value is a datagram known by its bytes alone.
type Meta struct {
	Index    int            // datagram number (hex input) or packet number in the capture, from 1
	Time     time.Time      // capture time; zero when unknown
	Src, Dst netip.AddrPort // UDP endpoints; zero when unknown
	Note     string         // why the bytes may be incomplete, e.g. "capture truncated"
}

// endpoints returns m's endpoints as the results print them: "" when
// unknown.
func (m *Meta) endpoints() (src, dst string) {
	if m.Src.IsValid() {
		src = m.Src.String()
	}
	if m.Dst.IsValid() {
		dst = m.Dst.String()
	}
	return src, dst
}

// timeText is m's time as the results print it: RFC 3339 with
// nanoseconds in UTC, "" when unknown.
func (m *Meta) timeText() string {
	if m.Time.IsZero() {
		return ""
	}
	return m.Time.UTC().Format(time.RFC3339Nano)
}

// Decoder decodes the datagrams of a capture or of hex input. It holds
// only options; the zero value decodes DTA with the 3-byte header on the
// standard ports. It is safe for concurrent use.
type Decoder struct {
	// Legacy: DTA reports have the prototype's 2-byte base header (no
	// sequence number), so a 2-byte datagram is not taken for an ACK.
	Legacy bool
	// Port is the UDP destination port of DTA reports in a capture; 0
	// means dta.Port (40040).
	Port uint16
	// RoCEPort is the UDP port of RoCEv2 packets in a capture, at either
	// end; 0 means roce.Port (4791).
	RoCEPort uint16
}

func (d *Decoder) port() uint16 {
	if d.Port == 0 {
		return dta.Port
	}
	return d.Port
}

func (d *Decoder) rocePort() uint16 {
	if d.RoCEPort == 0 {
		return roce.Port
	}
	return d.RoCEPort
}

// Packet is one decoded datagram: exactly one of DTA and RoCE is set.
type Packet struct {
	DTA  *Datagram `json:"dta,omitempty"`  // a DTA report datagram or ACK/NACK
	RoCE *RoCE     `json:"roce,omitempty"` // a RoCEv2 packet
}

// Text is the packet as dta decode prints it: one line for the datagram,
// then one per report or header, each ending in a newline.
func (p Packet) Text() string {
	if p.DTA != nil {
		return p.DTA.Text()
	}
	if p.RoCE != nil {
		return p.RoCE.Text()
	}
	return ""
}

// Failed reports whether some part of the packet did not decode.
func (p Packet) Failed() bool {
	return p.DTA != nil && p.DTA.Failed() || p.RoCE != nil && p.RoCE.Failed()
}

// BadICRC reports whether the packet is RoCEv2 with an ICRC that does not
// match.
func (p Packet) BadICRC() bool { return p.RoCE != nil && p.RoCE.BadICRC() }

// Frame decodes packet number index of a capture if it carries a DTA
// report datagram (UDP to Port), a RoCEv2 packet (to or from RoCEPort) or
// a DTA ACK/NACK (to dta.AckPort, or 2 bytes from Port), in that order of
// precedence. It reports false, and decodes nothing, for any other frame.
// The RoCEv2 ICRC is checked against the captured IP and UDP headers.
func (d *Decoder) Frame(index int, f Frame) (Packet, bool) {
	u, ok := FindUDP(f.LinkType, f.Data)
	if !ok {
		return Packet{}, false
	}
	m := Meta{Index: index, Time: f.Time, Src: u.Src, Dst: u.Dst, Note: u.Note}
	port, rocePort := d.port(), d.rocePort()
	switch {
	case u.Dst.Port() == port:
		return Packet{DTA: d.DTA(m, u.Payload)}, true
	case u.Dst.Port() == rocePort || u.Src.Port() == rocePort:
		return Packet{RoCE: DecodeRoCE(m, u.Payload, u.IP)}, true
	case u.Dst.Port() == dta.AckPort || (u.Src.Port() == port && len(u.Payload) == dta.AckLen):
		return Packet{DTA: d.Ack(m, u.Payload)}, true
	}
	return Packet{}, false
}
