package httpguard

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// MaxPEMBytes bounds a certificate or key file.
const MaxPEMBytes = 1 << 20

// Certificate is a server's TLS certificate and key, replaceable while it
// serves: handshakes after a Load use the new pair, connections already
// open keep theirs.
type Certificate struct {
	cur atomic.Pointer[tls.Certificate]
}

// LoadCertificate reads a PEM certificate chain and its private key
// (ReadKeyPair) and returns them ready to serve.
func LoadCertificate(certFile, keyFile string) (*Certificate, error) {
	pair, err := ReadKeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	return NewCertificate(pair), nil
}

// NewCertificate returns a Certificate serving pair (from ReadKeyPair).
func NewCertificate(pair *tls.Certificate) *Certificate {
	c := &Certificate{}
	c.cur.Store(pair)
	return c
}

// Set puts pair (from ReadKeyPair) in force for the next handshakes.
func (c *Certificate) Set(pair *tls.Certificate) { c.cur.Store(pair) }

// Load reads the pair and, if it is good, puts it in force; otherwise the
// old pair stays.
func (c *Certificate) Load(certFile, keyFile string) error {
	pair, err := ReadKeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	c.Set(pair)
	return nil
}

// ReadKeyPair reads a PEM certificate chain and its private key. The key
// file must not be readable by others (as for token files); a certificate
// that does not match the key, or has expired, is an error.
func ReadKeyPair(certFile, keyFile string) (*tls.Certificate, error) {
	certPEM, err := ReadRegular(certFile, MaxPEMBytes)
	if err != nil {
		return nil, fmt.Errorf("tls_cert: %w", err)
	}
	keyPEM, err := ReadSecret(keyFile, MaxPEMBytes)
	if err != nil {
		return nil, fmt.Errorf("tls_key: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("tls_cert %s, tls_key %s: %w", certFile, keyFile, err)
	}
	if pair.Leaf == nil {
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("tls_cert %s: %w", certFile, err)
		}
	}
	if time.Now().After(pair.Leaf.NotAfter) {
		return nil, fmt.Errorf("tls_cert %s: expired at %s", certFile, pair.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return &pair, nil
}

// Leaf is the certificate in force.
func (c *Certificate) Leaf() *x509.Certificate { return c.cur.Load().Leaf }

// TLSConfig returns a server configuration: TLS 1.2 or later, the
// certificate in force at each handshake.
func (c *Certificate) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.cur.Load(), nil
		},
	}
}

// NewServer returns an http.Server that serves h behind the guard, with its
// limits (timeouts, header size) and, if the guard has a certificate, its
// TLS configuration. errorLog may be nil.
func (g *Guard) NewServer(h http.Handler, errorLog *log.Logger) *http.Server {
	l := g.cfg.Limits
	srv := &http.Server{
		Handler:           g.Handler(h),
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		ErrorLog:          errorLog,
	}
	if g.cfg.TLS != nil {
		srv.TLSConfig = g.cfg.TLS.TLSConfig()
	}
	return srv
}

// TLS reports whether the guard serves HTTPS.
func (g *Guard) TLS() bool { return g.cfg.TLS != nil }

// Certificate returns the guard's certificate (nil for plain HTTP).
func (g *Guard) Certificate() *Certificate { return g.cfg.TLS }

// Serve serves srv (from NewServer) on ln, over TLS when the guard has a
// certificate, until the server is shut down.
func (g *Guard) Serve(srv *http.Server, ln net.Listener) error {
	if g.cfg.TLS != nil {
		return srv.ServeTLS(ln, "", "")
	}
	return srv.Serve(ln)
}
