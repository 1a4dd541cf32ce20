package cli

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net/http"
	"os"

	"github.com/spf13/pflag"

	"github.com/dta-go/dta/client"
	"github.com/dta-go/dta/internal/httpguard"
)

// queryAuth are the flags of dta query that reach a guarded collector.
type queryAuth struct {
	tokenFile string
	caFile    string
	insecure  bool
	tokenFrom string // where the token came from, for error hints
}

func (a *queryAuth) add(fl *pflag.FlagSet) {
	fl.StringVar(&a.tokenFile, "token-file", "", "`file` holding the bearer token to send (default: $DTA_TOKEN)")
	fl.StringVar(&a.caFile, "ca-file", "", "PEM `file` of the CA (or self-signed certificate) to trust for an https:// --server")
	fl.BoolVar(&a.insecure, "insecure", false, "do not verify the server's TLS certificate (tests only)")
}

// options turns the flags (and DTA_TOKEN) into client options.
func (a *queryAuth) options() ([]client.Option, error) {
	var opts []client.Option
	token := ""
	switch {
	case a.tokenFile != "":
		b, err := httpguard.ReadSecret(a.tokenFile, httpguard.MaxTokenLen+4096)
		if err != nil {
			return nil, usageError("--token-file: %v", err)
		}
		if token, err = clientToken(b); err != nil {
			return nil, usageError("--token-file %s: %v", a.tokenFile, err)
		}
		a.tokenFrom = "--token-file"
	case os.Getenv("DTA_TOKEN") != "":
		var err error
		if token, err = clientToken([]byte(os.Getenv("DTA_TOKEN"))); err != nil {
			return nil, usageError("DTA_TOKEN: %v", err)
		}
		a.tokenFrom = "DTA_TOKEN"
	}
	if token != "" {
		opts = append(opts, client.WithToken(token))
	}
	switch {
	case a.caFile != "" && a.insecure:
		return nil, usageError("--ca-file and --insecure: give one")
	case a.caFile != "":
		cfg, err := client.CAFile(a.caFile)
		if err != nil {
			return nil, usageError("--ca-file: %v", err)
		}
		opts = append(opts, client.WithTLS(cfg))
	case a.insecure:
		opts = append(opts, client.WithTLS(&tls.Config{InsecureSkipVerify: true}))
	}
	return opts, nil
}

// clientToken is the one token in b: its first field on the one line that
// is neither blank nor a comment (so a one-line server token file, "TOKEN
// admin", works too).
func clientToken(b []byte) (string, error) {
	tok := ""
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if tok != "" {
			return "", errNotOneToken
		}
		tok = string(f[0])
	}
	if tok == "" {
		return "", errNotOneToken
	}
	return tok, nil
}

var errNotOneToken = errors.New("want exactly one token (one non-comment line)")

// authHint says what to do about a 401 or 403.
func (a *queryAuth) authHint(status int) string {
	switch {
	case status == http.StatusForbidden:
		return "this needs a token with the admin role"
	case a.tokenFrom != "":
		return "the token from " + a.tokenFrom + " was not accepted"
	}
	return "the collector requires a token: give --token-file FILE or set DTA_TOKEN"
}
