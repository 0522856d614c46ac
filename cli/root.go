// Package cli wires podpath's subcommands.
package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Execute runs the podpath command line and returns the process exit code.
func Execute() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := &cobra.Command{
		Use:           "podpath",
		Short:         "podpath: hands-on Kubernetes labs on real kind clusters",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(serveCmd(), migrateCmd(), userCmd(), teamCmd(), nodeimageCmd(), sandboxCmd(), doctorCmd(), labsCmd(), benchCmd(), mirrorCmd())
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "podpath:", err)
		var ee exitError
		if asExit(err, &ee) {
			return ee.code
		}
		return 1
	}
	return 0
}

// exitError carries an exit code through cobra (sandbox exec passes the
// remote command's code through).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func asExit(err error, target *exitError) bool {
	if e, ok := err.(exitError); ok {
		*target = e
		return true
	}
	return false
}
