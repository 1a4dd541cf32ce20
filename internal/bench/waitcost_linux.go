package bench

import (
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// timedWaitCPU measures what one timed wait costs this machine: the CPU time
// (the thread's, from schedstat) of n nanosleeps of d each, per sleep. It is
// the price of the responder's AF_XDP pause (a raw nanosleep, as here) and
// of any wait a timer ends: about 20 µs on the VM of docs/BENCHMARKS.md,
// whose timer interrupts exit to the hypervisor. 0 if the thread's CPU time
// cannot be read.
func timedWaitCPU(n int, d time.Duration) time.Duration {
	if n <= 0 {
		return 0
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	ts := unix.NsecToTimespec(d.Nanoseconds())
	c0 := threadCPU(tid)
	for range n {
		unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
	}
	c1 := threadCPU(tid)
	if c0 == 0 || c1 < c0 {
		return 0
	}
	return (c1 - c0) / time.Duration(n)
}
