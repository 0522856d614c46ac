package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/podpath/podpath/internal/dockercli"
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
	var agentOpts nodeimage.Options
	agent := &cobra.Command{
		Use:   "policy-agent",
		Short: "Build the NetworkPolicy agent a host cluster of the Kubernetes backend runs, as a docker-archive file",
		Long: `Builds kube-router ` + nodeimage.PolicyAgentVersion + ` (its network policy controller) from the Go module proxy, on Debian's iptables and ipset, into the image
` + nodeimage.PolicyAgentImage + ` and writes it to a docker-archive file under the cache folder
(printed last). Import it into the host cluster's lab nodes with ctr -n k8s.io images import
where the host cluster enforces no NetworkPolicy of its own (docs/KUBERNETES.md says why
learner clusters need one). docker load takes it too.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			agentOpts.Progress = cmd.ErrOrStderr()
			a, err := nodeimage.BuildPolicyAgent(cmd.Context(), agentOpts)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), a.Path)
			return nil
		},
	}
	agent.Flags().StringVar(&agentOpts.CacheDir, "cache-dir", nodeimage.DefaultCacheDir(), "folder for built binaries and images (env PODPATH_CACHE_DIR)")
	var serverOpts nodeimage.Options
	var load bool
	server := &cobra.Command{
		Use:   "server",
		Short: "Build podpath's server image (this podpath binary on Debian) as a docker-archive file",
		Long: `Builds ` + nodeimage.ServerImageRepo + `:<digest> with no registry: the Debian base, Debian's docker CLI
(the Docker backend drives the host's engine with it), PostgreSQL for trials
(/usr/local/bin/podpath-postgres) and this podpath binary as its entrypoint
(command: serve). It writes a docker-archive file under the cache folder and prints its
path; --load also loads it into the local Docker engine and tags it
` + nodeimage.ServerImageRepo + `:latest (docker-compose.yml runs that). scripts/kube-up imports the
archive into a host cluster's nodes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			serverOpts.Progress = cmd.ErrOrStderr()
			self, err := os.Executable()
			if err != nil {
				return err
			}
			a, err := nodeimage.BuildServerImage(cmd.Context(), serverOpts, self)
			if err != nil {
				return err
			}
			if load {
				if err := dockercli.Run(cmd.Context(), "load", "-i", a.Path); err != nil {
					return err
				}
				if err := dockercli.Run(cmd.Context(), "tag", a.Ref, nodeimage.ServerImageRepo+":latest"); err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "loaded %s, tagged %s:latest\n", a.Ref, nodeimage.ServerImageRepo)
			}
			fmt.Fprintln(cmd.OutOrStdout(), a.Path)
			return nil
		},
	}
	server.Flags().StringVar(&serverOpts.CacheDir, "cache-dir", nodeimage.DefaultCacheDir(), "folder for root filesystems and images (env PODPATH_CACHE_DIR)")
	server.Flags().BoolVar(&load, "load", false, "also load the image into the local Docker engine as "+nodeimage.ServerImageRepo+":latest")
	cmd.AddCommand(build, tag, agent, server)
	return cmd
}
