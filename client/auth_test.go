package client_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dta-go/dta/client"
	"github.com/dta-go/dta/internal/httpguard"
	"github.com/dta-go/dta/internal/httpguard/guardtest"
	"github.com/dta-go/dta/internal/query"
	"github.com/dta-go/dta/internal/store/storetest"
)

const (
	readToken  = "client-read-token-0123456789"
	adminToken = "client-admin-token-0123456789"
)

// guardedServer is a query server behind a guard with two tokens, over TLS
// signed by ca.
func guardedServer(t *testing.T, ca *guardtest.CA) string {
	return guardedServerWith(t, ca, httpguard.DefaultLimits())
}

func guardedServerWith(t *testing.T, ca *guardtest.CA, limits httpguard.Limits) string {
	t.Helper()
	c := storetest.Open(t)
	tokens, err := httpguard.LoadTokens(guardtest.TokenFile(t, readToken, adminToken+" admin"))
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, _ := ca.Issue(time.Time{})
	cert, err := httpguard.LoadCertificate(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	g, err := httpguard.New(httpguard.Config{Access: httpguard.Access{Tokens: tokens}, Limits: limits,
		Admin: query.ChangesState, Stream: query.IsStream, TLS: cert}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := g.NewServer(query.New(c, query.Config{}, nil).Handler(), log.New(io.Discard, "", 0)) // handshake failures are the point

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(srv, ln)
	t.Cleanup(func() { srv.Close() })
	return "https://" + ln.Addr().String()
}

func TestTheClientSendsItsTokenOverTLS(t *testing.T) {
	ca := guardtest.NewCA(t)
	url := guardedServer(t, ca)
	ctx := context.Background()
	tlsCfg, err := client.CAFile(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	newClient := func(opts ...client.Option) *client.Client {
		t.Helper()
		c, err := client.New(url, nil, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	status := func(err error) int {
		var ae *client.Error
		if errors.As(err, &ae) {
			return ae.StatusCode
		}
		return 0
	}

	if _, err := newClient(client.WithTLS(tlsCfg)).Stores(ctx); status(err) != http.StatusUnauthorized {
		t.Fatalf("no token: %v", err)
	}
	if _, err := newClient(client.WithTLS(tlsCfg), client.WithToken("wrong-token-0123456789")).Stores(ctx); status(err) != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %v", err)
	}
	rd := newClient(client.WithTLS(tlsCfg), client.WithToken(readToken))
	stores, err := rd.Stores(ctx)
	if err != nil || len(stores) == 0 {
		t.Fatalf("a read token: %v", err)
	}
	if err := rd.ResetKeyIncrement(ctx, "keyincrement"); status(err) != http.StatusForbidden || !strings.Contains(err.Error(), "admin token") {
		t.Fatalf("a reset with a read token: %v", err)
	}
	ad := newClient(client.WithTLS(tlsCfg), client.WithToken(adminToken))
	if err := ad.ResetKeyIncrement(ctx, "keyincrement"); err != nil {
		t.Fatalf("a reset with an admin token: %v", err)
	}
	// Without the CA the handshake fails; with InsecureSkipVerify (tests) it works.
	if _, err := newClient(client.WithToken(readToken)).Stores(ctx); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("no CA: %v", err)
	}
	if _, err := newClient(client.WithToken(readToken), client.WithTLS(&tls.Config{InsecureSkipVerify: true})).Stores(ctx); err != nil {
		t.Fatalf("insecure: %v", err)
	}
}

type otherTransport struct{}

func (otherTransport) RoundTrip(*http.Request) (*http.Response, error) { return nil, errors.New("no") }

func TestBadClientOptionsAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		hc   *http.Client
		opt  client.Option
	}{
		{"an empty token", nil, client.WithToken("")},
		{"a token with a newline", nil, client.WithToken("abc\nX-Evil: 1")},
		{"a token with a space", nil, client.WithToken("abc def")},
		{"TLS over a foreign transport", &http.Client{Transport: otherTransport{}}, client.WithTLS(&tls.Config{})},
		{"a response bound under 1 MiB", nil, client.WithMaxResponseBytes(1000)},
	} {
		if _, err := client.New("https://127.0.0.1:1", tc.hc, tc.opt); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	if _, err := client.CAFile("/nonexistent"); err == nil {
		t.Error("an absent CA file was accepted")
	}
	// WithTLS does not modify the caller's transport.
	tr := &http.Transport{}
	hc := &http.Client{Transport: tr}
	if _, err := client.New("https://127.0.0.1:1", hc, client.WithTLS(&tls.Config{ServerName: "x"})); err != nil {
		t.Fatal(err)
	}
	if hc.Transport != tr || tr.TLSClientConfig != nil && tr.TLSClientConfig.ServerName == "x" {
		t.Error("WithTLS changed the caller's http.Client")
	}
}

func TestStreamsOverHTTPSOutliveTheWriteTimeout(t *testing.T) {
	ca := guardtest.NewCA(t)
	l := httpguard.DefaultLimits()
	l.ReadHeaderTimeout, l.ReadTimeout, l.WriteTimeout = 100*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	url := guardedServerWith(t, ca, l)
	tlsCfg, err := client.CAFile(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(url, nil, client.WithTLS(tlsCfg), client.WithToken(readToken))
	if err != nil {
		t.Fatal(err)
	}
	// A long poll longer than the write timeout answers (empty) at its end.
	start := time.Now()
	res, err := c.Append(context.Background(), "append", 0, client.FromHead, client.AppendOptions{Wait: 600 * time.Millisecond})
	if err != nil || len(res.Entries) != 0 {
		t.Fatalf("a 600 ms long poll past a 200 ms write timeout: %v %+v", err, res)
	}
	if d := time.Since(start); d < 600*time.Millisecond {
		t.Fatalf("the long poll returned after %v", d)
	}
	// The notification stream stays open until the client ends it.
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	if err := c.Notifications(ctx, func(client.Notification) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the notification stream ended with %v, want the client's deadline", err)
	}
}

func TestCAFileRefusesWhatIsNotARegularFile(t *testing.T) {
	for _, path := range []string{"/dev/zero", t.TempDir()} {
		if _, err := client.CAFile(path); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("CAFile(%s): %v, want a refusal", path, err)
		}
	}
}
