//go:build !linux

package xdp

import (
	"context"
	"log/slog"
)

// Listener is unavailable on this platform; see [Listen].
type Listener struct{ stats Stats }

// Listen returns ErrUnsupported.
func Listen(cfg Config, routes []Route, logger *slog.Logger) (*Listener, error) {
	return nil, ErrUnsupported
}

// Stats returns zero counters.
func (l *Listener) Stats() *Stats { return &l.stats }

// KernelStats returns zeros.
func (l *Listener) KernelStats() KernelStats { return KernelStats{} }

// Run returns ErrUnsupported.
func (l *Listener) Run(ctx context.Context) error { return ErrUnsupported }

// Close does nothing.
func (l *Listener) Close() error { return nil }

// Mode returns "".
func (l *Listener) Mode() string { return "" }

// ReaderThreads returns nil.
func (l *Listener) ReaderThreads() []int { return nil }

// ReaderPackets returns nil.
func (l *Listener) ReaderPackets() []uint64 { return nil }
