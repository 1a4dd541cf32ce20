//go:build !linux

package bench

import "net"

// batchSender sends one datagram per system call where sendmmsg is missing.
type batchSender struct{ c *net.UDPConn }

func (b *batchSender) init(c *net.UDPConn) error { b.c = c; return nil }

func (b *batchSender) send(s *sender, n int) (int, error) {
	for i := range n {
		if _, err := b.c.Write(s.take()); err != nil {
			return i, err
		}
	}
	return n, nil
}

func threadID() int { return 0 }
