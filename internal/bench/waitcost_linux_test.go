package bench

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestATimedWaitCostsSomeCPUButLessThanItsLength(t *testing.T) {
	// 50 sleeps of 2 ms: each gives up the CPU for its length, so what it
	// costs is the entry, the timer and the wake-up, not the 2 ms. (The Go
	// runtime's preemption signal may cut a sleep short: half of them is
	// the floor.)
	start := time.Now()
	c := timedWaitCPU(50, 2*time.Millisecond)
	if wall := time.Since(start); wall < 50*time.Millisecond {
		t.Fatalf("50 waits of 2ms took %v: they did not sleep", wall)
	}
	if c <= 0 || c >= time.Millisecond {
		t.Errorf("a 2ms wait cost %v of CPU, want more than 0 and well under the wait", c)
	}
	if timedWaitCPU(0, time.Millisecond) != 0 {
		t.Error("no waits, yet a cost")
	}
}

// BenchmarkWaitEndedByATimer reports what a 100 µs nanosleep costs the
// sleeping thread in CPU (cpu-µs/wait): the price of each of the responder's
// AF_XDP pauses, which `dta bench --sink roce` measures the same way
// (timedWaitCPU) and prints per run.
func BenchmarkWaitEndedByATimer(b *testing.B) {
	c := timedWaitCPU(b.N, 100*time.Microsecond)
	b.ReportMetric(c.Seconds()*1e6, "cpu-µs/wait")
}

// BenchmarkWaitEndedByAnotherThread reports the same for a wait that another
// thread ends (an eventfd written every 100 µs by a thread that spins, as a
// packet's arrival would end a poll): the part of a timed wait's cost that
// is the timer's is the difference.
func BenchmarkWaitEndedByAnotherThread(b *testing.B) {
	next := time.Now()
	writeEvery100µs := func(efd int) {
		for time.Now().Before(next) {
		}
		next = next.Add(100 * time.Microsecond)
		unix.Write(efd, eventOne[:])
	}
	withEventfd(b, 0, writeEvery100µs, func(efd int) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid := unix.Gettid()
		var buf [8]byte
		c0 := threadCPU(tid)
		for range b.N {
			if _, err := unix.Read(efd, buf[:]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric((threadCPU(tid)-c0).Seconds()*1e6/float64(b.N), "cpu-µs/wait")
	})
}

// BenchmarkWakingAThread reports what ending another thread's wait costs
// the thread that ends it (µs/wake: the time in the eventfd write, which
// runs on the waker's CPU throughout), against the same write when the
// other thread is not waiting (it spins on a non-blocking read). Over a
// veth the responder pays the first for each ACK that wakes the
// translator: the peer's receive path runs in the sender's system call.
func BenchmarkWakingAThread(b *testing.B) {
	for _, c := range []struct {
		name  string
		flags int
	}{{"asleep", 0}, {"awake", unix.EFD_NONBLOCK}} {
		b.Run(c.name, func(b *testing.B) {
			var buf [8]byte
			read := func(efd int) { unix.Read(efd, buf[:]) }
			withEventfd(b, c.flags, read, func(efd int) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				time.Sleep(10 * time.Millisecond) // the reader is waiting (or spinning)
				var in time.Duration
				next := time.Now()
				for range b.N {
					for time.Now().Before(next) {
					}
					next = next.Add(100 * time.Microsecond) // time for the reader to wait again
					t0 := time.Now()
					if _, err := unix.Write(efd, eventOne[:]); err != nil {
						b.Fatal(err)
					}
					in += time.Since(t0)
				}
				b.ReportMetric(in.Seconds()*1e6/float64(b.N), "µs/wake")
			})
		})
	}
}

// eventOne is the 8-byte count 1 an eventfd write adds.
var eventOne = [8]byte{1}

// withEventfd makes an eventfd (EFD_CLOEXEC|flags), runs loop(efd) over and
// over on a thread of its own while f(efd) runs, then stops it (a last
// write ends a read that waits).
func withEventfd(b *testing.B, flags int, loop func(efd int), f func(efd int)) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|flags)
	if err != nil {
		b.Skip(err)
	}
	defer unix.Close(efd)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		for !stop.Load() {
			loop(efd)
		}
	}()
	f(efd)
	stop.Store(true)
	unix.Write(efd, eventOne[:])
	<-done
}
