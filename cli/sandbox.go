package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/podpath/podpath/sandbox"
)

func sandboxCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "sandbox", Short: "Create, use and delete learner clusters"}
	var image string
	cmd.PersistentFlags().StringVar(&image, "image", "", "node image (default $PODPATH_NODE_IMAGE or "+sandbox.DefaultNodeImage+")")
	// The backend PODPATH_SANDBOX names (docker unless set), opened before
	// any sandbox command runs, so a wrong setting is an error that names it.
	var opened backend
	cmd.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		b, _, err := openBackend(image, nil)
		opened = b
		return err
	}
	manager := func() backend { return opened }

	var workers int
	var retain bool
	var publish []string
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a cluster of one control plane and N workers; returns when it is Ready",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			m := manager()
			fmt.Fprintf(out, "creating sandbox %s (1 control plane, %d workers) from %s\n", args[0], workers, m.NodeImage())
			spec := sandbox.Spec{Name: args[0], Workers: workers, Retain: retain}
			for _, p := range publish {
				pm, err := sandbox.ParsePortMapping(p)
				if err != nil {
					return err
				}
				spec.Publish = append(spec.Publish, pm)
			}
			info, err := m.Create(cmd.Context(), spec, func(e sandbox.Event) {
				fmt.Fprintln(out, formatEvent(e))
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "sandbox %s is ready: nodes %s\n", info.Name, nodeAliases(info.Nodes))
			return nil
		},
	}
	create.Flags().IntVar(&workers, "workers", 1, "number of worker nodes (node01, node02, ...)")
	create.Flags().BoolVar(&retain, "retain", false, "keep the containers of a cluster that fails to start, for debugging")
	create.Flags().StringArrayVar(&publish, "publish", nil, "HOST:NODE publishes port NODE of the control plane node on port HOST of this host, on every address (docker backend; repeatable)")

	exec := &cobra.Command{
		Use:   "exec NAME NODE -- COMMAND [ARG...]",
		Short: "Run a command in a node (controlplane, node01, ...); its output and exit code pass through",
		Args:  cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			var stdin io.Reader
			if !term.IsTerminal(int(os.Stdin.Fd())) {
				stdin = os.Stdin
			}
			code, err := manager().Exec(cmd.Context(), args[0], args[1], args[2:], stdin, cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if code != 0 {
				return exitError{code}
			}
			return nil
		},
	}

	list := &cobra.Command{
		Use:   "list",
		Short: "List sandboxes and their nodes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			infos, err := manager().List(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSTATE\tNODES")
			for _, i := range infos {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", i.Name, i.State, nodeAliases(i.Nodes))
			}
			return tw.Flush()
		},
	}

	kubeconfig := &cobra.Command{
		Use:   "kubeconfig NAME",
		Short: "Print an admin kubeconfig for the sandbox's API server",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kc, err := manager().Kubeconfig(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), kc)
			return nil
		},
	}

	del := &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete sandboxes: containers, volumes and network, or node Pods and NetworkPolicy (deleting a missing one is fine)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m := manager()
			for _, n := range args {
				start := time.Now()
				if err := m.Delete(cmd.Context(), n); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted %s in %s\n", n, time.Since(start).Round(100*time.Millisecond))
			}
			return nil
		},
	}

	hibernate := &cobra.Command{
		Use:   "hibernate NAME",
		Short: "Freeze a sandbox's nodes (docker pause): no CPU used until resumed (on Kubernetes the nodes keep running)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return manager().Hibernate(cmd.Context(), args[0])
		},
	}
	resume := &cobra.Command{
		Use:   "resume NAME",
		Short: "Unfreeze a hibernated sandbox",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return manager().Resume(cmd.Context(), args[0])
		},
	}
	cmd.AddCommand(create, exec, list, kubeconfig, del, hibernate, resume)
	return cmd
}

func formatEvent(e sandbox.Event) string {
	mark := "•"
	switch {
	case e.Failed:
		mark = "✗"
	case e.Done:
		mark = "✓"
	}
	return fmt.Sprintf("[%5.1fs] %s %s", e.Elapsed.Seconds(), mark, e.Title)
}

func nodeAliases(nodes []sandbox.Node) string {
	var s []string
	for _, n := range nodes {
		s = append(s, n.Alias)
	}
	return strings.Join(s, ",")
}
