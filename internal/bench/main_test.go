package bench

import (
	"fmt"
	"os"
	"testing"
)

// TestMain lets this test binary serve as the responder process of
// RoCEProcessSink, which starts it again with ResponderChildEnv set.
func TestMain(m *testing.M) {
	if os.Getenv(ResponderChildEnv) != "" {
		if err := ServeResponder(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
