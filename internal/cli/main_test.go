package cli

import (
	"fmt"
	"os"
	"testing"

	"github.com/dta-go/dta/internal/bench"
)

// TestMain lets this test binary serve as the responder process that
// `dta bench --sink roce` starts from its own executable (os.Executable is
// the test binary here): the process is started with
// bench.ResponderChildEnv set.
func TestMain(m *testing.M) {
	if os.Getenv(bench.ResponderChildEnv) != "" {
		if err := bench.ServeResponder(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
