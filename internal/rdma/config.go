package rdma

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/dta-go/dta/internal/admit"
	"github.com/dta-go/dta/wire/roce"
)

// DefaultServiceID is the CM service ID a responder listens on and a
// requester connects to unless configured otherwise: the rdma_cm TCP port
// space with port 4791 (IBA Annex A11 form, roce.ServiceID(PortSpaceTCP,
// 4791) = 0x010612B7).
const DefaultServiceID = uint64(roce.PortSpaceTCP)<<16 | roce.Port

// Bounds checked by the Validate methods.
const (
	maxQPs         = 1 << 16
	maxWindow      = 1 << 16 // far below the 2^23 unacknowledged PSNs IBA allows
	maxAtomicDepth = 255     // the CM's 8-bit responder resources field
	maxBatch       = 1024
	maxAdvert      = 64 << 20
	maxSockBuffer  = 1 << 30
)

// ResponderConfig configures a [Responder]. Start from
// [DefaultResponderConfig]: a zero ResponderConfig does not validate.
type ResponderConfig struct {
	// Addr is the UDP host:port to listen on; default ":4791", all IPv4 and
	// IPv6 addresses. Port 0 picks a free port (tests). On Linux the
	// destination address of every packet is read with IP_PKTINFO, so a
	// wildcard address works on multi-homed hosts; elsewhere bind a
	// specific address (the ICRC covers the destination address).
	Addr string
	// MTU is the largest path MTU accepted in a CM REQ, in payload bytes:
	// 256, 512, 1024, 2048 or 4096 (default). The connection uses the
	// REQ's MTU; a REQ asking for more is rejected (REJ invalid MTU).
	MTU int
	// MaxQPs bounds the connected QPs (1 to 65536, default 64). A REQ beyond
	// it first reclaims the longest-idle QP idle for more than IdleTimeout;
	// if there is none it is rejected (REJ no resources).
	MaxQPs int
	// ACKCoalesce: without AckReq the responder acknowledges at most every
	// ACKCoalesce packets (1 = every packet; default 16). Packets with
	// AckReq are always acknowledged, coalesced per receive batch.
	ACKCoalesce int
	// AtomicDepth is the number of FETCH_ADD/COMPARE_SWAP results each QP
	// keeps for replaying duplicates, advertised in the REP as responder
	// resources: 1 to 255, default 128. A requester may keep that many
	// atomics unacknowledged.
	AtomicDepth int
	// Timeout is the retransmission timeout of the advertisement SEND
	// (default 100ms).
	Timeout time.Duration
	// Retries is the number of advertisement retransmissions without an
	// ACK before the QP is given up (default 7).
	Retries int
	// HandshakeTimeout bounds how long a QP waits for the RTU after its REP
	// (default 5s); the REP is kept to answer retransmitted REQs.
	HandshakeTimeout time.Duration
	// IdleTimeout: a QP that received nothing for this long may be reclaimed
	// when the QP table is full (default 1m; 0 never reclaims).
	IdleTimeout time.Duration
	// ServiceID is the CM service ID accepted in REQs (default DefaultServiceID).
	ServiceID uint64
	// BatchSize is the number of datagrams read per recvmmsg call and the
	// most responses sent per sendmmsg call (1 to 1024, default 64).
	BatchSize int
	// RecvBuffer is the socket receive buffer requested, in bytes (0 keeps
	// the kernel default; default 16 MiB). A requester's window of packets
	// arrives in one burst: a small buffer turns bursts into losses and
	// go-back-N retransmissions.
	RecvBuffer int
	// Capture, if set, receives a pcap file (Ethernet frames) of every
	// packet sent and every valid packet received, for tshark. Capturing
	// costs an allocation-free but serialised encode per packet.
	Capture io.Writer
	// AllowTranslators lists the source addresses (requesters) the
	// responder talks to; nil or empty allows every source. A CM REQ from
	// another source is answered with a REJ "consumer defined" (what an
	// rdma_cm application's rdma_reject sends) so that the requester learns
	// at once that it is refused; every other packet from it is dropped
	// silently, before its ICRC is checked. Both are counted. Replace it
	// while running with [Responder.SetAllowTranslators].
	AllowTranslators *admit.Prefixes
	// OnReadLoop, if set, makes Run lock the goroutine that receives and
	// executes every request to its OS thread (runtime.LockOSThread) and
	// call OnReadLoop on it, once, before the first packet: what it notes
	// of the thread (its ID, for per-thread CPU accounting as dta bench
	// does) then holds for all the responder's packet work. It must not
	// block. Locking costs a thread hand-off at each wake-up: leave it nil
	// outside measurements.
	OnReadLoop func()
}

// DefaultResponderConfig returns the defaults documented on
// [ResponderConfig].
func DefaultResponderConfig() ResponderConfig {
	return ResponderConfig{
		Addr:             ":" + strconv.Itoa(roce.Port),
		MTU:              4096,
		MaxQPs:           64,
		ACKCoalesce:      16,
		AtomicDepth:      128,
		Timeout:          100 * time.Millisecond,
		Retries:          7,
		HandshakeTimeout: 5 * time.Second,
		IdleTimeout:      time.Minute,
		ServiceID:        DefaultServiceID,
		BatchSize:        64,
		RecvBuffer:       16 << 20,
	}
}

// Validate reports every field out of range, naming it.
func (c ResponderConfig) Validate() error {
	var errs []error
	if err := validateHostPort(c.Addr, true); err != nil {
		errs = append(errs, fmt.Errorf("rdma: ResponderConfig.Addr: %w", err))
	}
	if _, ok := roce.MTUFromBytes(c.MTU); !ok {
		errs = append(errs, fmt.Errorf("rdma: ResponderConfig.MTU = %d, want 256, 512, 1024, 2048 or 4096", c.MTU))
	}
	errs = appendRange(errs, "ResponderConfig.MaxQPs", c.MaxQPs, 1, maxQPs)
	errs = appendRange(errs, "ResponderConfig.ACKCoalesce", c.ACKCoalesce, 1, maxWindow)
	errs = appendRange(errs, "ResponderConfig.AtomicDepth", c.AtomicDepth, 1, maxAtomicDepth)
	errs = appendRange(errs, "ResponderConfig.Retries", c.Retries, 0, 100)
	errs = appendRange(errs, "ResponderConfig.BatchSize", c.BatchSize, 1, maxBatch)
	errs = appendRange(errs, "ResponderConfig.RecvBuffer", c.RecvBuffer, 0, maxSockBuffer)
	if c.Timeout < time.Millisecond {
		errs = append(errs, fmt.Errorf("rdma: ResponderConfig.Timeout = %v, want at least 1ms", c.Timeout))
	}
	if c.HandshakeTimeout < c.Timeout {
		errs = append(errs, fmt.Errorf("rdma: ResponderConfig.HandshakeTimeout = %v, want at least Timeout (%v)", c.HandshakeTimeout, c.Timeout))
	}
	if c.IdleTimeout < 0 {
		errs = append(errs, fmt.Errorf("rdma: ResponderConfig.IdleTimeout = %v, want >= 0", c.IdleTimeout))
	}
	return errors.Join(errs...)
}

// RequesterConfig configures a [Requester]. Start from
// [DefaultRequesterConfig] and set Collector.
type RequesterConfig struct {
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
	// retransmission (1 to 65536, default 1024). Apply blocks while the
	// window is full.
	Window int
	// AckEvery sets AckReq on every AckEvery-th packet (1 to 65536,
	// default 32), besides the last packet of each Apply call and the one
	// that fills the window.
	AckEvery int
	// MaxAtomic bounds the FETCH_ADDs in flight, asked for in the REQ as
	// initiator depth; the responder's REP may lower it (1 to 255,
	// default 128).
	MaxAtomic int
	// Timeout is the ACK timeout: with packets outstanding and no progress
	// for this long, the window is resent from its oldest packet (default
	// 100ms).
	Timeout time.Duration
	// Retries is the number of ACK timeouts in a row after which the
	// connection is declared down and re-established (default 7).
	Retries int
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

// DefaultRequesterConfig returns the defaults documented on
// [RequesterConfig]; Collector is left empty.
func DefaultRequesterConfig() RequesterConfig {
	return RequesterConfig{
		MTU:              1024,
		Window:           1024,
		AckEvery:         32,
		MaxAtomic:        128,
		Timeout:          100 * time.Millisecond,
		Retries:          7,
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
func (c RequesterConfig) Validate() error {
	var errs []error
	if !c.Collector.Addr().IsValid() || c.Collector.Addr().IsUnspecified() {
		errs = append(errs, fmt.Errorf("rdma: RequesterConfig.Collector %q: want an IP address", c.Collector))
	}
	if c.Local != "" {
		if err := validateHostPort(c.Local, true); err != nil {
			errs = append(errs, fmt.Errorf("rdma: RequesterConfig.Local: %w", err))
		} else if host, _, _ := net.SplitHostPort(c.Local); host != "" {
			a, _ := netip.ParseAddr(host)
			if a = a.Unmap(); !a.IsUnspecified() && a.Is4() != c.Collector.Addr().Unmap().Is4() {
				errs = append(errs, fmt.Errorf("rdma: RequesterConfig.Local %q and Collector %s are of different IP versions", c.Local, c.Collector))
			}
		}
	}
	if _, ok := roce.MTUFromBytes(c.MTU); !ok {
		errs = append(errs, fmt.Errorf("rdma: RequesterConfig.MTU = %d, want 256, 512, 1024, 2048 or 4096", c.MTU))
	}
	errs = appendRange(errs, "RequesterConfig.Window", c.Window, 1, maxWindow)
	errs = appendRange(errs, "RequesterConfig.AckEvery", c.AckEvery, 1, maxWindow)
	errs = appendRange(errs, "RequesterConfig.MaxAtomic", c.MaxAtomic, 1, maxAtomicDepth)
	errs = appendRange(errs, "RequesterConfig.Retries", c.Retries, 0, 100)
	errs = appendRange(errs, "RequesterConfig.CMRetries", c.CMRetries, 0, 100)
	errs = appendRange(errs, "RequesterConfig.RateBurst", c.RateBurst, 1, 1<<20)
	errs = appendRange(errs, "RequesterConfig.MaxAdvertisement", c.MaxAdvertisement, 0, maxAdvert)
	errs = appendRange(errs, "RequesterConfig.BatchSize", c.BatchSize, 1, maxBatch)
	errs = appendRange(errs, "RequesterConfig.SendBuffer", c.SendBuffer, 0, maxSockBuffer)
	errs = appendRange(errs, "RequesterConfig.RecvBuffer", c.RecvBuffer, 0, maxSockBuffer)
	if c.Timeout < time.Millisecond {
		errs = append(errs, fmt.Errorf("rdma: RequesterConfig.Timeout = %v, want at least 1ms", c.Timeout))
	}
	if c.CMTimeout < time.Millisecond {
		errs = append(errs, fmt.Errorf("rdma: RequesterConfig.CMTimeout = %v, want at least 1ms", c.CMTimeout))
	}
	if c.RateLimit < 0 {
		errs = append(errs, fmt.Errorf("rdma: RequesterConfig.RateLimit = %v, want >= 0 (0: no limit)", c.RateLimit))
	}
	if c.ReconnectMin <= 0 || c.ReconnectMax < c.ReconnectMin {
		errs = append(errs, fmt.Errorf("rdma: RequesterConfig.ReconnectMin/Max = %v/%v, want 0 < min <= max", c.ReconnectMin, c.ReconnectMax))
	}
	return errors.Join(errs...)
}

func appendRange(errs []error, name string, v, lo, hi int) []error {
	if v < lo || v > hi {
		errs = append(errs, fmt.Errorf("rdma: %s = %d, want %d to %d", name, v, lo, hi))
	}
	return errs
}

func validateHostPort(s string, allowZeroPort bool) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return err
	}
	if host != "" {
		if _, err := netip.ParseAddr(host); err != nil {
			return fmt.Errorf("%q: host must be an IP address or empty", s)
		}
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || (p == 0 && !allowZeroPort) {
		return fmt.Errorf("%q: bad port", s)
	}
	return nil
}
