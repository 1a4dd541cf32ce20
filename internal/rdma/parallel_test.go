package rdma

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestSuiteWithParallelReadLoops runs every test of the package again in a
// child process whose responders have several read loops
// (DTA_TEST_READ_LOOPS), so that everything the responder enforces —
// ICRC, PSN rules, rkeys, bounds, replays, NAKs, CM limits, the allowlist,
// timers, GRO, captures — is proven with QPs owned by loops other than the
// first too. Run one configuration by hand with
//
//	DTA_TEST_READ_LOOPS=4 go test ./internal/rdma
func TestSuiteWithParallelReadLoops(t *testing.T) {
	if os.Getenv(readLoopsEnv) != "" {
		t.Skip("already the child run")
	}
	if testing.Short() {
		t.Skip("runs the whole package again")
	}
	for _, loops := range []string{"4"} {
		cmd := exec.Command(os.Args[0], "-test.count=1", "-test.timeout=5m")
		cmd.Env = append(os.Environ(), readLoopsEnv+"="+loops)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the package's tests with %s=%s failed (%v):\n%s", readLoopsEnv, loops, err, out)
		}
		t.Logf("%s=%s: passed in %v", readLoopsEnv, loops, time.Since(start).Round(time.Millisecond))
	}
}
