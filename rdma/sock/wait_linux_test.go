package sock_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/dta-go/dta/rdma/sock"
)

func TestAReceiverWaitingInTheKernelGetsEveryBatchAndStopsAtClose(t *testing.T) {
	for _, poll := range []time.Duration{0, 100 * time.Microsecond} {
		t.Run("poll "+poll.String(), func(t *testing.T) { testWaitInKernel(t, poll) })
	}
}

func testWaitInKernel(t *testing.T, poll time.Duration) {
	rx, err := sock.Listen("127.0.0.1:0", 1<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := sock.Listen("127.0.0.1:0", 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	r := sock.NewReceiver(rx, 8, 64)
	r.WaitInKernel(time.Minute) // only Close can end a wait early
	r.PollBeforeWait(poll)
	type read struct {
		msgs []string
		err  error
	}
	reads := make(chan read)
	go func() {
		for {
			n, err := r.Read()
			var rd read
			for i := range n {
				b, _, _, _ := r.Datagram(i)
				rd.msgs = append(rd.msgs, string(b))
			}
			rd.err = err
			reads <- rd
			if err != nil {
				return
			}
		}
	}()
	s := sock.NewSender(tx, 4, 64)
	to := rx.LocalAddr()
	for round, m := range []string{"first", "second"} {
		time.Sleep(20 * time.Millisecond) // the reader is waiting in ppoll by now, most likely
		s.Add(append(s.Buf(), m...), to, netip.Addr{})
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		select {
		case rd := <-reads:
			if rd.err != nil || len(rd.msgs) != 1 || rd.msgs[0] != m {
				t.Fatalf("round %d: read %q, %v; want %q", round, rd.msgs, rd.err, m)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the datagram did not wake the reader", round)
		}
	}
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	if err := rx.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case rd := <-reads:
		if rd.err == nil || sock.TransientError(rd.err) || len(rd.msgs) != 0 {
			t.Errorf("after Close: read %q, %v; want no datagram and a permanent error", rd.msgs, rd.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the wait")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %v: it waited for the wait's bound", d)
	}
}
