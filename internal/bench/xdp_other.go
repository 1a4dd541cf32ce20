//go:build !linux

package bench

import (
	"context"
	"errors"
	"io"
)

// XDPReport is a whole `dta bench --transport xdp` (Linux only).
type XDPReport struct{}

// RunXDP needs Linux.
func RunXDP(ctx context.Context, cfg Config) (*XDPReport, error) {
	return nil, errors.New("bench: --transport xdp needs Linux (AF_XDP)")
}

// RunXDPQueues needs Linux.
func RunXDPQueues(ctx context.Context, cfg Config, queues int) (*XDPReport, error) {
	return RunXDP(ctx, cfg)
}

// MaxXDPQueues bounds RunXDPQueues's queues.
const MaxXDPQueues = 16

// WriteTable writes nothing.
func (r *XDPReport) WriteTable(w io.Writer) error { return nil }
