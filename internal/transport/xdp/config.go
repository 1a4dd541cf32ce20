package xdp

import (
	"errors"
	"fmt"
	"time"
)

// Bounds checked by [Config.Validate].
const (
	maxQueues    = 64
	maxRingSize  = 1 << 16
	maxBatchSize = 1024
	minFrameSize = 2048
	maxFrameSize = 4096

	maxCoalesceMax = 10 * time.Millisecond
)

// Attach modes of the XDP program (Config.AttachMode).
const (
	// AttachAuto tries the driver's native XDP hook, then the generic one.
	AttachAuto = "auto"
	// AttachNative uses the driver's XDP hook only.
	AttachNative = "native"
	// AttachGeneric uses the generic (SKB) hook, slower but available on
	// every interface.
	AttachGeneric = "generic"
)

// Bind modes of the AF_XDP sockets (Config.BindMode).
const (
	// BindAuto lets the kernel choose zero-copy where the driver supports
	// it and copy mode elsewhere (veth, generic XDP).
	BindAuto = "auto"
	// BindCopy forces copy mode (XDP_COPY).
	BindCopy = "copy"
	// BindZeroCopy requires zero-copy (XDP_ZEROCOPY); binding fails where
	// the driver cannot.
	BindZeroCopy = "zerocopy"
)

// Config configures a [Listener]. Start from [DefaultConfig]: a zero Config
// does not validate.
type Config struct {
	// Interface is the name of the network interface to attach to
	// (required).
	Interface string
	// Queues is the number of receive queues read, from queue 0: one AF_XDP
	// socket and one reader goroutine each. 0 (the default) reads every
	// receive queue the interface has, at most 64.
	Queues int
	// FrameSize is the size of one UMEM frame in bytes: 2048 (the default)
	// or 4096. A frame holds one Ethernet frame; longer ones are dropped by
	// the kernel and counted in its RX drop counter.
	FrameSize int
	// Frames is the number of UMEM frames per socket, a power of two from
	// 64 to 65536; default 4096. It is also the fill ring's size.
	Frames int
	// RXRing is the RX ring's size in descriptors, a power of two from 64
	// to 65536; default 4096.
	RXRing int
	// TXFrames is the number of UMEM frames per socket set aside for
	// datagrams sent on the socket's TX ring ([Listener.Transmitter]), and
	// the TX and completion rings' size: 0 (the default) opens no TX ring;
	// otherwise a power of two from 64 to 65536.
	TXFrames int
	// BatchSize is the largest number of descriptors taken from the RX ring
	// at once: 1 to 1024, default 64.
	BatchSize int
	// AttachMode is AttachAuto (default), AttachNative or AttachGeneric.
	AttachMode string
	// BindMode is BindAuto (default), BindCopy or BindZeroCopy.
	BindMode string
	// PollTimeout bounds one wait for frames; it is also how long Close may
	// wait for a reader to notice. 1ms to 1s, default 100ms.
	PollTimeout time.Duration
	// Coalesce is how long a reader sleeps after a batch shorter than
	// BatchSize, so that the next read finds more frames: one wake-up per
	// batch instead of one per handful of frames, at the price of up to
	// Coalesce more latency. 0 to 1ms, default 50µs; 0 reads again at once.
	Coalesce time.Duration
	// CoalesceMax is how long that pause may grow under load. A reader
	// whose wake-ups each find at least 8 frames but at most an eighth of
	// the RX ring doubles its pause, up to CoalesceMax; one that finds more
	// than a quarter halves it (the ring keeps room for the rate to
	// quadruple within a pause); one that finds fewer than 8 (light load)
	// goes back to Coalesce. A wake-up costs the same however
	// many frames it finds (several µs of CPU in a VM), so under load fewer
	// and larger ones cut the CPU per frame, at the price of up to
	// CoalesceMax more latency while the load lasts. Coalesce to 10ms,
	// default 500µs; 0 means Coalesce (a fixed pause). With Coalesce 0
	// there is no pause at all.
	CoalesceMax time.Duration
}

// DefaultConfig returns the defaults; Interface is left empty.
func DefaultConfig() Config {
	return Config{
		FrameSize:   2048,
		Frames:      4096,
		RXRing:      4096,
		BatchSize:   64,
		AttachMode:  AttachAuto,
		BindMode:    BindAuto,
		PollTimeout: 100 * time.Millisecond,
		Coalesce:    50 * time.Microsecond,
		CoalesceMax: 500 * time.Microsecond,
	}
}

// Validate reports every field that is out of range, naming it by its key
// in a configuration file's xdp section (the caller names the section).
func (c Config) Validate() error {
	var errs []error
	if c.Interface == "" {
		errs = append(errs, errors.New("interface: empty: name the interface reports arrive on"))
	}
	if c.Queues < 0 || c.Queues > maxQueues {
		errs = append(errs, fmt.Errorf("queues: %d, want 0 (all) to %d", c.Queues, maxQueues))
	}
	if c.FrameSize != 2048 && c.FrameSize != 4096 {
		errs = append(errs, fmt.Errorf("frame_size: %d, want 2048 or 4096", c.FrameSize))
	}
	if !ringSize(c.Frames) {
		errs = append(errs, fmt.Errorf("frames: %d, want a power of two from 64 to %d", c.Frames, maxRingSize))
	}
	if !ringSize(c.RXRing) {
		errs = append(errs, fmt.Errorf("rx_ring: %d, want a power of two from 64 to %d", c.RXRing, maxRingSize))
	}
	if c.TXFrames != 0 && !ringSize(c.TXFrames) {
		errs = append(errs, fmt.Errorf("tx_frames: %d, want 0 (no TX ring) or a power of two from 64 to %d", c.TXFrames, maxRingSize))
	}
	if c.BatchSize < 1 || c.BatchSize > maxBatchSize {
		errs = append(errs, fmt.Errorf("batch_size: %d, want 1 to %d", c.BatchSize, maxBatchSize))
	}
	switch c.AttachMode {
	case AttachAuto, AttachNative, AttachGeneric:
	default:
		errs = append(errs, fmt.Errorf("attach_mode: %q, want auto, native or generic", c.AttachMode))
	}
	switch c.BindMode {
	case BindAuto, BindCopy, BindZeroCopy:
	default:
		errs = append(errs, fmt.Errorf("bind_mode: %q, want auto, copy or zerocopy", c.BindMode))
	}
	if c.PollTimeout < time.Millisecond || c.PollTimeout > time.Second {
		errs = append(errs, fmt.Errorf("poll_timeout: %v, want 1ms to 1s", c.PollTimeout))
	}
	if c.Coalesce < 0 || c.Coalesce > time.Millisecond {
		errs = append(errs, fmt.Errorf("coalesce: %v, want 0 to 1ms", c.Coalesce))
	}
	if c.CoalesceMax != 0 && (c.CoalesceMax < c.Coalesce || c.CoalesceMax > maxCoalesceMax) {
		errs = append(errs, fmt.Errorf("coalesce_max: %v, want 0 or coalesce (%v) to %v", c.CoalesceMax, c.Coalesce, maxCoalesceMax))
	}
	return errors.Join(errs...)
}

func ringSize(n int) bool { return n >= 64 && n <= maxRingSize && n&(n-1) == 0 }
