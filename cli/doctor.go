package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/sandbox/hostfix"
	"github.com/podpath/podpath/sandbox/nodeimage"
)

func doctorCmd() *cobra.Command {
	var d hostfix.Doctor
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check this host for what learner clusters need, and say what to fix",
		Long: `Checks that the Docker engine answers, whether this host refuses capabilities that
kind's privileged nodes need (and whether podpath's runc wrapper is in place), the cgroup
version, inotify limits, free memory and disk, and whether the node image is built.
With --fix it raises the inotify limits and installs the runc wrapper where it is needed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d.ImageRef = sandbox.NewManager().NodeImage()
			d.DataDirs = []string{"/var/lib/docker", nodeimage.DefaultCacheDir()}
			failed := 0
			for _, f := range d.Run(cmd.Context()) {
				mark := "✓"
				switch f.Severity {
				case hostfix.Warn:
					mark = "!"
				case hostfix.Fail:
					mark = "✗"
					failed++
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %-14s %s\n", mark, f.Check, f.Message)
				if f.Fix != "" && !f.Fixed {
					fmt.Fprintf(cmd.OutOrStdout(), "  %-14s fix: %s\n", "", f.Fix)
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d problem(s) stop learner clusters on this host", failed)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&d.Fix, "fix", false, "apply the safe fixes (inotify limits, runc wrapper)")
	return cmd
}
