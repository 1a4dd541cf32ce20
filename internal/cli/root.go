// Package cli holds the dta command tree (cobra). It is the only package that
// defines flags; every subcommand lives in its own file and turns flags into
// the Config of the library it runs.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// exitError carries a specific exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// Run executes the dta command line args and returns the process exit code:
// 0 on success, 1 on a failed operation, 2 on a usage error.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "dta:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "dta",
		Short: "Direct Telemetry Access: telemetry reports straight into collector memory",
		Long: `dta runs Direct Telemetry Access (DTA): reporters send small UDP reports,
a translator turns them into memory writes (RDMA-style) into a collector's
stores, and the collector answers queries over those stores.

Start everything on this machine with the defaults:
  dta up --demo
then look at the data:
  dta query keywrite --key 1`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(flagUsageError)
	root.AddCommand(
		newUpCmd(),
		newCollectorCmd(),
		newTranslatorCmd(),
		newReportCmd(),
		newQueryCmd(),
		newDecodeCmd(),
		newPlanCmd(),
		newSimulateCmd(),
		newBenchCmd(),
		newTeaCmd(),
		newHawkeyeCmd(),
	)
	return root
}

// usageError marks an error as a command-line mistake (exit code 2).
func usageError(format string, a ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, a...)}
}
