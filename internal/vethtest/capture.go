//go:build linux

package vethtest

import (
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Capture records the frames Peer receives, as a packet capture on the
// wire would: what the other end really sent, headers included.
type Capture struct {
	t      testing.TB
	iface  string
	fd     int
	mu     sync.Mutex
	frames [][]byte
	done   chan struct{}
	wg     sync.WaitGroup
}

// CapturePeer starts recording every IPv4 frame that arrives at Peer (an
// AF_PACKET socket in NS); Stop ends it. The test fails if the socket
// cannot be opened.
func (p *Pair) CapturePeer(t testing.TB) *Capture {
	t.Helper()
	const ethPIP = 0x0800
	proto := int(htons(ethPIP))
	c := &Capture{t: t, iface: p.Peer, fd: -1, done: make(chan struct{})}
	var err error
	p.InNS(t, func() {
		c.fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
		if err != nil {
			return
		}
		err = unix.Bind(c.fd, &unix.SockaddrLinklayer{Protocol: htons(ethPIP), Ifindex: p.PeerIndex})
	})
	if err == nil {
		tv := unix.NsecToTimeval((20 * time.Millisecond).Nanoseconds())
		err = unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	}
	if err == nil {
		// Room for bursts while the test's machine is busy: tests run as
		// root, which may exceed rmem_max.
		err = unix.SetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20)
	}
	if err != nil {
		if c.fd >= 0 {
			unix.Close(c.fd)
		}
		t.Fatalf("capture on %s: %v", p.Peer, err)
	}
	c.wg.Add(1)
	go c.read()
	t.Cleanup(func() { c.Stop() })
	return c
}

func (c *Capture) read() {
	defer c.wg.Done()
	buf := make([]byte, 1<<16)
	for {
		n, from, err := unix.Recvfrom(c.fd, buf, 0)
		if err != nil {
			// The receive timeout: nothing queued. Once stopped, the
			// queue is drained.
			select {
			case <-c.done:
				return
			default:
				continue
			}
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue // Peer's own frames
		}
		c.mu.Lock()
		c.frames = append(c.frames, append([]byte(nil), buf[:n]...))
		c.mu.Unlock()
	}
}

// Stop ends the capture, once every frame that had arrived is read, and
// returns them all, Ethernet header first; frames the kernel dropped for
// want of buffer space fail the test. Later calls return the same frames.
func (c *Capture) Stop() [][]byte {
	select {
	case <-c.done:
	default:
		close(c.done)
		c.wg.Wait()
		if st, err := unix.GetsockoptTpacketStats(c.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil && st.Drops > 0 {
			c.t.Errorf("capture on %s: the kernel dropped %d frames: the capture is incomplete", c.iface, st.Drops)
		}
		unix.Close(c.fd)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.frames
}

// htons puts v in network byte order, as the AF_PACKET protocol fields
// want it.
func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}
