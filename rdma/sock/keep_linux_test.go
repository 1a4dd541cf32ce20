package sock

import (
	"net/netip"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

func TestWaitsKeepAtMostAllProcessorsButOne(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	if keepers.Load() != 0 {
		t.Fatalf("%d waits keep a processor before the test", keepers.Load())
	}
	if !takeProcessor() || !takeProcessor() {
		t.Fatal("with GOMAXPROCS 3, two waits may not keep their processors")
	}
	if takeProcessor() {
		t.Fatal("with GOMAXPROCS 3, a third wait keeps its processor too: none is left for other goroutines")
	}
	if keepers.Load() != 2 {
		t.Fatalf("%d waits counted, want the 2 that keep", keepers.Load())
	}
	releaseProcessor()
	if !takeProcessor() {
		t.Fatal("a wait that ended did not give its place back")
	}
	releaseProcessor()
	releaseProcessor()
	if keepers.Load() != 0 {
		t.Fatalf("%d waits counted after all ended", keepers.Load())
	}
}

func TestAnIdleReceiverHandsItsProcessorBackUntilADatagramComes(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	rx, tx := ListenPair(t)
	r := NewReceiver(rx, 8, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		// The runtime's preemption ends a kept wait after about 10 ms, the
		// wait's bound after 50 ms, whichever comes first (on a loaded
		// machine, the runtime's may not come for seconds).
		r.WaitInKernel(50 * time.Millisecond)
		r.KeepProcessor(true)
		for {
			if _, err := r.Read(); err != nil {
				return
			}
		}
	}()
	defer func() { rx.Close(); <-done }()
	// busy sends a datagram every millisecond until stop is closed: the
	// receiver's waits are then short, and kept.
	busy := func() (stop func()) {
		quit, over := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(over)
			s := NewSender(tx, 1, 64)
			for {
				select {
				case <-quit:
					return
				case <-time.After(time.Millisecond):
				}
				s.Add(append(s.Buf(), "busy"...), rx.LocalAddr(), netip.Addr{})
				s.Flush()
			}
		}()
		return func() { close(quit); <-over }
	}
	// until reports whether keepers reaches want within 10 s.
	until := func(want int32) bool {
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Microsecond) {
			if keepers.Load() == want {
				return true
			}
		}
		return false
	}
	stop := busy()
	if !until(1) {
		stop()
		t.Fatal("a receiver busy with datagrams never kept its processor while it waited")
	}
	stop()
	// Once the receiver has read every datagram sent, a kept wait ends
	// without one: the receiver then waits handing its processor back. (A
	// datagram still queued would end the idleness it may have counted
	// during the busy time, when a wait ran long on a loaded machine.)
	for end := time.Now().Add(10 * time.Second); queued(t, rx) > 0 || !r.idle.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("a receiver without datagrams for 10 s (waits of at most 50 ms) does not count as idle (%d bytes queued): it keeps its processor", queued(t, rx))
		}
	}
	for range 200 {
		if keepers.Load() != 0 {
			t.Fatal("an idle receiver took its processor again without a datagram")
		}
		time.Sleep(time.Millisecond)
	}
	stop = busy()
	defer stop()
	if !until(1) {
		t.Fatal("once datagrams come again the receiver does not keep its processor while it waits")
	}
}

// queued returns the bytes of the next datagram queued on c (SIOCINQ), 0 if
// none is.
func queued(t *testing.T, c *Conn) int {
	var n int32
	var errno syscall.Errno
	if err := c.rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
	}); err != nil || errno != 0 {
		t.Fatalf("SIOCINQ: %v %v", err, errno)
	}
	return int(n)
}

// ListenPair returns a receiving and a sending socket on 127.0.0.1 for the
// tests of this package and of sock_test; tx is closed when the test ends,
// rx is the test's to close.
func ListenPair(t testing.TB) (rx, tx *Conn) {
	rx, err := Listen("127.0.0.1:0", 1<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	tx, err = Listen("127.0.0.1:0", 0, 1<<20)
	if err != nil {
		rx.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Close() })
	return rx, tx
}
