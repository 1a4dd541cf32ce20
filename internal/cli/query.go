package cli

import "github.com/spf13/cobra"

// newQueryCmd is filled in by the query API work.
func newQueryCmd() *cobra.Command {
	return &cobra.Command{Use: "query", Short: "Query a collector's stores"}
}
