package arch_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLayering enforces the import rules of DESIGN.md §2 with go list -deps.
func TestLayering(t *testing.T) {
	if testing.Short() {
		t.Skip("go list over the module is slow in -short mode")
	}
	const mod = "github.com/dta-go/dta/"
	rules := []struct {
		pkg     string
		stdOnly bool     // only the standard library, and the module packages in also
		also    []string // with stdOnly: module packages allowed too (each has its own stdOnly row)
		deny    []string // imports (direct or not) that must not appear
	}{
		{pkg: "wire/dta", stdOnly: true},
		{pkg: "hashing", stdOnly: true},
		{pkg: "internal/memop", stdOnly: true},
		{pkg: "partition", stdOnly: true},
		{pkg: "sketch", stdOnly: true, also: []string{"hashing"}},
		{pkg: "wire/intreport", stdOnly: true},
		{pkg: "internal/intmap", deny: []string{"net", "os", "flag", "log/slog", "github.com/spf13/cobra", "github.com/prometheus/client_golang/prometheus", mod + "internal/translator"}},
		{pkg: "wire/roce", stdOnly: true},
		{pkg: "wire/advert", stdOnly: true, also: []string{"wire/dta", "hashing"}},
		// The RoCEv2 requester is public (DART reporters write without a
		// translator): the standard library and the codec only.
		{pkg: "rdma/sock", stdOnly: true, also: []string{"wire/roce"}},
		// dta decode's decoding and describing: the codecs and the standard
		// library only (it never sends, writes memory or defines flags).
		{pkg: "internal/decode", stdOnly: true, also: []string{"wire/dta", "wire/roce"}, deny: []string{"net", "net/http", "os", "flag"}},
		{pkg: "internal/decode/decodetest", stdOnly: true, also: []string{"wire/roce"}},
		{pkg: "rdma/requester", stdOnly: true, also: []string{"wire/roce", "rdma/sock"}},
		{pkg: "internal/admit", stdOnly: true},
		{pkg: "internal/httpguard", deny: []string{mod + "internal/query", mod + "internal/store", mod + "internal/config", "github.com/spf13/cobra", "github.com/prometheus/client_golang/prometheus"}},
		{pkg: "internal/httpguard/guardtest", stdOnly: true},
		{pkg: "internal/rdma", deny: []string{mod + "internal/store", mod + "internal/primitive/", mod + "wire/dta", "github.com/spf13/cobra"}},
		{pkg: "internal/uplink", deny: []string{"net/http", "github.com/spf13/cobra", mod + "internal/translator"}},
		{pkg: "internal/primitive/keywrite", deny: []string{"net", "os", "flag", "log/slog", "github.com/spf13/cobra"}},
		{pkg: "internal/primitive/keyincrement", deny: []string{"net", "os", "flag", "log/slog", "github.com/spf13/cobra"}},
		{pkg: "internal/primitive/postcard", deny: []string{"net", "os", "flag", "log/slog", "github.com/spf13/cobra"}},
		{pkg: "internal/primitive/sketchmerge", deny: []string{"net", "os", "flag", "log/slog", "github.com/spf13/cobra"}},
		{pkg: "internal/primitive/appendlist", deny: []string{"net", "os", "flag", "log/slog", "github.com/spf13/cobra"}},
		{pkg: "internal/translator", deny: []string{"net", "net/http", "flag", "github.com/spf13/cobra", "github.com/prometheus/client_golang/prometheus"}},
		{pkg: "internal/translator/rule", deny: []string{"net", "os", "flag", "log/slog", "github.com/spf13/cobra", "github.com/prometheus/client_golang/prometheus", mod + "internal/memop"}},
		{pkg: "internal/store", deny: []string{"net", "net/http", "flag", "github.com/spf13/cobra", "github.com/prometheus/client_golang/prometheus"}},
		{pkg: "internal/snapshot", deny: []string{"net", "net/http", "github.com/spf13/cobra", "github.com/prometheus/client_golang/prometheus", mod + "internal/translator", mod + "internal/query"}},
		{pkg: "internal/query", deny: []string{"flag", "github.com/spf13/cobra", "github.com/prometheus/client_golang/prometheus"}},
		{pkg: "internal/export", deny: []string{"net/http", "github.com/spf13/cobra", "github.com/prometheus/client_golang/prometheus", mod + "internal/translator", mod + "internal/query", mod + "internal/config"}},
		{pkg: "internal/web", stdOnly: true}, // serves its embedded assets; the page reads the public API only
		{pkg: "internal/tea", stdOnly: true},
		{pkg: "internal/tea/nf", stdOnly: true, also: []string{"internal/tea"}},
		{pkg: "internal/tea/nf/tun", deny: []string{mod + "internal/", "github.com/spf13/cobra"}},
		{pkg: "internal/tea/rdmabench", deny: []string{"net/http", "flag", "github.com/spf13/cobra", mod + "internal/translator", mod + "internal/store"}},
		{pkg: "internal/tea/remote", deny: []string{"net", "net/http", "os", "flag", "github.com/spf13/cobra", mod + "internal/rdma", mod + "internal/store"}},
		{pkg: "internal/tea/teabench", deny: []string{"net", "os", "flag", "log/slog", "github.com/spf13/cobra", mod + "internal/rdma", mod + "internal/region"}},
		{pkg: "internal/hawkeye/netsim", stdOnly: true},
		{pkg: "internal/hawkeye/record", stdOnly: true},
		{pkg: "internal/hawkeye/telemetry", deny: []string{"net", "net/http", "os", "github.com/spf13/cobra", mod + "client", mod + "internal/hawkeye/diagnose", mod + "internal/translator", mod + "internal/store", mod + "internal/collector"}},
		{pkg: "internal/hawkeye/diagnose", deny: []string{"net", "os", "github.com/spf13/cobra", mod + "reporter", mod + "internal/hawkeye/netsim", mod + "internal/hawkeye/telemetry", mod + "internal/query", mod + "internal/store", mod + "internal/collector", mod + "internal/translator"}},
		{pkg: "internal/hawkeye", deny: []string{"github.com/spf13/cobra", mod + "internal/cli", mod + "internal/collector", mod + "internal/store", mod + "internal/query", mod + "internal/translator", mod + "internal/ingest"}},
		{pkg: "internal/transport/xdp", deny: []string{"net/http", "flag", "github.com/spf13/cobra", "github.com/prometheus/client_golang/prometheus", mod + "internal/translator", mod + "wire/dta", mod + "internal/ingest"}},
		{pkg: "client", deny: []string{mod + "internal/", "github.com/spf13/cobra"}},
		{pkg: "reporter", deny: []string{mod + "internal/", "github.com/spf13/cobra"}},
	}
	for _, r := range rules {
		t.Run(r.pkg+" keeps to its imports", func(t *testing.T) {
			// Standard-library-only packages are checked over all their
			// dependencies; deny lists over direct imports.
			out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}} {{.ImportPath}}", "./"+r.pkg).CombinedOutput()
			if err != nil {
				t.Fatalf("go list: %v\n%s", err, out)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				f := strings.Fields(line)
				dep := f[len(f)-1]
				if r.stdOnly && len(f) == 2 && dep != mod+r.pkg && !slices.Contains(r.also, strings.TrimPrefix(dep, mod)) {
					t.Errorf("%s depends on %s, but may use only the standard library", r.pkg, dep)
				}
			}
			out, err = exec.Command("go", "list", "-f", "{{join .Imports \"\\n\"}}", "./"+r.pkg).CombinedOutput()
			if err != nil {
				t.Fatalf("go list: %v\n%s", err, out)
			}
			for _, dep := range strings.Fields(string(out)) {
				for _, d := range r.deny {
					if dep == d || strings.HasSuffix(d, "/") && strings.HasPrefix(dep, d) {
						t.Errorf("%s imports %s", r.pkg, dep)
					}
				}
			}
		})
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(f[0], mod) {
			continue
		}
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, "github.com/prometheus/client_golang") && f[0] != mod+"internal/metrics" {
				t.Errorf("%s imports %s: only internal/metrics may", f[0], imp)
			}
			if strings.HasPrefix(imp, "github.com/twmb/franz-go") && f[0] != mod+"internal/export" {
				t.Errorf("%s imports %s: only internal/export speaks Kafka", f[0], imp)
			}
			if strings.HasPrefix(imp, "github.com/spf13/") && f[0] != mod+"internal/cli" {
				t.Errorf("%s imports %s: only internal/cli defines flags", f[0], imp)
			}
		}
	}
}
