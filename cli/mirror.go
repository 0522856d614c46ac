package cli

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/spf13/cobra"

	"github.com/podpath/podpath/sandbox/nodeimage"
)

func mirrorCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mirror",
		Short: "Images for sites without internet: a registry mirror's content, and a registry to hold it",
		Long: `Learner nodes pull through the registry mirrors PODPATH_REGISTRY_MIRRORS names
(docs/LABS.md "Images without internet"). These commands fill such a mirror with what
scenarios pull most, built offline from Debian packages.`,
	}
	var opts nodeimage.Options
	var prefix string
	var insecure bool
	push := &cobra.Command{
		Use:   "push REGISTRY",
		Short: "Build nginx and busybox from Debian packages and push them to REGISTRY under Docker Hub's names",
		Long: `Builds (or finds in the cache) nginx and busybox images from Debian packages and pushes
them to REGISTRY (host:port) as library/nginx and library/busybox, under the tags
scenarios ask for (latest, 1.27, 1.28, ...; the content is Debian's nginx 1.22 and
busybox 1.35 whatever the tag). --prefix docker.io pushes docker.io/library/nginx instead,
for a mirror URL with a path (http://host:port/docker.io). Needs root (debootstrap).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg := strings.TrimSuffix(args[0], "/")
			if strings.Contains(reg, "://") || strings.Contains(reg, "/") {
				return fmt.Errorf("REGISTRY %q: give host:port (127.0.0.1:5000), not a URL", args[0])
			}
			opts.Progress = cmd.ErrOrStderr()
			images, err := nodeimage.BuildMirrorImages(cmd.Context(), opts)
			if err != nil {
				return err
			}
			repoBase := reg
			if p := strings.Trim(prefix, "/"); p != "" {
				repoBase += "/" + p
			}
			var nameOpts []name.Option
			if insecure {
				nameOpts = append(nameOpts, name.Insecure)
			}
			for _, im := range images {
				src, err := name.NewTag(im.Ref)
				if err != nil {
					return err
				}
				img, err := tarball.ImageFromPath(im.Path, &src)
				if err != nil {
					return fmt.Errorf("read %s: %w", im.Path, err)
				}
				for i, tag := range im.Tags {
					dst, err := name.NewTag(repoBase+"/"+tag, nameOpts...)
					if err != nil {
						return err
					}
					if i == 0 {
						err = remote.Write(dst, img, remote.WithContext(cmd.Context()))
					} else {
						err = remote.Tag(dst, img, remote.WithContext(cmd.Context()))
					}
					if err != nil {
						return fmt.Errorf("push %s: %w", dst, err)
					}
					fmt.Fprintln(cmd.OutOrStdout(), dst.String())
				}
			}
			return nil
		},
	}
	push.Flags().StringVar(&opts.CacheDir, "cache-dir", nodeimage.DefaultCacheDir(), "folder for built root filesystems and images (env PODPATH_CACHE_DIR)")
	push.Flags().StringVar(&prefix, "prefix", "", "a path before the repositories (docker.io for a mirror URL http://host:port/docker.io)")
	push.Flags().BoolVar(&insecure, "insecure", true, "speak plain HTTP to the registry (a registry on 127.0.0.1 or a site's own network)")
	var regOpts nodeimage.Options
	registry := &cobra.Command{
		Use:   "registry",
		Short: "Build the CNCF Distribution registry (" + nodeimage.RegistryVersion + ") from the Go module proxy and print its path",
		Long: `Builds (or finds in the cache) the registry binary of github.com/distribution/distribution/v3
and prints its path. Run it with its settings in the environment, for example
REGISTRY_HTTP_ADDR=0.0.0.0:5001 REGISTRY_STORAGE_FILESYSTEM_ROOTDIRECTORY=/var/lib/podpath-mirror
with a configuration file (scripts/test writes one).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			regOpts.Progress = cmd.ErrOrStderr()
			path, err := nodeimage.BuildRegistry(cmd.Context(), regOpts)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), path)
			return nil
		},
	}
	registry.Flags().StringVar(&regOpts.CacheDir, "cache-dir", nodeimage.DefaultCacheDir(), "folder for built binaries (env PODPATH_CACHE_DIR)")
	cmd.AddCommand(push, registry)
	return cmd
}
