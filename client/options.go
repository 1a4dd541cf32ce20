package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"syscall"
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

// DefaultMaxResponseBytes bounds the JSON answer of one call unless
// WithMaxResponseBytes says otherwise: room for a batch of MaxBatch results
// many times over, and for the counters of a sketch of about ten million
// counters (GET .../sketchmerge/counters of 16 rows of 2^19 columns).
const DefaultMaxResponseBytes = 256 << 20

// WithMaxResponseBytes bounds the JSON answer of one call to n bytes (at
// least 1 MiB), so that a collector that answers without end cannot make the
// client allocate without bound; a larger answer is an error naming this
// option. Raise it to read the counters of larger sketches.
func WithMaxResponseBytes(n int64) Option {
	return func(c *Client) error {
		if n < 1<<20 {
			return fmt.Errorf("max response bytes: %d, want at least 1 MiB", n)
		}
		c.maxResponse = n
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
	b, err := readPEM(path)
	if err != nil {
		return nil, fmt.Errorf("CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("CA file %s: no PEM certificate in it", path)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// maxPEMBytes bounds a CA file: far more than any chain of certificates.
const maxPEMBytes = 1 << 20

// readPEM reads a regular file of at most maxPEMBytes: a device, a FIFO or
// a directory is refused rather than read without end.
func readPEM(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0) // a FIFO must not block the open
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPEMBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > maxPEMBytes {
		return nil, fmt.Errorf("%s: more than %d bytes", path, maxPEMBytes)
	}
	return b, nil
}
