package sock_test

import (
	"bytes"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/dta-go/dta/rdma/sock"
)

// datagrams returns n datagrams of the given sizes (cycled), each filled
// with its index so that a reordering or a wrong split shows.
func datagrams(n int, sizes ...int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = bytes.Repeat([]byte{byte(i)}, sizes[i%len(sizes)])
	}
	return out
}

func TestGSORunsArriveAsTheDatagramsSent(t *testing.T) {
	for _, c := range []struct {
		name      string
		bind      string
		msgs      [][]byte
		coalesced bool // at least one super-datagram is expected
	}{
		{"a run of equal packets goes as one super-datagram", "127.0.0.1", datagrams(64, 40), true},
		{"a run longer than 64 packets is cut into several", "127.0.0.1", datagrams(200, 40), true},
		{"a shorter packet ends a run and belongs to it", "127.0.0.1", datagrams(9, 96, 96, 96, 40), true},
		{"alternating sizes still arrive in order", "127.0.0.1", datagrams(20, 96, 40), true},
		{"a longer packet starts a new run", "127.0.0.1", datagrams(12, 40, 40, 1000), true},
		{"single packets go as sent", "127.0.0.1", datagrams(1, 4096), false},
		{"IPv6 loopback runs arrive as sent", "::1", datagrams(30, 100), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rx, err := sock.Listen(netip.AddrPortFrom(netip.MustParseAddr(c.bind), 0).String(), 8<<20, 0)
			if err != nil {
				t.Skipf("listen %s: %v", c.bind, err)
			}
			defer rx.Close()
			tx, err := sock.Listen(netip.AddrPortFrom(netip.MustParseAddr(c.bind), 0).String(), 0, 8<<20)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Close()
			if !tx.EnableGSO() || !rx.EnableGRO() {
				t.Skip("the kernel has no UDP GSO or GRO")
			}
			to := netip.AddrPortFrom(netip.MustParseAddr(c.bind), rx.LocalAddr().Port())
			s := sock.NewSender(tx, 256, 0)
			for _, m := range c.msgs {
				s.Add(m, to, netip.Addr{})
			}
			if err := s.Flush(); err != nil || s.Errors() != 0 {
				t.Fatalf("flush: %v, %d refused", err, s.Errors())
			}
			if c.coalesced && s.Coalesced() == 0 {
				t.Errorf("no super-datagram sent")
			}
			r := sock.NewReceiver(rx, 8, 4200)
			got := 0
			deadline := time.Now().Add(10 * time.Second)
			rx.UDPConn().SetReadDeadline(deadline)
			for got < len(c.msgs) {
				n, err := r.Read()
				if err != nil {
					t.Fatalf("after %d of %d datagrams: %v", got, len(c.msgs), err)
				}
				for i := range n {
					b, from, dst, trunc := r.Datagram(i)
					if trunc || from != tx.LocalAddr() || dst != to.Addr() {
						t.Fatalf("datagram from %v to %v, truncated %v", from, dst, trunc)
					}
					seg := r.SegmentSize(i)
					if seg <= 0 {
						seg = len(b)
					}
					for len(b) > 0 {
						k := min(seg, len(b))
						if got >= len(c.msgs) || !bytes.Equal(b[:k], c.msgs[got]) {
							t.Fatalf("packet %d: %d bytes %x..., want %d bytes", got, k, b[:min(k, 4)], len(c.msgs[min(got, len(c.msgs)-1)]))
						}
						got++
						b = b[k:]
					}
				}
			}
		})
	}
}

func TestARefusedSuperDatagramIsSentOneDatagramAtATime(t *testing.T) {
	rx, err := sock.Listen("127.0.0.1:0", 8<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	tx, err := sock.Listen("127.0.0.1:0", 0, 8<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	if !tx.EnableGSO() {
		t.Skip("the kernel has no UDP GSO")
	}
	// UDP checksum 0 again: the kernel refuses every GSO send (EINVAL).
	rc, err := tx.UDPConn().SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_NO_CHECK, 1) })
	to := rx.LocalAddr()
	msgs := datagrams(40, 60)
	s := sock.NewSender(tx, 64, 0)
	for round := range 2 { // the second flush no longer tries
		for _, m := range msgs {
			s.Add(m, to, netip.Addr{})
		}
		if err := s.Flush(); err != nil || s.Errors() != 0 || s.Coalesced() != 0 {
			t.Fatalf("round %d: flush: %v, %d refused, %d super-datagrams", round, err, s.Errors(), s.Coalesced())
		}
	}
	r := sock.NewReceiver(rx, 64, 128)
	rx.UDPConn().SetReadDeadline(time.Now().Add(10 * time.Second))
	for got := 0; got < 2*len(msgs); {
		n, err := r.Read()
		if err != nil {
			t.Fatalf("after %d of %d datagrams: %v", got, 2*len(msgs), err)
		}
		for i := range n {
			b, _, _, _ := r.Datagram(i)
			if want := msgs[got%len(msgs)]; !bytes.Equal(b, want) {
				t.Fatalf("datagram %d: %d bytes %x..., want %d bytes %x...", got, len(b), b[:min(len(b), 2)], len(want), want[:2])
			}
			got++
		}
	}
}
