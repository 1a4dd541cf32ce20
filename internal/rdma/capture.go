package rdma

import (
	"io"
	"sync"
	"time"

	"github.com/dta-go/dta/wire/roce"
)

// capture writes the packets an endpoint sends and receives to a pcap
// file as Ethernet frames, rebuilding IP and UDP headers from the packet's
// Envelope (what the kernel sent: IPv4 ID 0 with DF).
type capture struct {
	mu     sync.Mutex
	w      *roce.PcapWriter
	buf    []byte
	pkt    roce.Packet
	local  [6]byte // MAC of this endpoint in the capture
	remote [6]byte
	err    error // first write error; capturing stops there
}

func newCapture(w io.Writer, local, remote [6]byte) (*capture, error) {
	if w == nil {
		return nil, nil
	}
	pw, err := roce.NewPcapWriter(w)
	if err != nil {
		return nil, err
	}
	return &capture{w: pw, buf: make([]byte, 0, 9216), local: local, remote: remote}, nil
}

// record writes one packet (a UDP payload) carried in env; out says
// whether this endpoint sent it. A nil capture records nothing.
func (c *capture) record(env *roce.Envelope, udpPayload []byte, out bool) {
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

var (
	macResponder = [6]byte{0x02, 0xd7, 0xa0, 0x00, 0x00, 0x01}
	macRequester = [6]byte{0x02, 0xd7, 0xa0, 0x00, 0x00, 0x02}
)
