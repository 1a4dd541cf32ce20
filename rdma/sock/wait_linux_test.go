package sock_test

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dta-go/dta/rdma/sock"
)

func TestAReceiverWaitingInTheKernelGetsEveryBatchAndStopsAtClose(t *testing.T) {
	for _, keep := range []bool{false, true} {
		for _, poll := range []time.Duration{0, 100 * time.Microsecond} {
			t.Run(fmt.Sprintf("poll %v, keeping its processor %v", poll, keep), func(t *testing.T) { testWaitInKernel(t, poll, keep) })
		}
	}
}

func testWaitInKernel(t *testing.T, poll time.Duration, keep bool) {
	rx, tx := sock.ListenPair(t)
	r := sock.NewReceiver(rx, 8, 64)
	r.WaitInKernel(time.Minute) // only Close can end a wait early
	r.PollBeforeWait(poll)
	r.KeepProcessor(keep)
	type read struct {
		msgs []string
		err  error
	}
	reads := make(chan read)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
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

func TestAReceiverThatKeepsItsProcessorStillLetsOtherGoroutinesAndTheCollectorRun(t *testing.T) {
	// One processor, and the waiting receiver keeps it: only the runtime's
	// preemption, whose signal ends the wait, lets this goroutine run again
	// before the wait's bound of a minute.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	rx, tx := sock.ListenPair(t)
	r := sock.NewReceiver(rx, 8, 64)
	r.WaitInKernel(time.Minute)
	r.KeepProcessor(true)
	got := make(chan string, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for {
			n, err := r.Read()
			if err != nil {
				close(got)
				return
			}
			for i := range n {
				b, _, _, _ := r.Datagram(i)
				got <- string(b)
			}
		}
	}()
	start := time.Now()
	time.Sleep(50 * time.Millisecond) // the receiver waits meanwhile
	for range 3 {
		runtime.GC() // stops the world: the waiting goroutine too
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("a sleep and 3 collections took %v: the wait kept the processor until its bound", d)
	}
	s := sock.NewSender(tx, 1, 64)
	s.Add(append(s.Buf(), "after"...), rx.LocalAddr(), netip.Addr{})
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if m != "after" {
			t.Fatalf("read %q", m)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the datagram did not reach the receiver")
	}
	rx.Close()
	select {
	case <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not end the wait")
	}
}

// BenchmarkWakeUp measures what a wake-up costs: one datagram bounces
// between this process and an echo process (this test binary started again,
// TestMain), so that every datagram finds its reader asleep: the two sides
// are separate processes, as a translator and a collector are, and neither
// runtime has other work to switch to. cpu-µs/wake is this process's CPU time
// (getrusage) per datagram it waits for, for the two ways a Receiver can
// wait, both sides alike: in the Go runtime's network poller, or in the
// kernel (WaitInKernel, on a goroutine locked to its OS thread), handing its
// processor back to the runtime for the wait or keeping it (KeepProcessor).
func BenchmarkWakeUp(b *testing.B) {
	for _, mode := range []string{"poller", "kernel", "kernel-keep"} {
		b.Run(mode, func(b *testing.B) {
			self, err := sock.Listen("127.0.0.1:0", 1<<20, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer self.Close()
			echo := exec.Command(os.Args[0], "-test.run=^$")
			echo.Env = append(os.Environ(), echoEnv+"="+mode)
			in, err := echo.StdinPipe()
			if err != nil {
				b.Fatal(err)
			}
			out, err := echo.StdoutPipe()
			if err != nil {
				b.Fatal(err)
			}
			if err := echo.Start(); err != nil {
				b.Fatal(err)
			}
			defer func() { in.Close(); echo.Wait() }()
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			peer, err := netip.ParseAddrPort(strings.TrimSpace(line))
			if err != nil {
				b.Fatal(err)
			}
			if mode != "poller" {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
			}
			r, s := waiter(self, mode), sock.NewSender(self, 1, 64)
			var ru0, ru1 syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			b.ResetTimer()
			for range b.N {
				s.Add(append(s.Buf(), "ping"...), peer, netip.Addr{})
				if err := s.Flush(); err != nil {
					b.Fatal(err)
				}
				if _, err := r.Read(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
			b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(b.N), "cpu-µs/wake")
		})
	}
}

// echoEnv, set to poller, kernel or kernel-keep, makes this test binary the echo process
// of BenchmarkWakeUp (TestMain), waiting that way.
const echoEnv = "DTA_SOCK_ECHO"

// waiter returns a receiver on c that waits as mode says.
func waiter(c *sock.Conn, mode string) *sock.Receiver {
	r := sock.NewReceiver(c, 1, 64)
	if mode != "poller" {
		r.WaitInKernel(time.Second)
		r.KeepProcessor(mode == "kernel-keep")
	}
	return r
}

// serveEcho is the echo process: it prints its address, then sends every
// datagram back to its source until its standard input ends.
func serveEcho(mode string) error {
	c, err := sock.Listen("127.0.0.1:0", 1<<20, 0)
	if err != nil {
		return err
	}
	go func() {
		io.Copy(io.Discard, os.Stdin)
		c.Close()
	}()
	if mode != "poller" {
		runtime.LockOSThread()
	}
	fmt.Println(c.LocalAddr())
	r, s := waiter(c, mode), sock.NewSender(c, 1, 64)
	for {
		if _, err := r.Read(); err != nil {
			return nil // closed
		}
		b, from, _, _ := r.Datagram(0)
		s.Add(append(s.Buf(), b...), from, netip.Addr{})
		if err := s.Flush(); err != nil {
			return err
		}
	}
}

func TestMain(m *testing.M) {
	if mode := os.Getenv(echoEnv); mode != "" {
		if err := serveEcho(mode); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestReadAfterReadsWhatArrivedDuringItsPauseWithoutWaitingForMore(t *testing.T) {
	rx, tx := sock.ListenPair(t)
	r := sock.NewReceiver(rx, 8, 64)
	if n, err := r.ReadAfter(2 * time.Millisecond); n != 0 || err != nil {
		t.Fatalf("ReadAfter with nothing sent: %d, %v; want 0, nil", n, err)
	}
	s := sock.NewSender(tx, 4, 64)
	for _, m := range []string{"a", "b", "c"} {
		s.Add(append(s.Buf(), m...), rx.LocalAddr(), netip.Addr{})
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	// Loopback queues the datagrams within the send: they are there.
	n, err := r.ReadAfter(100 * time.Microsecond)
	var got []string
	for i := range n {
		b, from, _, _ := r.Datagram(i)
		if from != tx.LocalAddr() {
			t.Errorf("datagram %d from %v, want %v", i, from, tx.LocalAddr())
		}
		got = append(got, string(b))
	}
	if err != nil || strings.Join(got, ",") != "a,b,c" {
		t.Fatalf("ReadAfter: %q, %v; want a, b, c", got, err)
	}
	if a := testing.AllocsPerRun(100, func() { r.ReadAfter(time.Microsecond) }); a != 0 {
		t.Errorf("ReadAfter allocates %v times per call", a)
	}
	if err := rx.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadAfter(0); err == nil || sock.TransientError(err) {
		t.Errorf("ReadAfter on a closed socket: %v, want a permanent error", err)
	}
}
