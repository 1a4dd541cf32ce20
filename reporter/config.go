package reporter

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/dta-go/dta/wire/dta"
)

// Limits and defaults of a Reporter.
const (
	// DefaultTo is where reports go when Config.To is empty: a translator on
	// this machine.
	DefaultTo = "127.0.0.1:40040"
	// MTU is the largest datagram a Reporter sends, in bytes of UDP payload:
	// a 1500-byte Ethernet MTU minus the IPv4 and UDP headers.
	MTU = 1472
	// WindowSize is the number of retransmittable datagrams kept for
	// resending. It is half the 8-bit sequence space, so that an ACK or NACK
	// names exactly one datagram of the window.
	WindowSize = 128
	// DefaultFlushInterval bounds how long a partial batch waits.
	DefaultFlushInterval = time.Millisecond
	// DefaultRetransmitTimeout is how long unacknowledged datagrams wait
	// before they are resent.
	DefaultRetransmitTimeout = 200 * time.Millisecond
	// MaxTimeoutResends is how many times in a row the window is resent on a
	// timeout without any ACK or NACK making progress before the Reporter
	// stops resending on timeouts (a NACK still triggers a resend).
	MaxTimeoutResends = 3
	// MaxLinger bounds how long Close waits for the translator to
	// acknowledge the datagrams still in the window.
	MaxLinger = 2 * time.Second
)

// Config configures a Reporter. Every zero value selects the documented
// default, so Config{} is valid and sends single reports to DefaultTo.
type Config struct {
	// To is the translator's host:port. Empty means DefaultTo
	// (127.0.0.1:40040). A host name is resolved once, by New.
	To string
	// Local is the local address to bind, host:port. Empty means ":40044"
	// (dta.AckPort) when Retransmit is set, so that ACK/NACKs a translator
	// addresses to port 40044 come back to this socket, and ":0" (any free
	// port) otherwise.
	Local string
	// Batch is the number of reports per datagram. 0 or 1 sends every
	// report in its own datagram in the single-report formats; 2 to
	// dta.MaxBatch packs reports into OpBatch datagrams of at most MTU bytes
	// (a batch that closes with one report is sent in the single-report
	// format).
	Batch int
	// FlushInterval is how long a partial batch may wait for more reports
	// before it is sent. 0 means DefaultFlushInterval (1 ms). Unused when
	// Batch ≤ 1.
	FlushInterval time.Duration
	// Rate is the largest number of reports per second Send lets through,
	// enforced by a token bucket that holds max(Batch, Rate × 5 ms) reports
	// (so that a late wake-up does not lower the rate); Send blocks until a
	// token is free (Close ends a wait longer than 10 ms). 0 means
	// unlimited; otherwise MinRate to MaxRate.
	Rate float64
	// Retransmit sets the retransmittable flag on every datagram. The
	// Reporter then keeps the last WindowSize datagrams by sequence number,
	// frees them as ACKs arrive, resends every datagram after seq (in order)
	// on NACK(seq), and resends the unacknowledged ones when nothing was
	// heard for RetransmitTimeout. Send waits for room in the window (see
	// Reporter.Send). When the translator expects sequence numbers the
	// window does not hold (it tracked this address and port before the
	// Reporter started, or it missed datagrams the window had forgotten),
	// the datagrams held are renumbered to match and resent. Needs the
	// 3-byte header (not Legacy).
	Retransmit bool
	// RetransmitTimeout is the retransmission timeout. 0 means
	// DefaultRetransmitTimeout (200 ms). Unused unless Retransmit.
	RetransmitTimeout time.Duration
	// Legacy sends the prototype's 2-byte base header {opcode, flags}, which
	// has no sequence number: it excludes Retransmit and Batch > 1.
	Legacy bool
}

// DefaultConfig returns the configuration of a reporter that sends one
// report per datagram to a translator on this machine, unpaced, without
// retransmission, with every default spelled out.
func DefaultConfig() Config {
	return Config{
		To:                DefaultTo,
		Batch:             1,
		FlushInterval:     DefaultFlushInterval,
		RetransmitTimeout: DefaultRetransmitTimeout,
	}
}

// Validate reports every field that is out of range, naming the field.
func (c Config) Validate() error {
	var errs []error
	if c.To != "" {
		if err := validHostPort(c.To, false); err != nil {
			errs = append(errs, fmt.Errorf("reporter: Config.To %q: %w", c.To, err))
		}
	}
	if c.Local != "" {
		if err := validHostPort(c.Local, true); err != nil {
			errs = append(errs, fmt.Errorf("reporter: Config.Local %q: %w", c.Local, err))
		}
	}
	if c.Batch < 0 || c.Batch > dta.MaxBatch {
		errs = append(errs, fmt.Errorf("reporter: Config.Batch = %d, want 0 to %d reports", c.Batch, dta.MaxBatch))
	}
	if c.FlushInterval < 0 {
		errs = append(errs, fmt.Errorf("reporter: Config.FlushInterval = %v, want ≥ 0", c.FlushInterval))
	}
	if c.Rate != 0 && !(c.Rate >= MinRate && c.Rate <= MaxRate) { // NaN fails both
		errs = append(errs, fmt.Errorf("reporter: Config.Rate = %v, want 0 (unlimited) or %g to %g reports/s", c.Rate, MinRate, MaxRate))
	}
	if c.RetransmitTimeout < 0 {
		errs = append(errs, fmt.Errorf("reporter: Config.RetransmitTimeout = %v, want ≥ 0", c.RetransmitTimeout))
	}
	if c.Legacy && c.Retransmit {
		errs = append(errs, errors.New("reporter: Config.Legacy excludes Retransmit: the 2-byte header has no sequence number"))
	}
	if c.Legacy && c.Batch > 1 {
		errs = append(errs, errors.New("reporter: Config.Legacy excludes Batch > 1: batches need the 3-byte header"))
	}
	return errors.Join(errs...)
}

// The bounds of Config.Rate other than 0: one report per thousand seconds,
// and more reports per second than any link carries.
const (
	MinRate = 1e-3
	MaxRate = 1e12
)

// withDefaults returns c with every zero value replaced by its default.
func (c Config) withDefaults() Config {
	if c.To == "" {
		c.To = DefaultTo
	}
	if c.Local == "" {
		c.Local = ":0"
		if c.Retransmit {
			c.Local = ":" + strconv.Itoa(dta.AckPort)
		}
	}
	if c.Batch == 0 {
		c.Batch = 1
	}
	if c.FlushInterval == 0 {
		c.FlushInterval = DefaultFlushInterval
	}
	if c.RetransmitTimeout == 0 {
		c.RetransmitTimeout = DefaultRetransmitTimeout
	}
	return c
}

// validHostPort checks host:port syntax; the host may be a name.
func validHostPort(s string, portZeroOK bool) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return err
	}
	if host == "" && !portZeroOK {
		return errors.New("host is missing")
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return errors.New("port must be a number from 0 to 65535")
	}
	if p == 0 && !portZeroOK {
		return errors.New("port 0 cannot be sent to")
	}
	return nil
}
