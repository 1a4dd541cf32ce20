package cli

import "github.com/spf13/cobra"

// newReportCmd is filled in by the reporter work.
func newReportCmd() *cobra.Command {
	return &cobra.Command{Use: "report", Short: "Send DTA reports"}
}
