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
