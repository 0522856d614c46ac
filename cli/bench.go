package cli

import "github.com/spf13/cobra"

func benchCmd() *cobra.Command {
	return &cobra.Command{Use: "bench", Short: "Measure podpath on this machine"}
}
