package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
)

// Option configures a Client; give them to New.
type Option func(*Client) error

// WithToken sends token with every request as a bearer token
// (Authorization: Bearer TOKEN), as a collector with authentication on
// requires (docs/API.md, "Authentication"). A token is printable ASCII
// without spaces.
func WithToken(token string) Option {
	return func(c *Client) error {
		if token == "" {
			return errors.New("token: empty")
		}
		for i := 0; i < len(token); i++ {
			if token[i] <= ' ' || token[i] > '~' {
				return errors.New("token: a character that is not printable ASCII (a stray newline or space?)")
			}
		}
		c.token = token
		return nil
	}
}

// WithTLS uses cfg for HTTPS: trusted roots (RootCAs), a client
// certificate, or, for tests only, InsecureSkipVerify. It replaces the TLS
// configuration of the client's transport: with an http.Client given to
// New, its Transport must be nil or an *http.Transport, which is cloned
// (the caller's is not modified).
func WithTLS(cfg *tls.Config) Option {
	return func(c *Client) error {
		var tr *http.Transport
		switch t := c.hc.Transport.(type) {
		case nil:
			tr = http.DefaultTransport.(*http.Transport).Clone()
		case *http.Transport:
			tr = t.Clone()
		default:
			return fmt.Errorf("TLS: the http.Client's Transport is a %T, not an *http.Transport", t)
		}
		tr.TLSClientConfig = cfg.Clone()
		hc := *c.hc
		hc.Transport = tr
		c.hc = &hc
		return nil
	}
}

// CAFile returns a TLS configuration that trusts only the PEM certificates
// in path (the collector's CA, or its self-signed certificate), for WithTLS.
func CAFile(path string) (*tls.Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("CA file %s: no PEM certificate in it", path)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
