package config

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestSecurityDefaultsAreOpenAndBounded(t *testing.T) {
	f := Default()
	if f.HTTP.AuthTokenFile != "" || f.HTTP.TLSCert != "" || len(f.Translator.AllowSources) != 0 || len(f.Collector.AllowTranslators) != 0 || f.Translator.SourceRate != 0 {
		t.Fatalf("dta up must work out of the box: %+v %+v", f.HTTP, f.Translator.TranslatorGuard)
	}
	if !reflect.DeepEqual(f.HTTP.OpenPaths, []string{"/healthz"}) {
		t.Errorf("open paths %v", f.HTTP.OpenPaths)
	}
	l := f.HTTPLimits()
	if err := l.Validate(); err != nil || l.ReadHeaderTimeout != 10*time.Second || l.MaxBodyBytes != 4<<20 || l.MaxRequests != 256 || l.MaxStreams != 128 {
		t.Errorf("limits %+v: %v", l, err)
	}
	p, err := f.SourcePolicy()
	if err != nil || !p.Allow.Any() || p.Rate != 0 {
		t.Errorf("source policy %+v %v", p, err)
	}
}

func TestBadSecurityKeysNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"a CIDR with host bits", "translator:\n  allow_sources: [10.0.0.1/8]\n", "translator.allow_sources[0]"},
		{"a name instead of an address", "collector:\n  allow_translators: [192.0.2.0/24, collector.example]\n", "collector.allow_translators[1]"},
		{"a negative rate", "translator:\n  source_rate: -5\n", "translator.source_rate"},
		{"a huge burst", "translator:\n  source_burst: 100000000\n", "translator.source_burst"},
		{"a tiny source table", "translator:\n  source_table: 2\n", "translator.source_table"},
		{"a certificate without its key", "http:\n  tls_cert: /etc/dta/cert.pem\n", "http.tls_cert, http.tls_key"},
		{"an open path that is no path", "http:\n  open_paths: [metrics]\n", "http.open_paths[0]"},
		{"a zero timeout", "http:\n  read_timeout: 0s\n", "http.read_timeout"},
		{"no requests at all", "http:\n  max_requests: 0\n", "http.max_requests"},
		{"a tiny header limit", "http:\n  max_header_bytes: 100\n", "http.max_header_bytes"},
		{"an unknown http key", "http:\n  auth_tokens: x\n", `unknown key "auth_tokens"`},
	} {
		t.Run(tc.name+" is refused with a message naming it", func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestSecuritySettingsRoundTrip(t *testing.T) {
	f, err := Parse([]byte(`
collector:
  allow_translators: [192.0.2.0/24, "2001:db8::/32"]
translator:
  allow_sources: [10.0.0.0/8]
  source_rate: 5000
  source_burst: 100
  source_table: 4096
http:
  auth_token_file: /etc/dta/tokens
  open_paths: [/healthz, /metrics]
  tls_cert: /etc/dta/cert.pem
  tls_key: /etc/dta/key.pem
  write_timeout: 90s
  max_streams: 16
`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	g, err := Parse(b)
	if err != nil {
		t.Fatalf("the printed config does not parse back: %v\n%s", err, b)
	}
	if !reflect.DeepEqual(f, g) {
		t.Fatalf("the printed config changed on the way back:\n%s", b)
	}
	if err := CheckReload(f, g); err != nil {
		t.Fatalf("a configuration is not a reload of itself: %v", err)
	}
}

func TestReloadsMayChangeOnlyTheReloadableKeys(t *testing.T) {
	base := `
translator:
  allow_sources: [10.0.0.0/8]
http:
  auth_token_file: /etc/dta/tokens
  tls_cert: /etc/dta/cert.pem
  tls_key: /etc/dta/key.pem
`
	cur, err := Parse([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, yaml string
		want       []string // keys named in the error; nil: the reload is allowed
	}{
		{"the same file", base, nil},
		{"new tokens, allowlists, rates and certificate files", `
collector:
  allow_translators: [192.0.2.7]
translator:
  allow_sources: [10.0.0.0/16, 192.0.2.0/24]
  source_rate: 1000
  source_burst: 10
http:
  auth_token_file: /etc/dta/tokens.new
  open_paths: [/healthz, /metrics]
  tls_cert: /etc/dta/cert2.pem
  tls_key: /etc/dta/key2.pem
`, nil},
		{"a listen address", base + "collector:\n  http: :9000\n", []string{"collector.http"}},
		{"the store geometry", base + "stores:\n  - {name: keywrite, id: 1, primitive: keywrite, default: true, slots: 2048}\n", []string{"stores"}},
		{"one store's slots", strings.Replace(string(mustMarshal(t, cur)), "slots: 1048576", "slots: 2097152", 1), []string{"stores[0].slots"}},
		{"an HTTP limit and the log level", "log:\n  level: debug\ntranslator:\n  allow_sources: [10.0.0.0/8]\nhttp:\n  auth_token_file: /etc/dta/tokens\n  tls_cert: /etc/dta/cert.pem\n  tls_key: /etc/dta/key.pem\n  max_streams: 3\n", []string{"http.max_streams", "log.level"}},
		{"the source table", strings.Replace(base, "allow_sources: [10.0.0.0/8]", "allow_sources: [10.0.0.0/8]\n  source_table: 1024", 1), []string{"translator.source_table"}},
		{"TLS turned off", "translator:\n  allow_sources: [10.0.0.0/8]\nhttp:\n  auth_token_file: /etc/dta/tokens\n", []string{"turning TLS on or off"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, err := Parse([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			err = CheckReload(cur, next)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, k := range tc.want {
				if !strings.Contains(err.Error(), k) {
					t.Errorf("the error does not name %s: %v", k, err)
				}
			}
		})
	}
}

func mustMarshal(t *testing.T, f *File) []byte {
	t.Helper()
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTheHardenedExampleLoads checks the example of docs/OPERATIONS.md
// (the block marked "yaml hardened"): it parses, and it turns on what it
// claims to.
func TestTheHardenedExampleLoads(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "OPERATIONS.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml hardened\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/OPERATIONS.md has no ```yaml hardened block")
	}
	f, err := Parse(m[1])
	if err != nil {
		t.Fatalf("the hardened example does not load: %v\n%s", err, m[1])
	}
	if f.HTTP.AuthTokenFile == "" || f.HTTP.TLSCert == "" || len(f.Translator.AllowSources) == 0 ||
		len(f.Collector.AllowTranslators) == 0 || f.Translator.SourceRate == 0 {
		t.Fatalf("the hardened example leaves something open: %+v %+v %+v", f.HTTP, f.Translator.TranslatorGuard, f.Collector.CollectorGuard)
	}
}
