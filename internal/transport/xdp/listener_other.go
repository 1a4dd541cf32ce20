//go:build !linux

package xdp

import (
	"context"
	"log/slog"
	"net/netip"
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

// Transmitter returns nil.
func (l *Listener) Transmitter(queue int) *Transmitter { return nil }

// Transmitter is unavailable on this platform: Listener.Transmitter returns
// nil.
type Transmitter struct{}

// Add returns false.
func (t *Transmitter) Add(link *Link, src, dst netip.AddrPort, payload []byte) bool { return false }

// Flush does nothing.
func (t *Transmitter) Flush() error { return nil }
