//go:build unix

package bench

import (
	"time"

	"golang.org/x/sys/unix"
)

func rusageSelf() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processWaits is the number of times a thread of the process gave up its
// CPU to wait (voluntary context switches: a sleep, a poll, a futex), each
// followed by a wake-up.
func processWaits() uint64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil || ru.Nvcsw < 0 {
		return 0
	}
	return uint64(ru.Nvcsw)
}
