package requester

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/dta-go/dta/rdma/sock"
	"github.com/dta-go/dta/wire/roce"
)

// DefaultServiceID is the CM service ID a requester connects to unless
// configured otherwise, and the one DTA collectors listen on: the rdma_cm
// TCP port space with port 4791 (IBA Annex A11 form, roce.ServiceID(
// PortSpaceTCP, 4791) = 0x010612B7).
const DefaultServiceID = uint64(roce.PortSpaceTCP)<<16 | roce.Port

// Bounds checked by Validate.
const (
	maxWindow     = 1 << 16 // far below the 2^23 unacknowledged PSNs IBA allows
	maxAtomic     = 255     // the CM's 8-bit initiator depth field
	maxBatch      = 1024
	maxAdvert     = 64 << 20
	maxSockBuffer = 1 << 30
)

// Config configures a [Requester]. Start from [DefaultConfig] and set
// Collector.
type Config struct {
	// Collector is the responder's address; port 0 means 4791.
	Collector netip.AddrPort
	// Local is the UDP host:port to send from; "" (the default) lets the
	// kernel's route to Collector pick the address and any free port. The
	// socket is bound to a specific address either way (the ICRC covers it).
	Local string
	// MTU is the path MTU asked for in the REQ, in payload bytes: 256, 512,
	// 1024 (default), 2048 or 4096. Writes longer than it are split into
	// FIRST/MIDDLE/LAST packets. Packets are sent with Don't Fragment: an
	// MTU of 4096 needs jumbo frames (an Ethernet MTU above 4200).
	MTU int
	// Window is the most packets sent and not yet acknowledged, kept for
	// retransmission (1 to 65536, default 1024). Post blocks while the
	// window is full.
	Window int
	// AckEvery sets AckReq on every AckEvery-th packet (1 to 65536,
	// default 32), besides the last packet of each Post call and the one
	// that fills the window.
	AckEvery int
	// MaxAtomic bounds the FETCH_ADDs, COMPARE_SWAPs and READs in flight, asked
	// for in the REQ as initiator depth; the responder's REP may lower it
	// (1 to 255, default 128).
	MaxAtomic int
	// Timeout is the ACK timeout: with packets outstanding and no progress
	// for this long, the window is resent from its oldest packet (default
	// 100ms).
	Timeout time.Duration
	// Retries is the number of ACK timeouts in a row after which the
	// connection is declared down and re-established (default 7).
	Retries int
	// KeepAlive is how long the connection may be idle (nothing sent and
	// unacknowledged) before the requester sends a zero-length RDMA WRITE
	// asking for an ACK, so that a responder that went away while nothing
	// was sent is found (after Retries timeouts) before the next ops are
	// lost to it, not when they are. 0 turns it off (default 1s). The
	// WRITE names no memory: a responder checks neither its R_Key nor its
	// VA, as the IBA specification says of zero-length transfers.
	KeepAlive time.Duration
	// CMTimeout is how long to wait for a REP (or, after the RTU, for the
	// advertisement) before retransmitting (default 250ms).
	CMTimeout time.Duration
	// CMRetries is the number of REQ (and RTU) retransmissions before Dial
	// or a reconnect attempt fails (default 8).
	CMRetries int
	// RateLimit caps the packets sent per second with a token bucket (0,
	// the default, means no limit). Retransmissions are not limited.
	RateLimit float64
	// RateBurst is the token bucket's depth in packets (default 64).
	RateBurst int
	// ReconnectMin is the first wait between failed reconnect attempts; it
	// doubles up to ReconnectMax (default 100ms).
	ReconnectMin time.Duration
	// ReconnectMax bounds the wait between reconnect attempts (default 5s).
	ReconnectMax time.Duration
	// MaxAdvertisement bounds the advertisement accepted from the responder
	// (default 1 MiB, at most 64 MiB).
	MaxAdvertisement int
	// ServiceID is the CM service ID sent in the REQ (default DefaultServiceID).
	ServiceID uint64
	// BatchSize is the number of datagrams read per recvmmsg call and sent
	// per sendmmsg call (1 to 1024, default 64).
	BatchSize int
	// SendBuffer is the socket send buffer requested, in bytes (0 keeps
	// the kernel default; default 4 MiB).
	SendBuffer int
	// RecvBuffer is the socket receive buffer requested, in bytes (0 keeps
	// the kernel default; default 1 MiB).
	RecvBuffer int
	// Capture, if set, receives a pcap file (Ethernet frames) of every
	// packet sent and every valid packet received.
	Capture io.Writer
}

// DefaultConfig returns the defaults documented on [Config]; Collector is
// left empty.
func DefaultConfig() Config {
	return Config{
		MTU:              1024,
		Window:           1024,
		AckEvery:         32,
		MaxAtomic:        128,
		Timeout:          100 * time.Millisecond,
		Retries:          7,
		KeepAlive:        time.Second,
		CMTimeout:        250 * time.Millisecond,
		CMRetries:        8,
		RateBurst:        64,
		ReconnectMin:     100 * time.Millisecond,
		ReconnectMax:     5 * time.Second,
		MaxAdvertisement: 1 << 20,
		ServiceID:        DefaultServiceID,
		BatchSize:        64,
		SendBuffer:       4 << 20,
		RecvBuffer:       1 << 20,
	}
}

// Validate reports every field out of range, naming it.
func (c Config) Validate() error {
	var errs []error
	if !c.Collector.Addr().IsValid() || c.Collector.Addr().IsUnspecified() {
		errs = append(errs, fmt.Errorf("requester: Config.Collector %q: want an IP address", c.Collector))
	}
	if c.Local != "" {
		if a, _, err := sock.ParseLocal(c.Local); err != nil {
			errs = append(errs, fmt.Errorf("requester: Config.Local: %w", err))
		} else if a.IsValid() {
			if a = a.Unmap(); !a.IsUnspecified() && a.Is4() != c.Collector.Addr().Unmap().Is4() {
				errs = append(errs, fmt.Errorf("requester: Config.Local %q and Collector %s are of different IP versions", c.Local, c.Collector))
			}
		}
	}
	if _, ok := roce.MTUFromBytes(c.MTU); !ok {
		errs = append(errs, fmt.Errorf("requester: Config.MTU = %d, want 256, 512, 1024, 2048 or 4096", c.MTU))
	}
	errs = appendRange(errs, "Config.Window", c.Window, 1, maxWindow)
	errs = appendRange(errs, "Config.AckEvery", c.AckEvery, 1, maxWindow)
	errs = appendRange(errs, "Config.MaxAtomic", c.MaxAtomic, 1, maxAtomic)
	errs = appendRange(errs, "Config.Retries", c.Retries, 0, 100)
	errs = appendRange(errs, "Config.CMRetries", c.CMRetries, 0, 100)
	errs = appendRange(errs, "Config.RateBurst", c.RateBurst, 1, 1<<20)
	errs = appendRange(errs, "Config.MaxAdvertisement", c.MaxAdvertisement, 0, maxAdvert)
	errs = appendRange(errs, "Config.BatchSize", c.BatchSize, 1, maxBatch)
	errs = appendRange(errs, "Config.SendBuffer", c.SendBuffer, 0, maxSockBuffer)
	errs = appendRange(errs, "Config.RecvBuffer", c.RecvBuffer, 0, maxSockBuffer)
	if c.Timeout < time.Millisecond {
		errs = append(errs, fmt.Errorf("requester: Config.Timeout = %v, want at least 1ms", c.Timeout))
	}
	if c.KeepAlive != 0 && (c.KeepAlive < time.Millisecond || c.KeepAlive > time.Hour) {
		errs = append(errs, fmt.Errorf("requester: Config.KeepAlive = %v, want 0 (off) or 1ms to 1h", c.KeepAlive))
	}
	if c.CMTimeout < time.Millisecond {
		errs = append(errs, fmt.Errorf("requester: Config.CMTimeout = %v, want at least 1ms", c.CMTimeout))
	}
	if c.RateLimit < 0 {
		errs = append(errs, fmt.Errorf("requester: Config.RateLimit = %v, want >= 0 (0: no limit)", c.RateLimit))
	}
	if c.ReconnectMin <= 0 || c.ReconnectMax < c.ReconnectMin {
		errs = append(errs, fmt.Errorf("requester: Config.ReconnectMin/Max = %v/%v, want 0 < min <= max", c.ReconnectMin, c.ReconnectMax))
	}
	return errors.Join(errs...)
}

func appendRange(errs []error, name string, v, lo, hi int) []error {
	if v < lo || v > hi {
		errs = append(errs, fmt.Errorf("requester: %s = %d, want %d to %d", name, v, lo, hi))
	}
	return errs
}
