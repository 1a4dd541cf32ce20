package config

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/dta-go/dta/internal/admit"
	"github.com/dta-go/dta/internal/httpguard"
	"github.com/dta-go/dta/internal/store"
)

// HTTP configures authentication, TLS and limits of the HTTP servers: the
// collector's (collector.http: queries, /metrics, /healthz) and the
// translator's (translator.http: /metrics, /healthz).
type HTTP struct {
	AuthTokenFile     string         `yaml:"auth_token_file"`
	OpenPaths         []string       `yaml:"open_paths"`
	TLSCert           string         `yaml:"tls_cert"`
	TLSKey            string         `yaml:"tls_key"`
	ReadHeaderTimeout time.Duration  `yaml:"read_header_timeout"`
	ReadTimeout       time.Duration  `yaml:"read_timeout"`
	WriteTimeout      time.Duration  `yaml:"write_timeout"`
	IdleTimeout       time.Duration  `yaml:"idle_timeout"`
	MaxHeaderBytes    store.ByteSize `yaml:"max_header_bytes"`
	MaxBodyBytes      store.ByteSize `yaml:"max_body_bytes"`
	MaxRequests       int            `yaml:"max_requests"`
	MaxStreams        int            `yaml:"max_streams"`
}

// CollectorGuard is the collector's ingress filter (inline in collector:).
type CollectorGuard struct {
	// AllowTranslators lists the sources (CIDR prefixes or addresses) whose
	// RoCEv2 the responder accepts; empty accepts every source.
	AllowTranslators []string `yaml:"allow_translators"`
}

// TranslatorGuard is the translator's ingress filter (inline in translator:).
type TranslatorGuard struct {
	// AllowSources lists the sources (CIDR prefixes or addresses) whose
	// reports are accepted; empty accepts every source.
	AllowSources []string `yaml:"allow_sources"`
	// SourceRate is the datagrams per second one source address may send;
	// 0 means no limit.
	SourceRate int `yaml:"source_rate"`
	// SourceBurst is the datagrams a source may send at once above its
	// rate; 0 means SourceRate (one second's worth).
	SourceBurst int `yaml:"source_burst"`
	// SourceTable is the most source addresses tracked for rate limits.
	SourceTable int `yaml:"source_table"`
}

// validateSecurity checks the security keys; errors name the key.
func (f *File) validateSecurity() error {
	if _, err := f.AllowTranslators(); err != nil {
		return err
	}
	if _, err := f.SourcePolicy(); err != nil {
		return err
	}
	t := f.Translator.TranslatorGuard
	if t.SourceTable < admit.MinTableSize || t.SourceTable > admit.MaxTableSize {
		return fmt.Errorf("translator.source_table: %d out of range [%d, %d]", t.SourceTable, admit.MinTableSize, admit.MaxTableSize)
	}
	h := f.HTTP
	if (h.TLSCert == "") != (h.TLSKey == "") {
		return errors.New("http.tls_cert, http.tls_key: give both (HTTPS) or neither (plain HTTP)")
	}
	if err := (httpguard.Access{Open: h.OpenPaths}).Validate(); err != nil {
		return fmt.Errorf("http.%w", err)
	}
	if err := f.HTTPLimits().Validate(); err != nil {
		return fmt.Errorf("http.%w", err)
	}
	return nil
}

// AllowTranslators parses collector.allow_translators.
func (f *File) AllowTranslators() (*admit.Prefixes, error) {
	p, err := admit.ParsePrefixes(f.Collector.AllowTranslators)
	if err != nil {
		return nil, fmt.Errorf("collector.allow_translators%w", err)
	}
	return p, nil
}

// SourcePolicy is the translator's source gate policy: translator.allow_sources,
// source_rate and source_burst.
func (f *File) SourcePolicy() (admit.Policy, error) {
	t := f.Translator.TranslatorGuard
	p, err := admit.ParsePrefixes(t.AllowSources)
	if err != nil {
		return admit.Policy{}, fmt.Errorf("translator.allow_sources%w", err)
	}
	pol := admit.Policy{Allow: p, Rate: t.SourceRate, Burst: t.SourceBurst}
	if err := pol.Validate(); err != nil {
		return admit.Policy{}, fmt.Errorf("translator.source_%w", err)
	}
	return pol, nil
}

// HTTPLimits are the HTTP servers' limits.
func (f *File) HTTPLimits() httpguard.Limits {
	h := f.HTTP
	return httpguard.Limits{
		ReadHeaderTimeout: h.ReadHeaderTimeout,
		ReadTimeout:       h.ReadTimeout,
		WriteTimeout:      h.WriteTimeout,
		IdleTimeout:       h.IdleTimeout,
		MaxHeaderBytes:    int(min(h.MaxHeaderBytes, 1<<40)),
		MaxBodyBytes:      int64(min(h.MaxBodyBytes, 1<<40)),
		MaxRequests:       h.MaxRequests,
		MaxStreams:        h.MaxStreams,
	}
}

// HTTPAccess reads http.auth_token_file (if set) and returns who may call
// the HTTP servers.
func (f *File) HTTPAccess() (httpguard.Access, error) {
	a := httpguard.Access{Open: slices.Clone(f.HTTP.OpenPaths)}
	if f.HTTP.AuthTokenFile == "" {
		return a, nil
	}
	t, err := httpguard.LoadTokens(f.HTTP.AuthTokenFile)
	if err != nil {
		return a, fmt.Errorf("http.auth_token_file: %w", err)
	}
	a.Tokens = t
	return a, nil
}

// Reloadable keys: what SIGHUP may change without a restart.
var reloadable = []string{
	"http.auth_token_file", "http.open_paths", "http.tls_cert", "http.tls_key",
	"collector.allow_translators",
	"translator.allow_sources", "translator.source_rate", "translator.source_burst",
}

// ReloadableKeys lists the keys a reload may change.
func ReloadableKeys() []string { return slices.Clone(reloadable) }

// CheckReload reports whether next may replace cur in a running process:
// it may differ from cur only in the reloadable keys (tokens, TLS files,
// allowlists, rate limits), and may not turn TLS on or off. The error names
// every other key that differs.
func CheckReload(cur, next *File) error {
	if (cur.HTTP.TLSCert == "") != (next.HTTP.TLSCert == "") {
		return errors.New("http.tls_cert: turning TLS on or off needs a restart")
	}
	a, err := fixedKeys(cur)
	if err != nil {
		return err
	}
	b, err := fixedKeys(next)
	if err != nil {
		return err
	}
	var changed []string
	diffKeys("", a, b, &changed)
	if len(changed) > 0 {
		return fmt.Errorf("%s: not reloadable, restart to change (SIGHUP reloads only %s)",
			strings.Join(changed, ", "), strings.Join(reloadable, ", "))
	}
	return nil
}

// fixedKeys renders f as a YAML tree without its reloadable keys.
func fixedKeys(f *File) (map[string]any, error) {
	b, err := f.Marshal()
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for _, k := range reloadable {
		sec, key, _ := strings.Cut(k, ".")
		if s, ok := m[sec].(map[string]any); ok {
			delete(s, key)
		}
	}
	return m, nil
}

// diffKeys appends the dotted keys at which a and b differ.
func diffKeys(prefix string, a, b any, out *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			diffKeys(p, am[k], bm[k], out)
		}
		return
	}
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok && bok && len(as) == len(bs) {
		for i := range as {
			diffKeys(fmt.Sprintf("%s[%d]", prefix, i), as[i], bs[i], out)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		*out = append(*out, prefix)
	}
}
