package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Every dta configuration shown in the docs (a ```yaml block whose
// top-level keys are sections of the configuration file) loads: a user who
// copies one gets a working configuration, not an error. Files the examples
// name under /etc/dta are made, empty, in a directory of the test's.
func TestEveryConfigurationInTheDocsLoads(t *testing.T) {
	sections := map[string]bool{}
	for _, k := range []string{"collector", "translator", "stores", "rules", "int", "export", "http", "log"} {
		sections[k] = true
	}
	block := regexp.MustCompile("(?ms)^```yaml[^\n]*\n(.*?)^```")
	topKey := regexp.MustCompile(`(?m)^([a-z_]+):`)
	files := regexp.MustCompile(`/etc/dta/[\w./-]+`)
	docs, _ := filepath.Glob("../../docs/*.md")
	docs = append(docs, "../../README.md")
	checked := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range block.FindAllSubmatch(b, -1) {
			text := string(m[1])
			keys := topKey.FindAllStringSubmatch(text, -1)
			if len(keys) == 0 || !sections[keys[0][1]] {
				continue // another program's YAML (a Prometheus scrape configuration)
			}
			if strings.Contains(text, "slow-paths") {
				continue // a fragment added to a user's stores: internal/cli's TestTheRulesExamplesLoadWithTheDefaultStores
			}
			dir := t.TempDir()
			text = files.ReplaceAllStringFunc(text, func(p string) string {
				local := filepath.Join(dir, filepath.Base(p))
				content := []byte("placeholder\n")
				if strings.HasSuffix(p, ".pem") {
					content = selfSigned(t, strings.Contains(filepath.Base(p), "key"))
				}
				if err := os.WriteFile(local, content, 0o600); err != nil {
					t.Fatal(err)
				}
				return local
			})
			checked++
			if _, err := Parse([]byte(text)); err != nil {
				t.Errorf("%s: the configuration starting %q does not load: %v", doc, firstLine(text), err)
			}
		}
	}
	if checked < 6 {
		t.Errorf("only %d configurations found in the docs", checked)
	}
}

// selfSigned returns a throwaway certificate's PEM, or its key's.
func selfSigned(t *testing.T, key bool) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if key {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "dta docs"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
