package query

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// openapiOperations returns "METHOD /path" for every operation of
// docs/openapi.yaml (a line scan: paths at indent 2, methods at indent 4).
func openapiOperations(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "docs", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pathRE := regexp.MustCompile(`^  (/\S*):\s*$`)
	methodRE := regexp.MustCompile(`^    (get|put|post|delete|patch|head|options):\s*$`)
	var ops []string
	inPaths, path := false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "paths:":
			inPaths = true
		case inPaths && line != "" && !strings.HasPrefix(line, " "):
			inPaths = false
		case !inPaths:
		case pathRE.MatchString(line):
			path = pathRE.FindStringSubmatch(line)[1]
		case methodRE.MatchString(line):
			ops = append(ops, strings.ToUpper(methodRE.FindStringSubmatch(line)[1])+" "+path)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ops
}

func TestEveryRouteIsInOpenAPIAndBack(t *testing.T) {
	documented := openapiOperations(t)
	var registered []string
	for _, rt := range (&Server{}).routes() {
		registered = append(registered, rt.method+" "+rt.path)
	}
	for _, r := range registered {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is not in docs/openapi.yaml", r)
		}
	}
	for _, d := range documented {
		// Paths outside /v1 (/metrics, /healthz) are the collector's own,
		// served beside this server; internal/collector checks them.
		if !strings.Contains(d, " /v1/") {
			continue
		}
		if !slices.Contains(registered, d) {
			t.Errorf("docs/openapi.yaml documents %s, which the server does not serve", d)
		}
	}
	if len(registered) != int(NumEndpoints)-1 {
		t.Errorf("%d routes for %d endpoints (EndpointOther aside)", len(registered), NumEndpoints-1)
	}
}

func TestEveryRouteIsInAPIDoc(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "API.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range (&Server{}).routes() {
		if h := "### `" + rt.method + " " + rt.path + "`"; !strings.Contains(string(doc), h) {
			t.Errorf("docs/API.md has no section %s", h)
		}
	}
}
