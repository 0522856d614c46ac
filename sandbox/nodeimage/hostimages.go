package nodeimage

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// The images below are not for learner nodes: they run in a host cluster
// of the Kubernetes backend (docs/KUBERNETES.md). They are built the way
// the node image's parts are, from Debian packages and the Go module proxy,
// offline, into docker-archive files an operator imports into the host's
// nodes (scripts/kube-up and the tests use `ctr images import`; a push to
// a registry works as well).

// PolicyAgentVersion is the kube-router release whose network policy
// controller podpath builds (`--run-firewall` alone: no routing, no service
// proxy). It enforces NetworkPolicy with iptables and ipsets beside any CNI;
// flannel, which podpath's own clusters run, enforces none.
// kube-network-policies, the smaller agent, needs the kernel's NFQUEUE,
// which this project's machines lack (docs/KUBERNETES.md).
const PolicyAgentVersion = "v2.1.0"

// PolicyAgentImage names the agent's image.
const PolicyAgentImage = "podpath/policy-agent:kube-router-" + PolicyAgentVersion

// rootfsPolicy is the Debian variant under the agent: kube-router runs
// iptables-save/-restore and ipset.
const rootfsPolicy = "policy"

// Archive is an image written to a docker-archive file.
type Archive struct {
	Ref  string // the image's name inside the archive
	Path string // the archive
	// Cached says the archive was already there from an earlier build.
	Cached bool
}

// BuildPolicyAgent builds the NetworkPolicy agent's image archive, or
// finds it in the cache: the Debian base, iptables and ipset, and
// kube-router built from the Go module proxy.
func BuildPolicyAgent(ctx context.Context, opts Options) (Archive, error) {
	if opts.CacheDir == "" {
		opts.CacheDir = DefaultCacheDir()
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if os.Geteuid() != 0 {
		return Archive{}, fmt.Errorf("building the policy agent's image needs root (debootstrap and chroot for its Debian packages): run it as root")
	}
	b := &builder{cacheDir: opts.CacheDir, out: opts.Progress}
	bin, err := b.buildGo(ctx, goBinary{
		Name:    "kube-router",
		Require: map[string]string{"github.com/cloudnativelabs/kube-router/v2": PolicyAgentVersion},
		Package: "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router",
		LDFlags: "-s -w",
	})
	if err != nil {
		return Archive{}, err
	}
	in := DefaultInputs(opts.KubernetesVersion)
	in.Packages = map[string][]string{rootfsPolicy: {"iptables", "ipset"}}
	base, err := b.debianBase(ctx, in)
	if err != nil {
		return Archive{}, err
	}
	variant, err := b.debianVariant(ctx, in, base, rootfsPolicy)
	if err != nil {
		return Archive{}, err
	}
	dir := filepath.Join(b.cacheDir, "images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Archive{}, err
	}
	// The binary's and the root filesystems' cache names carry their inputs.
	key := shortHash(filepath.Base(bin), filepath.Base(base), filepath.Base(variant), fmt.Sprint(builderRevision))
	a := Archive{Ref: PolicyAgentImage, Path: filepath.Join(dir, "policy-agent-"+key+".tar")}
	if _, err := os.Stat(a.Path); err == nil {
		a.Cached = true
		b.detail("%s: cached (%s)", a.Ref, a.Path)
		return a, nil
	}
	layers := []string{filepath.Join(dir, "policy-agent-"+key+".base.tar"), filepath.Join(dir, "policy-agent-"+key+".top.tar")}
	defer func() {
		for _, l := range layers {
			os.Remove(l)
		}
	}()
	if err := writeTar(layers[0], func(t *tarWriter) error { return t.addTree(base, nil) }); err != nil {
		return Archive{}, fmt.Errorf("policy agent base layer: %w", err)
	}
	if err := writeTar(layers[1], func(t *tarWriter) error {
		if err := t.addDiff(base, variant); err != nil {
			return err
		}
		if err := addIptablesWrapper(t); err != nil {
			return err
		}
		return addBinary(t, bin, "usr/local/bin/kube-router")
	}); err != nil {
		return Archive{}, fmt.Errorf("policy agent layer: %w", err)
	}
	spec := imageSpec{Ref: a.Ref, Layers: layers, Entrypoint: []string{"/usr/local/bin/kube-router"}}
	if err := writeImageArchive(ctx, a.Path, []imageSpec{spec}); err != nil {
		return Archive{}, fmt.Errorf("policy agent image: %w", err)
	}
	b.detail("%s: written to %s", a.Ref, a.Path)
	return a, nil
}

//go:embed hostfiles
var hostFiles embed.FS

// ServerImageRepo is the server image's name; its tag is the digest of the
// podpath binary and the Debian packages under it.
const ServerImageRepo = "podpath/server"

// rootfsServer is the Debian variant under the server: the docker CLI
// (the Docker backend drives the host's engine through it, as kind does)
// and PostgreSQL (for trials only: podpath-postgres runs it).
const rootfsServer = "server"

// BuildServerImage builds podpath's server image around the podpath
// binary at bin (a static build: CGO_ENABLED=0), or finds it in the cache.
// Entrypoint podpath, command serve; /usr/local/bin/podpath-postgres runs a
// trial Postgres from the same image.
func BuildServerImage(ctx context.Context, opts Options, bin string) (Archive, error) {
	if opts.CacheDir == "" {
		opts.CacheDir = DefaultCacheDir()
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if os.Geteuid() != 0 {
		return Archive{}, fmt.Errorf("building the server image needs root (debootstrap and chroot for its Debian packages): run it as root")
	}
	b := &builder{cacheDir: opts.CacheDir, out: opts.Progress}
	sum, err := fileDigest(bin)
	if err != nil {
		return Archive{}, fmt.Errorf("the podpath binary: %w", err)
	}
	script, err := hostFiles.ReadFile("hostfiles/podpath-postgres")
	if err != nil {
		return Archive{}, err
	}
	in := DefaultInputs(opts.KubernetesVersion)
	in.Packages = map[string][]string{rootfsServer: {"docker.io", "postgresql", "ca-certificates", "tzdata"}}
	base, err := b.debianBase(ctx, in)
	if err != nil {
		return Archive{}, err
	}
	variant, err := b.debianVariant(ctx, in, base, rootfsServer)
	if err != nil {
		return Archive{}, err
	}
	key := shortHash(sum, string(script), filepath.Base(base), filepath.Base(variant), fmt.Sprint(builderRevision))
	dir := filepath.Join(b.cacheDir, "images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Archive{}, err
	}
	a := Archive{Ref: ServerImageRepo + ":" + key, Path: filepath.Join(dir, "server-"+key+".tar")}
	if _, err := os.Stat(a.Path); err == nil {
		a.Cached = true
		b.detail("%s: cached (%s)", a.Ref, a.Path)
		return a, nil
	}
	layers := []string{filepath.Join(dir, "server-"+key+".base.tar"), filepath.Join(dir, "server-"+key+".pkgs.tar"), filepath.Join(dir, "server-"+key+".bin.tar")}
	defer func() {
		for _, l := range layers {
			os.Remove(l)
		}
	}()
	writers := []func(t *tarWriter) error{
		func(t *tarWriter) error { return t.addTree(base, nil) },
		func(t *tarWriter) error { return t.addDiff(base, variant) },
		func(t *tarWriter) error {
			for _, d := range []string{"var/lib/podpath", "var/lib/postgresql"} {
				if err := t.addDir(d); err != nil {
					return err
				}
			}
			if err := t.addFile("usr/local/bin/podpath-postgres", 0o755, script); err != nil {
				return err
			}
			return addBinary(t, bin, "usr/local/bin/podpath")
		},
	}
	for i, w := range writers {
		b.detail("%s: layer %d of %d", a.Ref, i+1, len(writers))
		if err := writeTar(layers[i], w); err != nil {
			return Archive{}, fmt.Errorf("server image layer: %w", err)
		}
	}
	spec := imageSpec{
		Ref: a.Ref, Layers: layers,
		Entrypoint: []string{"/usr/local/bin/podpath"}, Cmd: []string{"serve"},
		Env: []string{"PODPATH_LISTEN=:8080", "PODPATH_STATE_DIR=/var/lib/podpath"},
	}
	if err := writeImageArchive(ctx, a.Path, []imageSpec{spec}); err != nil {
		return Archive{}, fmt.Errorf("server image: %w", err)
	}
	b.detail("%s: written to %s", a.Ref, a.Path)
	return a, nil
}

func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
