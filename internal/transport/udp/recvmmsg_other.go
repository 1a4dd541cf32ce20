//go:build !linux

package udp

import (
	"net"
	"net/netip"
)

// batchSupported reports whether batched listeners use recvmmsg.
const batchSupported = false

// batchReader is not available outside Linux: batched listeners read one
// datagram per system call there.
type batchReader struct{}

// newBatchReader returns nil: the reader falls back to one read per datagram.
func newBatchReader(*net.UDPConn, [][]byte) *batchReader { return nil }

func (*batchReader) read() (int, error) { panic("unreachable") }

func (*batchReader) size(int) (int, bool) { panic("unreachable") }

func (*batchReader) from(int) netip.AddrPort { panic("unreachable") }
