package sock

import (
	"io"
	"sync"
	"time"

	"github.com/dta-go/dta/wire/roce"
)

// Capture writes the packets an endpoint sends and receives to a pcap file
// as Ethernet frames that tshark dissects, rebuilding the IP and UDP
// headers from the packet's Envelope (what the kernel sent: IPv4 ID 0 with
// DF). A nil *Capture records nothing, so endpoints call Record
// unconditionally. It is safe for concurrent use.
type Capture struct {
	mu     sync.Mutex
	w      *roce.PcapWriter
	buf    []byte
	pkt    roce.Packet
	local  [6]byte // MAC of this endpoint in the capture
	remote [6]byte
	err    error // first write error; capturing stops there
}

// Made-up, locally administered MAC addresses of the two ends in captures.
var (
	MACResponder = [6]byte{0x02, 0xd7, 0xa0, 0x00, 0x00, 0x01}
	MACRequester = [6]byte{0x02, 0xd7, 0xa0, 0x00, 0x00, 0x02}
)

// NewCapture writes the pcap file header to w and returns a Capture of an
// endpoint with MAC local talking to remote. A nil w returns a nil
// Capture.
func NewCapture(w io.Writer, local, remote [6]byte) (*Capture, error) {
	if w == nil {
		return nil, nil
	}
	pw, err := roce.NewPcapWriter(w)
	if err != nil {
		return nil, err
	}
	return &Capture{w: pw, buf: make([]byte, 0, 9216), local: local, remote: remote}, nil
}

// Record writes one packet (a UDP payload) carried in env; out says
// whether this endpoint sent it. Undecodable packets are skipped; after a
// write error nothing more is recorded.
func (c *Capture) Record(env *roce.Envelope, udpPayload []byte, out bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil || c.pkt.Decode(udpPayload) != nil {
		return
	}
	src, dst := c.remote, c.local
	if out {
		src, dst = dst, src
	}
	frame, err := env.AppendFrame(c.buf[:0], dst, src, &c.pkt)
	if err != nil {
		return
	}
	c.buf = frame[:0]
	c.err = c.w.WriteFrame(time.Now(), frame)
}
