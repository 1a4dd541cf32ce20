package httpguard

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/httpguard/guardtest"
)

func tlsGuard(t *testing.T, cert *Certificate, tokens *Tokens) string {
	t.Helper()
	g, err := New(Config{Access: Access{Tokens: tokens}, Limits: DefaultLimits(), TLS: cert}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !g.TLS() || g.Certificate() != cert {
		t.Fatal("the guard does not serve TLS")
	}
	return "https://" + serve(t, g, newBackend()) + "/v1/value"
}

func clientOf(cfg *tls.Config) *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 10 * time.Second}
}

func TestTLSServesClientsThatTrustTheCA(t *testing.T) {
	ca := guardtest.NewCA(t)
	certFile, keyFile, _ := ca.Issue(time.Time{})
	cert, err := LoadCertificate(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	url := tlsGuard(t, cert, mustTokens(t, readTok))

	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+readTok)
	resp, err := clientOf(ca.ClientConfig()).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
		t.Fatalf("status %d, TLS %+v", resp.StatusCode, resp.TLS)
	}

	// A client that does not trust the CA fails the handshake.
	_, err = clientOf(&tls.Config{}).Get(url)
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Fatalf("a client without the CA: %v", err)
	}
	// TLS 1.1 is refused.
	_, err = clientOf(&tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}).Get(url)
	if err == nil || !strings.Contains(err.Error(), "protocol version") {
		t.Fatalf("a TLS 1.1 client: %v", err)
	}
	// Plain HTTP to the TLS port gets no answer from the API.
	resp, err = http.Get(strings.Replace(url, "https", "http", 1))
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain HTTP to the TLS port: %d", resp.StatusCode)
		}
	}
}

func TestANewCertificateServesNewHandshakes(t *testing.T) {
	ca := guardtest.NewCA(t)
	c1, k1, s1 := ca.Issue(time.Time{})
	cert, err := LoadCertificate(c1, k1)
	if err != nil {
		t.Fatal(err)
	}
	url := tlsGuard(t, cert, nil)
	serial := func() int64 {
		t.Helper()
		cl := clientOf(ca.ClientConfig())
		cl.Transport.(*http.Transport).DisableKeepAlives = true
		resp, err := cl.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.TLS.PeerCertificates[0].SerialNumber.Int64()
	}
	if got := serial(); got != s1 {
		t.Fatalf("serial %d, want %d", got, s1)
	}
	c2, k2, s2 := ca.Issue(time.Time{})
	if err := cert.Load(c2, k2); err != nil {
		t.Fatal(err)
	}
	if got := serial(); got != s2 {
		t.Fatalf("after Load: serial %d, want %d", got, s2)
	}
	// Bad pairs are refused and the one in force stays.
	c3, k3, _ := ca.Issue(time.Now().Add(-time.Minute))
	if err := cert.Load(c3, k3); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("an expired certificate: %v", err)
	}
	if err := cert.Load(c2, k1); err == nil {
		t.Fatal("a certificate with another's key was accepted")
	}
	if err := os.Chmod(k2, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cert.Load(c2, k2); err == nil || !strings.Contains(err.Error(), "tls_key") {
		t.Fatalf("a world-readable key: %v", err)
	}
	if err := cert.Load(c2+".absent", k2); err == nil || !strings.Contains(err.Error(), "tls_cert") {
		t.Fatalf("an absent certificate: %v", err)
	}
	if got := serial(); got != s2 || cert.Leaf().SerialNumber.Int64() != s2 {
		t.Fatalf("after refused loads: serial %d, want %d", got, s2)
	}
}

func TestACertificateThatIsNotARegularFileIsRefused(t *testing.T) {
	if _, err := ReadKeyPair("/dev/zero", "/dev/zero"); err == nil || !strings.Contains(err.Error(), "tls_cert") || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("ReadKeyPair(/dev/zero): %v, want a refusal naming tls_cert", err)
	}
}
