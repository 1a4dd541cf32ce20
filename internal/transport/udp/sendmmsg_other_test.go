//go:build !linux

package udp

import "net"

// batchSender sends the same datagram n times, one write each, where
// sendmmsg is not available.
type batchSender struct {
	c       *net.UDPConn
	payload []byte
	n       int
}

func newBatchSender(c *net.UDPConn, payload []byte, n int) (*batchSender, error) {
	return &batchSender{c, payload, n}, nil
}

// send sends all n datagrams.
func (s *batchSender) send() error {
	for range s.n {
		if _, err := s.c.Write(s.payload); err != nil {
			return err
		}
	}
	return nil
}
