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
	b, unlock, err := newHostBuilder(&opts, "the policy agent's image")
	if err != nil {
		return Archive{}, err
	}
	defer unlock()
	bin, err := b.buildGo(ctx, goBinary{
		Name:    "kube-router",
		Require: map[string]string{"github.com/cloudnativelabs/kube-router/v2": PolicyAgentVersion},
		Package: "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router",
		LDFlags: "-s -w",
	})
	if err != nil {
		return Archive{}, err
	}
	base, variant, err := b.hostRootfs(ctx, opts, rootfsPolicy, "iptables", "ipset")
	if err != nil {
		return Archive{}, err
	}
	// The binary's and the root filesystems' cache names carry their inputs;
	// "wrapper once": the layer names the iptables commands once (the
	// wrapper's), which docker load requires; the archives before had them
	// twice.
	key := shortHash(filepath.Base(bin), filepath.Base(base), filepath.Base(variant), fmt.Sprint(builderRevision), "wrapper once")
	spec := imageSpec{Ref: PolicyAgentImage, Entrypoint: []string{"/usr/local/bin/kube-router"}}
	return b.hostImage(ctx, "policy-agent-"+key, spec,
		func(t *tarWriter) error { return t.addTree(base, nil) },
		func(t *tarWriter) error { return policyAgentLayer(t, base, variant, bin) })
}

// policyAgentLayer writes the agent's layer over the Debian base: iptables
// and ipset, the iptables wrapper in place of Debian's iptables commands
// (left out of the diff, so each path is written once), and kube-router.
func policyAgentLayer(t *tarWriter, base, variant, bin string) error {
	wrapped := map[string]bool{}
	for _, c := range iptablesCommands {
		wrapped["usr/sbin/"+c] = true
	}
	if err := t.addDiff(base, variant, func(rel string) bool { return wrapped[rel] }); err != nil {
		return err
	}
	if err := addIptablesWrapper(t); err != nil {
		return err
	}
	return addBinary(t, bin, "usr/local/bin/kube-router")
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
	b, unlock, err := newHostBuilder(&opts, "the server image")
	if err != nil {
		return Archive{}, err
	}
	defer unlock()
	sum, err := fileDigest(bin)
	if err != nil {
		return Archive{}, fmt.Errorf("the podpath binary: %w", err)
	}
	script, err := hostFiles.ReadFile("hostfiles/podpath-postgres")
	if err != nil {
		return Archive{}, err
	}
	base, variant, err := b.hostRootfs(ctx, opts, rootfsServer, "docker.io", "postgresql", "ca-certificates", "tzdata")
	if err != nil {
		return Archive{}, err
	}
	key := shortHash(sum, string(script), filepath.Base(base), filepath.Base(variant), fmt.Sprint(builderRevision))
	spec := imageSpec{
		Ref:        ServerImageRepo + ":" + key,
		Entrypoint: []string{"/usr/local/bin/podpath"}, Cmd: []string{"serve"},
		Env: []string{"PODPATH_LISTEN=:8080", "PODPATH_STATE_DIR=/var/lib/podpath"},
	}
	return b.hostImage(ctx, "server-"+key, spec,
		func(t *tarWriter) error { return t.addTree(base, nil) },
		func(t *tarWriter) error { return t.addDiff(base, variant, nil) },
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
		})
}

// newHostBuilder fills in opts' defaults and makes a builder for what,
// holding the cache's build lock until unlock: two builds at once (two
// scripts, or a script and a test) would share root filesystems and
// half-written files (tried: one's dpkg ran in a root filesystem the other
// was making, and one's rename found its file gone).
func newHostBuilder(opts *Options, what string) (b *builder, unlock func(), err error) {
	if opts.CacheDir == "" {
		opts.CacheDir = DefaultCacheDir()
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if os.Geteuid() != 0 {
		return nil, nil, fmt.Errorf("building %s needs root (debootstrap and chroot for its Debian packages): run it as root", what)
	}
	if err := os.MkdirAll(opts.CacheDir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("cache folder: %w", err)
	}
	unlock, err = lockFile(filepath.Join(opts.CacheDir, "build.lock"))
	if err != nil {
		return nil, nil, err
	}
	return &builder{cacheDir: opts.CacheDir, out: opts.Progress}, unlock, nil
}

// hostRootfs makes (or finds) the Debian base and the variant name with
// pkgs installed on it.
func (b *builder) hostRootfs(ctx context.Context, opts Options, name string, pkgs ...string) (base, variant string, err error) {
	in := DefaultInputs(opts.KubernetesVersion)
	in.Packages = map[string][]string{name: pkgs}
	if base, err = b.debianBase(ctx, in); err != nil {
		return "", "", err
	}
	variant, err = b.debianVariant(ctx, in, base, name)
	return base, variant, err
}

// hostImage writes spec, one layer per writer (bottom first), to
// images/<file>.tar in the cache, or finds it there.
func (b *builder) hostImage(ctx context.Context, file string, spec imageSpec, layers ...func(t *tarWriter) error) (Archive, error) {
	dir := filepath.Join(b.cacheDir, "images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Archive{}, err
	}
	a := Archive{Ref: spec.Ref, Path: filepath.Join(dir, file+".tar")}
	if _, err := os.Stat(a.Path); err == nil {
		a.Cached = true
		b.detail("%s: cached (%s)", a.Ref, a.Path)
		return a, nil
	}
	defer func() {
		for _, l := range spec.Layers {
			os.Remove(l)
		}
	}()
	for i, w := range layers {
		b.detail("%s: layer %d of %d", a.Ref, i+1, len(layers))
		path := filepath.Join(dir, fmt.Sprintf("%s.layer%d.tar", file, i))
		spec.Layers = append(spec.Layers, path)
		if err := writeTar(path, w); err != nil {
			return Archive{}, fmt.Errorf("%s layer %d: %w", a.Ref, i+1, err)
		}
	}
	if err := writeImageArchive(ctx, a.Path, []imageSpec{spec}); err != nil {
		return Archive{}, fmt.Errorf("%s: %w", a.Ref, err)
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
