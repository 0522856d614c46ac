package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/podpath/podpath/sandbox/nodeimage"
)

func nodeimageCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "nodeimage", Short: "Build the kind node image learner clusters run on"}
	var opts nodeimage.Options
	build := &cobra.Command{
		Use:   "build",
		Short: "Build podpath/node:<kubernetes version>-<input hash> offline and tag it as the default node image",
		Long: `Builds a kind-compatible node image without any container registry: a Debian root
filesystem from Debian packages; Kubernetes, etcd, CoreDNS, crictl and flannel built from
the Go module proxy; and every image a cluster or lab runs preloaded into the node's
containerd. A second build with the same inputs finds the image and finishes in seconds.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Progress = cmd.OutOrStdout()
			res, err := nodeimage.Build(cmd.Context(), opts)
			if err != nil {
				return err
			}
			if res.Cached {
				fmt.Fprintf(cmd.OutOrStdout(), "cached: %s (checked in %s)\n", res.Image, res.Duration.Round(1e6))
			}
			return nil
		},
	}
	build.Flags().StringVar(&opts.KubernetesVersion, "kubernetes-version", nodeimage.DefaultKubernetesVersion, "Kubernetes release to build (k8s.io/kubernetes module version)")
	build.Flags().StringVar(&opts.CacheDir, "cache-dir", nodeimage.DefaultCacheDir(), "folder for built binaries and root filesystems (env PODPATH_CACHE_DIR)")
	build.Flags().BoolVar(&opts.Force, "force", false, "rebuild the image even if one with the same inputs exists")
	build.Flags().BoolVar(&opts.NoDefaultTag, "no-default-tag", false, "do not move "+nodeimage.DefaultImage+" to this build")
	tag := &cobra.Command{
		Use:   "tag",
		Short: "Print the image tag a build with the current inputs produces",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), nodeimage.DefaultInputs(opts.KubernetesVersion).Tag())
			return nil
		},
	}
	tag.Flags().StringVar(&opts.KubernetesVersion, "kubernetes-version", nodeimage.DefaultKubernetesVersion, "Kubernetes release")
	cmd.AddCommand(build, tag)
	return cmd
}
