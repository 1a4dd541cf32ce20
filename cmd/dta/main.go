// Command dta runs and operates Direct Telemetry Access: the translator, the
// collector, reporters and queries. See `dta --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/dta-go/dta/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
