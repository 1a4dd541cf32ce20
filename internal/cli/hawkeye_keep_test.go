package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dta-go/dta/internal/hawkeye/record"
)

// hawkeyeServerHint is the query API a sim's table output names.
var hawkeyeServerHint = regexp.MustCompile(`--server (http://\S+)`)

func TestHawkeyeSimNamesOnlyAQueryServerThatOutlivesIt(t *testing.T) {
	tests := []struct {
		name     string
		external bool // --to/--server of a dta up the test runs
		keep     bool
		want     string // in stdout
	}{
		{"without --keep, no server is named and --keep is suggested", false, false, "rerun with --keep"},
		{"with --keep, the server named is the dta up still running", false, true, "dta query append --store hk-polls --list 0 --server http://"},
		{"with --to and --server, that server is named", true, false, "dta query append --store hk-polls --list 0 --server http://"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"hawkeye", "sim", "--scenario", "incast", "--seed", "7004"}
			if tt.external {
				path := filepath.Join(t.TempDir(), "hawkeye.yaml")
				if err := os.WriteFile(path, []byte(record.ConfigYAML()), 0o600); err != nil {
					t.Fatal(err)
				}
				m, _ := startCmd(t, upReady, "up", "--config", path, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
				args = append(args, "--to", m[1], "--server", m[2])
			}
			if tt.keep {
				args = append(args, "--keep")
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var out, errb syncBuffer
			done := make(chan int, 1)
			go func() { done <- Run(ctx, args, nil, &out, &errb) }()
			if tt.keep {
				deadline := time.Now().Add(20 * time.Second)
				for !strings.Contains(errb.String(), "dta up keeps running at") {
					if time.Now().After(deadline) {
						t.Fatalf("no 'keeps running' line; stdout %q, stderr %q", out.String(), errb.String())
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			// The server named must answer queries now that the sim is over.
			m := hawkeyeServerHint.FindStringSubmatch(out.String())
			if tt.keep {
				if m == nil {
					t.Fatalf("no server named:\n%s", out.String())
				}
				if code, qout, qerr := reportRun(t, nil, "query", "stores", "--server", m[1]); code != 0 || !strings.Contains(qout, record.PollStore) {
					t.Errorf("the server named, %s, does not answer: exit %d, %s%s", m[1], code, qout, qerr)
				}
				cancel()
			}
			select {
			case code := <-done:
				if code != 0 {
					t.Fatalf("exit %d: %s", code, errb.String())
				}
			case <-time.After(60 * time.Second):
				t.Fatal("dta hawkeye sim did not end")
			}
			got := out.String()
			if !strings.Contains(got, tt.want) {
				t.Errorf("stdout lacks %q:\n%s", tt.want, got)
			}
			if !tt.keep && !tt.external {
				if m := hawkeyeServerHint.FindStringSubmatch(got); m != nil {
					t.Errorf("names the server %s, gone when the command ended:\n%s", m[1], got)
				}
			}
		})
	}
}
