package config

import (
	"fmt"
	"net"
	"time"

	"github.com/dta-go/dta/internal/rdma"
	"github.com/dta-go/dta/internal/transport/xdp"
)

// Transports of translator.transport.
const (
	// TransportUDP receives reports on ordinary UDP sockets (the default).
	TransportUDP = "udp"
	// TransportXDP receives them through AF_XDP sockets on one interface.
	TransportXDP = "xdp"
)

// TranslatorTransport selects how reports reach the translator (inline in
// translator:).
type TranslatorTransport struct {
	// Transport is "udp" (the default) or "xdp".
	Transport string `yaml:"transport"`
	// XDP configures the AF_XDP ingest (transport: xdp).
	XDP XDPIngest `yaml:"xdp"`
}

// XDPIngest is the translator.xdp and collector.xdp sections. Zero values
// take internal/transport/xdp's defaults.
type XDPIngest struct {
	// Interface is the network interface reports (translator.xdp) or
	// RoCEv2 requests (collector.xdp) arrive on (required with transport:
	// xdp).
	Interface string `yaml:"interface"`
	// Queues is how many receive queues are read, from queue 0; 0 = all.
	Queues int `yaml:"queues"`
	// FrameSize is the UMEM frame size: 2048 or 4096 bytes.
	FrameSize int `yaml:"frame_size"`
	// Frames is the number of UMEM frames (and fill ring entries) per queue.
	Frames int `yaml:"frames"`
	// RXRing is the RX ring size per queue, in descriptors.
	RXRing int `yaml:"rx_ring"`
	// AttachMode is auto, native or generic.
	AttachMode string `yaml:"attach_mode"`
	// BindMode is auto, copy or zerocopy.
	BindMode string `yaml:"bind_mode"`
	// Fallback is "" (an AF_XDP setup failure stops the translator or
	// collector) or "udp" (log a warning and receive on UDP sockets
	// instead).
	Fallback string `yaml:"fallback"`
	// Coalesce is how long a reader pauses after a batch shorter than
	// batch_size, 0 to 1ms (0: it reads again at once); unset: 50µs for
	// the translator, 150µs for the collector (rdma.DefaultXDPConfig).
	Coalesce *time.Duration `yaml:"coalesce"`
	// CoalesceMax is how long that pause may grow while wake-ups keep
	// finding 8 frames or more, coalesce to 10ms (0: a fixed pause);
	// unset: 500µs.
	CoalesceMax *time.Duration `yaml:"coalesce_max"`
	// TXFrames (collector.xdp only) is the number of UMEM frames per queue
	// for responses sent on the AF_XDP socket's TX ring; 0 sends them
	// through the kernel's UDP socket; unset: rdma.DefaultXDPConfig's.
	TXFrames *int `yaml:"tx_frames"`
}

// XDPConfig returns the AF_XDP listener's Config, or nil when
// translator.transport is not xdp.
func (f *File) XDPConfig() *xdp.Config {
	t := f.Translator
	if t.Transport != TransportXDP {
		return nil
	}
	return t.XDP.config(xdp.DefaultConfig(), t.BatchSize)
}

// XDPConfig returns the responder's AF_XDP Config, or nil when
// collector.transport is not xdp.
func (c Collector) XDPConfig() *xdp.Config {
	if c.Transport != TransportXDP {
		return nil
	}
	return c.XDP.config(rdma.DefaultXDPConfig(""), 0)
}

// config is x over c (the defaults of its section), with batch as
// BatchSize unless 0.
func (x XDPIngest) config(c xdp.Config, batch int) *xdp.Config {
	if x.TXFrames != nil {
		c.TXFrames = *x.TXFrames
	}
	c.Interface, c.Queues = x.Interface, x.Queues
	setIf(&c.FrameSize, x.FrameSize)
	setIf(&c.Frames, x.Frames)
	setIf(&c.RXRing, x.RXRing)
	setIf(&c.BatchSize, batch)
	if x.AttachMode != "" {
		c.AttachMode = x.AttachMode
	}
	if x.BindMode != "" {
		c.BindMode = x.BindMode
	}
	if x.Coalesce != nil {
		c.Coalesce = *x.Coalesce
	}
	if x.CoalesceMax != nil {
		c.CoalesceMax = *x.CoalesceMax
	}
	return &c
}

func setIf(dst *int, v int) {
	if v != 0 {
		*dst = v
	}
}

// validateTransport checks translator.transport and translator.xdp.
func (f *File) validateTransport() error {
	if n := f.Translator.XDP.TXFrames; n != nil && *n != 0 {
		return fmt.Errorf("translator.xdp.tx_frames: %d: the translator sends nothing on its AF_XDP sockets (a collector.xdp key)", *n)
	}
	return validateXDPSection("translator", f.Translator.Transport, f.Translator.XDP, f.XDPConfig)
}

// validateCollectorTransport checks collector.transport and collector.xdp.
func (f *File) validateCollectorTransport() error {
	c := f.Collector
	if err := validateXDPSection("collector", c.Transport, c.XDP, c.XDPConfig); err != nil {
		return err
	}
	if _, port, err := net.SplitHostPort(c.RDMA); err == nil && port == "0" && c.Transport == TransportXDP {
		return fmt.Errorf("collector.rdma: %q: transport xdp steers a fixed port, not 0", c.RDMA)
	}
	return nil
}

// validateXDPSection checks the transport and xdp keys of section: with
// transport xdp, the fallback and the AF_XDP Config that config builds.
func validateXDPSection(section, transport string, x XDPIngest, config func() *xdp.Config) error {
	if x.Fallback != "" && x.Fallback != TransportUDP {
		return fmt.Errorf("%s.xdp.fallback: %q (want \"\" or udp)", section, x.Fallback)
	}
	switch transport {
	case "", TransportUDP:
		return nil
	case TransportXDP:
	default:
		return fmt.Errorf("%s.transport: %q (want udp or xdp)", section, transport)
	}
	if err := config().Validate(); err != nil {
		return fmt.Errorf("%s.xdp: %w", section, err)
	}
	return nil
}
