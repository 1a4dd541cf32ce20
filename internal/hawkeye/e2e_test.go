package hawkeye_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/dta-go/dta/internal/cli/clitest"
	"github.com/dta-go/dta/internal/hawkeye"
	"github.com/dta-go/dta/internal/hawkeye/record"
)

// startDTA runs dta up in this process with HAWKEYE's stores and returns a
// session connected to it.
func startDTA(t *testing.T) *hawkeye.Session {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hawkeye.yaml")
	if err := os.WriteFile(path, []byte(record.ConfigYAML()), 0o644); err != nil {
		t.Fatal(err)
	}
	m := clitest.Start(t, clitest.UpReady, "up", "--config", path, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	s, err := hawkeye.Open(context.Background(), m[1], m[2])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
