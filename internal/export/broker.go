package export

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

// BrokerError is why talking to a broker failed.
type BrokerError int

// The broker error reasons, indexing Stats.BrokerErrors.
const (
	// BrokerConnect: a connection could not be opened or set up (the host
	// does not resolve, the port is closed or does not answer, the
	// connection closed before it was ready).
	BrokerConnect BrokerError = iota
	// BrokerTLS: the TLS handshake failed (certificate not trusted or for
	// another name, TLS spoken to a plaintext listener).
	BrokerTLS
	// BrokerAuth: SASL authentication failed (wrong user or password,
	// mechanism not enabled).
	BrokerAuth
	// BrokerRequest: a request on an open connection got no answer (the
	// connection broke: the broker was killed or the network cut).
	BrokerRequest
	NumBrokerErrors
)

// String names the reason as the metrics do.
func (r BrokerError) String() string {
	return [...]string{"connect", "tls", "auth", "request"}[r]
}

// probeEvery is how often the exporter asks a broker for metadata while no
// record was acknowledged for that long, so that an unreachable broker or a
// wrong password shows (counted, logged) even with nothing to send.
var probeEvery = 10 * time.Second

// probeTimeout bounds one probe: a broker that takes longer to connect and
// answer counts as unreachable (connect).
const probeTimeout = 5 * time.Second

// brokerWatch counts and logs failed broker connections and requests: the
// Kafka client's hooks (kgo.HookBrokerConnect, kgo.HookBrokerE2E).
type brokerWatch struct {
	stats   *Stats
	logger  *slog.Logger
	lastLog [NumBrokerErrors]atomic.Int64
	down    atomic.Bool // a connection attempt failed and none succeeded since

	mu   sync.Mutex
	sasl map[string]int // broker address: SASL exchanges begun, not finished
}

func (w *brokerWatch) init(st *Stats, logger *slog.Logger) {
	w.stats, w.logger, w.sasl = st, logger, map[string]int{}
}

// OnBrokerConnect implements kgo.HookBrokerConnect: it runs after every
// connection attempt, err being the dial's, the TLS handshake's or the
// connection setup's (ApiVersions, SASL).
func (w *brokerWatch) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	addr := net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port)))
	inSASL := w.endSASL(addr)
	if err == nil {
		if w.down.Swap(false) {
			w.logger.Info("kafka broker reachable again", "broker", addr)
		}
		return
	}
	if errors.Is(err, kgo.ErrClientClosed) || errors.Is(err, context.Canceled) {
		return // the exporter is stopping
	}
	w.down.Store(true)
	w.fail(classify(err, inSASL), addr, err)
}

// OnBrokerE2E implements kgo.HookBrokerE2E: it counts requests that broke
// on an open connection. The connection setup's own requests (ApiVersions,
// SASL) are OnBrokerConnect's.
func (w *brokerWatch) OnBrokerE2E(meta kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	err := e2e.Err()
	if err == nil || errors.Is(err, kgo.ErrClientClosed) || errors.Is(err, context.Canceled) {
		return
	}
	switch key {
	case keyAPIVersions, keySASLHandshake, keySASLAuthenticate:
		return
	}
	w.fail(BrokerRequest, net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port))), err)
}

// The Kafka API keys of the connection setup's requests.
const (
	keySASLHandshake    = 17
	keyAPIVersions      = 18
	keySASLAuthenticate = 36
)

// fail counts a failure and logs it, once per reason per errorLogEvery.
func (w *brokerWatch) fail(r BrokerError, addr string, err error) {
	n := w.stats.BrokerErrors[r].Add(1)
	now := time.Now().UnixNano()
	last := &w.lastLog[r]
	if prev := last.Load(); now-prev < errorLogEvery || !last.CompareAndSwap(prev, now) {
		return
	}
	msg := "kafka broker unreachable; retrying"
	switch r {
	case BrokerTLS:
		msg = "kafka broker TLS handshake failed; retrying"
	case BrokerAuth:
		msg = "kafka broker refused the SASL credentials; retrying"
	case BrokerRequest:
		msg = "kafka broker connection broke; reconnecting"
	}
	w.logger.Warn(msg, "broker", addr, "reason", r.String(), "err", err, "failures", n)
}

// classify names why a connection attempt failed.
func classify(err error, inSASL bool) BrokerError {
	var (
		hdr   tls.RecordHeaderError
		alert tls.AlertError
		ver   *tls.CertificateVerificationError
		ua    x509.UnknownAuthorityError
		host  x509.HostnameError
		inv   x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &hdr), errors.As(err, &alert), errors.As(err, &ver), errors.As(err, &ua), errors.As(err, &host), errors.As(err, &inv):
		return BrokerTLS
	case errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.UnsupportedSaslMechanism),
		errors.Is(err, kerr.IllegalSaslState), inSASL:
		return BrokerAuth
	}
	return BrokerConnect
}

// beginSASL and endSASL follow the SASL exchanges per broker address: a
// connection that fails while its exchange is open failed authentication
// (some brokers answer a wrong password by closing the connection, which
// the error alone does not tell from a broker going away).
func (w *brokerWatch) beginSASL(addr string) {
	w.mu.Lock()
	w.sasl[addr]++
	w.mu.Unlock()
}

func (w *brokerWatch) doneSASL(addr string) {
	w.mu.Lock()
	if w.sasl[addr] > 0 {
		w.sasl[addr]--
	}
	w.mu.Unlock()
}

// endSASL reports whether an exchange with addr was open, and forgets it.
func (w *brokerWatch) endSASL(addr string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.sasl[addr]
	delete(w.sasl, addr)
	return n > 0
}

// watchSASL wraps m so that w sees where its exchanges begin and end.
func (w *brokerWatch) watchSASL(m sasl.Mechanism) sasl.Mechanism {
	return watchedMechanism{Mechanism: m, w: w}
}

type watchedMechanism struct {
	sasl.Mechanism
	w *brokerWatch
}

func (m watchedMechanism) Authenticate(ctx context.Context, host string) (sasl.Session, []byte, error) {
	s, first, err := m.Mechanism.Authenticate(ctx, host)
	if err != nil {
		return s, first, err
	}
	m.w.beginSASL(host)
	return watchedSession{Session: s, w: m.w, host: host}, first, nil
}

type watchedSession struct {
	sasl.Session
	w    *brokerWatch
	host string
}

func (s watchedSession) Challenge(b []byte) (bool, []byte, error) {
	done, out, err := s.Session.Challenge(b)
	if done && err == nil {
		s.w.doneSASL(s.host)
	}
	return done, out, err
}

// probe asks the brokers for metadata at the start and then every
// probeEvery while no record was acknowledged for that long; the hooks
// count and log what fails.
func (e *Exporter) probe(ctx context.Context) {
	check := func() {
		if last := e.stats.LastAck.Load(); last != 0 && time.Since(time.Unix(0, last)) < probeEvery {
			return
		}
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		defer cancel()
		e.cl.Ping(pctx)
	}
	check()
	e.every(ctx, probeEvery, check)
}
