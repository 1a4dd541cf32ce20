package udp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"strconv"
)

// Bounds checked by [Config.Validate].
const (
	// MaxReaders is the largest accepted Config.Readers.
	MaxReaders = 64
	// MaxBatchSize is the largest accepted Config.BatchSize.
	MaxBatchSize = 1024
	// MaxRecvBuffer is the largest accepted Config.RecvBuffer (1 GiB); the
	// kernel doubles the value it is given and keeps it in an int.
	MaxRecvBuffer = 1 << 30
	// maxDatagramLimit is the largest accepted Config.MaxDatagram: the largest
	// UDP payload that fits in an IP packet without jumbograms.
	maxDatagramLimit = 65535
)

// Config configures a [Listener]. Start from [DefaultConfig]: a zero Config
// does not validate.
type Config struct {
	// Addr is the host:port to listen on. ":40040" (the default) listens on
	// all IPv4 and IPv6 addresses; a port of 0 picks a free port, which every
	// reader then shares. Ignored by [Serve].
	Addr string
	// Readers is the number of SO_REUSEPORT sockets, each read by its own
	// goroutine with its own Handler: 1 to 64. The default is
	// runtime.GOMAXPROCS(0), at most 64. Ignored by [Serve], which uses one reader per
	// connection.
	Readers int
	// BatchSize is the number of datagrams read by one recvmmsg call: 1 to
	// 1024, default 64. Each reader holds BatchSize*MaxDatagram bytes
	// of receive buffers.
	BatchSize int
	// Batched selects recvmmsg (true, the default). False reads one datagram
	// per system call and calls Handler.EndBatch after every datagram; it
	// exists to measure what batching buys.
	Batched bool
	// RecvBuffer is the receive buffer size requested per socket, in bytes:
	// 0 keeps the kernel's default, otherwise up to 1 GiB; the default
	// is 64 MiB. SO_RCVBUFFORCE is tried first so that privileged processes
	// can exceed net.core.rmem_max; the listener logs once if the kernel
	// granted less than asked. Ignored by [Serve].
	RecvBuffer int
	// MaxDatagram is the size of each receive buffer, in bytes: 1 to
	// 65535, default 9216 (a jumbo frame). Longer datagrams are
	// counted in Stats.Truncated and not handed to the handler.
	MaxDatagram int
}

// DefaultConfig returns the configuration of a translator listening on the
// DTA port, 40040, with one reader per usable CPU.
func DefaultConfig() Config {
	return Config{
		Addr:        ":40040",
		Readers:     min(runtime.GOMAXPROCS(0), MaxReaders),
		BatchSize:   64,
		Batched:     true,
		RecvBuffer:  64 << 20,
		MaxDatagram: 9216,
	}
}

// Validate reports every field that is out of range, naming the field.
func (c Config) Validate() error {
	return errors.Join(c.validateAddr(), c.validateReaders(), c.validateRecvBuffer(), c.validateIO())
}

func (c Config) validateAddr() error {
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fmt.Errorf("udp: Config.Addr %q: %w", c.Addr, err)
	}
	if host != "" {
		if _, err := netip.ParseAddr(host); err != nil {
			return fmt.Errorf("udp: Config.Addr %q: host must be an IP address or empty", c.Addr)
		}
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || (p == 0 && port != "0") {
		return fmt.Errorf("udp: Config.Addr %q: port must be a number from 0 to 65535", c.Addr)
	}
	return nil
}

func (c Config) validateReaders() error {
	if c.Readers < 1 || c.Readers > MaxReaders {
		return fmt.Errorf("udp: Config.Readers = %d, want 1 to %d", c.Readers, MaxReaders)
	}
	return nil
}

func (c Config) validateRecvBuffer() error {
	if c.RecvBuffer < 0 || c.RecvBuffer > MaxRecvBuffer {
		return fmt.Errorf("udp: Config.RecvBuffer = %d, want 0 (kernel default) to %d bytes", c.RecvBuffer, MaxRecvBuffer)
	}
	return nil
}

// validateIO checks the fields that [Serve] uses too.
func (c Config) validateIO() error {
	var errs []error
	if c.BatchSize < 1 || c.BatchSize > MaxBatchSize {
		errs = append(errs, fmt.Errorf("udp: Config.BatchSize = %d, want 1 to %d", c.BatchSize, MaxBatchSize))
	}
	if c.MaxDatagram < 1 || c.MaxDatagram > maxDatagramLimit {
		errs = append(errs, fmt.Errorf("udp: Config.MaxDatagram = %d, want 1 to %d bytes", c.MaxDatagram, maxDatagramLimit))
	}
	return errors.Join(errs...)
}
