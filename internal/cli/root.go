// Package cli holds the dta command tree (cobra). It is the only package that
// defines flags; every subcommand lives in its own file and turns flags into
// the Config of the library it runs.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

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
	// Every command: a file, address or name flag given as "" is a mistake
	// (an unset shell variable, say), never a way to turn a thing off:
	// --auth-token-file "" must not leave the API open.
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		for _, name := range nonEmptyFlags {
			if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed && (fl.Value.String() == "" || fl.Value.String() == "[]") {
				return usageError("--%s: empty (leave the flag out for its default)", name)
			}
		}
		return nil
	}
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
	usageOnBadArgs(root)
	return root
}

// nonEmptyFlags are the flags no command takes as "" (root's
// PersistentPreRunE refuses them).
var nonEmptyFlags = []string{
	"config", "auth-token-file", "tls-cert", "tls-key", "token-file", "ca-file", "data-dir",
	"server", "store", "at", "to", "collector", "collectors", "listen", "http", "rdma", "rdma-local",
	"int-listen", "export-brokers", "json", "cpuprofile", "out", "in", "plot", "svg",
}

// usageOnBadArgs makes every command-line mistake an exit-2 usage error
// throughout the tree: a command that only groups subcommands refuses an
// unknown one instead of printing its help and succeeding (alone, it prints
// its help), and a positional argument a command does not take is a usage
// error, not a failure (exit 1).
func usageOnBadArgs(c *cobra.Command) {
	for _, sub := range c.Commands() {
		usageOnBadArgs(sub)
	}
	if c.HasSubCommands() && !c.Runnable() {
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			var names []string
			for _, s := range cmd.Commands() {
				if s.IsAvailableCommand() {
					names = append(names, s.Name())
				}
			}
			if len(args) == 0 {
				return cmd.Help()
			}
			return usageError("unknown command %q for %q (want %s; see --help)", args[0], cmd.CommandPath(), strings.Join(names, ", "))
		}
		return
	}
	if args := c.Args; args != nil {
		c.Args = func(cmd *cobra.Command, a []string) error {
			err := args(cmd, a)
			var ee *exitError
			if err == nil || errors.As(err, &ee) {
				return err
			}
			return usageError("%s: %v", strings.TrimPrefix(cmd.CommandPath(), "dta "), err)
		}
	}
}

// usageError marks an error as a command-line mistake (exit code 2).
func usageError(format string, a ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, a...)}
}
