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

// WriteTable writes nothing.
func (r *XDPReport) WriteTable(w io.Writer) error { return nil }
