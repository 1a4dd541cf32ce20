package sock_test

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/dta-go/dta/rdma/sock"
)

func TestABatchCrossesLoopbackWithItsAddresses(t *testing.T) {
	for _, c := range []struct{ bind, to string }{
		{"127.0.0.1:0", "127.0.0.1"},
		{"0.0.0.0:0", "127.0.0.1"}, // wildcard: the destination comes from IP_PKTINFO
		{"[::1]:0", "::1"},
	} {
		t.Run(c.bind, func(t *testing.T) {
			rx, err := sock.Listen(c.bind, 1<<20, 0)
			if err != nil {
				t.Skipf("listen %s: %v", c.bind, err)
			}
			defer rx.Close()
			tx, err := sock.Listen(netip.AddrPortFrom(netip.MustParseAddr(c.to), 0).String(), 0, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Close()
			to := netip.AddrPortFrom(netip.MustParseAddr(c.to), rx.LocalAddr().Port())
			s := sock.NewSender(tx, 4, 64)
			msgs := [][]byte{[]byte("one"), []byte("two"), bytes.Repeat([]byte("x"), 100)}
			for _, m := range msgs {
				b := append(s.Buf(), m...)
				s.Add(b, to, netip.Addr{})
			}
			if err := s.Flush(); err != nil || s.Errors() != 0 {
				t.Fatalf("flush: %v, %d refused", err, s.Errors())
			}
			r := sock.NewReceiver(rx, 8, 64)
			got := 0
			for got < len(msgs) {
				n, err := r.Read()
				if err != nil {
					t.Fatal(err)
				}
				for i := range n {
					b, from, dst, trunc := r.Datagram(i)
					want := msgs[got]
					if trunc != (len(want) >= 64) || !trunc && !bytes.Equal(b, want) {
						t.Errorf("datagram %d: %q (truncated %v), want %q", got, b, trunc, want)
					}
					if from != tx.LocalAddr() || dst != to.Addr() {
						t.Errorf("datagram %d from %v to %v, want from %v to %v", got, from, dst, tx.LocalAddr(), to.Addr())
					}
					got++
				}
			}
		})
	}
}

func TestACaptureOfNothingIsNil(t *testing.T) {
	c, err := sock.NewCapture(nil, sock.MACRequester, sock.MACResponder)
	if err != nil || c != nil {
		t.Fatalf("NewCapture(nil) = %v, %v", c, err)
	}
	c.Record(nil, nil, true) // a nil capture records nothing, without panicking
}
