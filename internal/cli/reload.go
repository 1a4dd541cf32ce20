package cli

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/dta-go/dta/internal/admit"
	"github.com/dta-go/dta/internal/config"
	"github.com/dta-go/dta/internal/httpguard"
	"github.com/dta-go/dta/internal/metrics"
)

// security holds what a configuration's security settings are made of once
// read from disk (the token file, the certificate, the parsed allowlists):
// everything that can fail, so that a reload builds all of it or changes
// nothing.
type security struct {
	access  httpguard.Access
	cert    *tls.Certificate // nil: plain HTTP
	allowTr *admit.Prefixes  // collector.allow_translators
	sources admit.Policy     // translator.allow_sources, source_rate, source_burst
}

// readSecurity reads the files f's security settings name and parses its
// allowlists.
func readSecurity(f *config.File) (*security, error) {
	var s security
	var err error
	if s.access, err = f.HTTPAccess(); err != nil {
		return nil, err
	}
	if f.HTTP.TLSCert != "" {
		if s.cert, err = httpguard.ReadKeyPair(f.HTTP.TLSCert, f.HTTP.TLSKey); err != nil {
			return nil, fmt.Errorf("http.%w", err)
		}
	}
	if s.allowTr, err = f.AllowTranslators(); err != nil {
		return nil, err
	}
	if s.sources, err = f.SourcePolicy(); err != nil {
		return nil, err
	}
	return &s, nil
}

// guardConfig is the configuration of a process's HTTP server guard.
func (s *security) guardConfig(f *config.File) httpguard.Config {
	gc := httpguard.Config{Access: s.access, Limits: f.HTTPLimits()}
	if s.cert != nil {
		gc.TLS = httpguard.NewCertificate(s.cert)
	}
	return gc
}

// live is what a running process lets a reload change. Nil fields are parts
// the process does not run.
type live struct {
	guard   *httpguard.Guard
	gate    *admit.Gate
	allowTr func(*admit.Prefixes)
}

// apply puts s in force. Every swap is atomic and cannot fail: readSecurity
// did everything that could.
func (l *live) apply(s *security) {
	if l.guard != nil {
		_ = l.guard.SetAccess(s.access) // validated by config.File.Validate
		if c := l.guard.Certificate(); c != nil && s.cert != nil {
			c.Set(s.cert)
		}
	}
	if l.gate != nil {
		_ = l.gate.SetPolicy(s.sources) // validated by config.File.SourcePolicy
	}
	if l.allowTr != nil {
		l.allowTr(s.allowTr)
	}
}

// reloader re-reads the configuration on SIGHUP and applies what may change
// without a restart; a file that is invalid or changes anything else is
// refused with a log line naming the problem, and the old settings stay.
type reloader struct {
	load   func() (*config.File, error) // the file with the command's flags applied, validated
	cur    *config.File
	live   *live
	logger *slog.Logger

	mu     sync.Mutex // serialises reloads
	ok     atomic.Uint64
	failed atomic.Uint64
	last   atomic.Int64
}

func newReloader(load func() (*config.File, error), cur *config.File, l *live, logger *slog.Logger) *reloader {
	r := &reloader{load: load, cur: cur, live: l, logger: logger}
	r.last.Store(time.Now().Unix())
	return r
}

// reload reads and applies the configuration once.
func (r *reloader) reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	next, err := r.load()
	if err == nil {
		err = config.CheckReload(r.cur, next)
	}
	var sec *security
	if err == nil {
		sec, err = readSecurity(next)
	}
	if err != nil {
		r.failed.Add(1)
		r.logger.Error("configuration reload refused; the previous configuration stays in force", "err", err.Error())
		return err
	}
	r.live.apply(sec)
	r.cur = next
	r.ok.Add(1)
	r.last.Store(time.Now().Unix())
	r.logger.Info("configuration reloaded",
		"tokens", sec.access.Tokens.Len(), "open_paths", sec.access.Open, "tls", sec.cert != nil,
		"allow_sources", sec.sources.Allow.String(), "source_rate", sec.sources.Rate, "source_burst", sec.sources.Burst,
		"allow_translators", sec.allowTr.String())
	return nil
}

// run reloads on every signal from hup until ctx is done.
func (r *reloader) run(ctx context.Context, hup <-chan os.Signal) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-hup:
			r.logger.Info("SIGHUP: reloading the configuration")
			_ = r.reload() // logged and counted
		}
	}
}

// metrics returns the reload counters for /metrics.
func (r *reloader) metrics() metrics.Reloads {
	return metrics.Reloads{OK: &r.ok, Failed: &r.failed, LastOK: &r.last}
}

// notifyHUP starts catching SIGHUP (which would otherwise end the process)
// and returns the channel and the function that stops catching it.
func notifyHUP() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	return ch, func() { signal.Stop(ch) }
}

// securityFlags are the security flags of up, collector and translator.
type securityFlags struct {
	tokenFile, tlsCert, tlsKey string
}

func (s *securityFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&s.tokenFile, "auth-token-file", "", "file of bearer tokens the HTTP API requires, one per line: TOKEN [read|admin] (overrides http.auth_token_file; re-read on SIGHUP)")
	fl.StringVar(&s.tlsCert, "tls-cert", "", "PEM certificate chain: serve HTTPS (overrides http.tls_cert; re-read on SIGHUP)")
	fl.StringVar(&s.tlsKey, "tls-key", "", "PEM private key of --tls-cert (overrides http.tls_key)")
}

// apply overrides f's keys with the flags that were given.
func (s *securityFlags) apply(fl *pflag.FlagSet, f *config.File) {
	if fl.Changed("auth-token-file") {
		f.HTTP.AuthTokenFile = s.tokenFile
	}
	if fl.Changed("tls-cert") {
		f.HTTP.TLSCert = s.tlsCert
	}
	if fl.Changed("tls-key") {
		f.HTTP.TLSKey = s.tlsKey
	}
}

// loader returns the function that reads the configuration at path with the
// command's flags applied (override) and validates it; reloads call it again.
func loader(path string, override func(*config.File)) func() (*config.File, error) {
	return func() (*config.File, error) {
		f, err := loadConfig(path)
		if err != nil {
			return nil, err
		}
		override(f)
		if err := f.Validate(); err != nil {
			return nil, usageError("%v", err)
		}
		return f, nil
	}
}

// registerSecurityMetrics adds the reload counters and (for a translator)
// the source gate's to reg.
func registerSecurityMetrics(reg *metrics.Registry, rl *reloader, gate *admit.Gate) error {
	if err := reg.Register(rl.metrics()); err != nil {
		return err
	}
	if gate != nil {
		return reg.Register(metrics.SourceGate{G: gate})
	}
	return nil
}

// scheme is the URL scheme of a guard's server.
func scheme(g *httpguard.Guard) string {
	if g.TLS() {
		return "https"
	}
	return "http"
}
