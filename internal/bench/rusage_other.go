//go:build !unix

package bench

import "time"

func rusageSelf() time.Duration { return 0 }

func processWaits() uint64 { return 0 }
