package cli

import "github.com/spf13/cobra"

// newDecodeCmd is filled in by the reporter work.
func newDecodeCmd() *cobra.Command {
	return &cobra.Command{Use: "decode", Short: "Decode DTA bytes (hex or pcap)"}
}
