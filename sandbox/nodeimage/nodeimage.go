// Package nodeimage builds a kind-compatible node image offline: Debian
// packages for the root filesystem, Kubernetes, etcd, CoreDNS, crictl and
// flannel built from the Go module proxy, and every image a cluster or a lab
// runs preloaded into the node's containerd. Nothing is pulled from a
// container registry. Builds are cached by a hash of their inputs.
//
// The build is a pipeline of named stages, one file each: binaries
// (components.go, kubernetes.go), root filesystems (rootfs.go), image layers
// and archive (images.go, layers.go), the node (assemble.go) and the preload
// into containerd with the final commit (preload.go).
package nodeimage

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/podpath/podpath/internal/dockercli"
)

// Options configure a build.
type Options struct {
	// KubernetesVersion to build; DefaultKubernetesVersion when empty.
	KubernetesVersion string
	// CacheDir keeps built binaries and root filesystems between builds.
	CacheDir string
	// Progress receives a line per stage and detail; nil discards them.
	Progress io.Writer
	// Force rebuilds the image even if one with the same inputs exists
	// (binaries and root filesystems still come from the cache).
	Force bool
	// NoDefaultTag leaves DefaultImage where it is.
	NoDefaultTag bool
}

// Result describes a finished build.
type Result struct {
	Image    string
	Cached   bool
	Duration time.Duration
	Inputs   Inputs
}

// DefaultCacheDir is where builds keep their cache unless told otherwise.
func DefaultCacheDir() string {
	if d := os.Getenv("PODPATH_CACHE_DIR"); d != "" {
		return d
	}
	return "/var/cache/podpath"
}

type builder struct {
	cacheDir string
	out      io.Writer
	mu       sync.Mutex
	goBin    string
	goVer    string
}

const totalStages = 7

// Build makes the node image for opts, or finds it already built.
func Build(ctx context.Context, opts Options) (Result, error) {
	start := time.Now()
	in := DefaultInputs(opts.KubernetesVersion)
	if opts.CacheDir == "" {
		opts.CacheDir = DefaultCacheDir()
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	b := &builder{cacheDir: opts.CacheDir, out: opts.Progress}
	res := Result{Image: in.Tag(), Inputs: in}

	if err := dockercli.Ping(ctx); err != nil {
		return res, err
	}
	if !opts.Force {
		if ok, err := dockercli.ImageExists(ctx, res.Image); err != nil {
			return res, err
		} else if ok {
			if err := b.tagDefault(ctx, res.Image, opts); err != nil {
				return res, err
			}
			res.Cached, res.Duration = true, time.Since(start)
			b.printf("%s is already built (inputs %s); nothing to do\n", res.Image, in.Hash())
			return res, nil
		}
	}
	if os.Geteuid() != 0 {
		return res, fmt.Errorf("building a node image needs root (debootstrap, chroot and mounts): run it as root")
	}
	if err := os.MkdirAll(b.cacheDir, 0o755); err != nil {
		return res, fmt.Errorf("cache folder: %w", err)
	}
	unlock, err := lockFile(filepath.Join(b.cacheDir, "build.lock"))
	if err != nil {
		return res, err
	}
	defer unlock()
	if !opts.Force {
		// Another build may have made it while this one waited for the lock.
		if ok, _ := dockercli.ImageExists(ctx, res.Image); ok {
			res.Cached, res.Duration = true, time.Since(start)
			return res, b.tagDefault(ctx, res.Image, opts)
		}
	}

	b.printf("building %s (Kubernetes %s, inputs %s)\n", res.Image, in.KubernetesVersion, in.Hash())
	work := filepath.Join(b.cacheDir, "work", "image-"+in.Hash())
	if err := removeTree(work); err != nil {
		return res, err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return res, err
	}

	var (
		bins     binaries
		cp       controlPlaneImages
		base     string
		variants = map[string]string{}
		layers   layerFiles
		specs    []imageSpec
	)
	archive := filepath.Join(work, "images.tar")
	nodeRoot := filepath.Join(work, "rootfs")
	rootImage := "podpath/node-build:" + in.Hash() + "-rootfs"
	committed := "podpath/node-build:" + in.Hash() + "-preloaded"
	defer func() {
		bg := context.WithoutCancel(ctx)
		_ = dockercli.Run(bg, "rmi", rootImage, committed)
	}()

	stages := []struct {
		name string
		run  func() error
	}{
		{"Kubernetes, etcd, CoreDNS, crictl, flannel and pause from source", func() (err error) {
			bins, cp, err = b.buildBinaries(ctx, in)
			return err
		}},
		{"Debian root filesystems", func() (err error) {
			if base, err = b.debianBase(ctx, in); err != nil {
				return err
			}
			for _, name := range []string{rootfsNode, rootfsNet, rootfsNginx, rootfsTools} {
				if variants[name], err = b.debianVariant(ctx, in, base, name); err != nil {
					return err
				}
			}
			return checkNginxVersion(variants[rootfsNginx])
		}},
		{"control-plane and workload images", func() (err error) {
			if layers, err = b.writeLayers(ctx, work, base, variants, bins); err != nil {
				return err
			}
			specs = imageSpecs(layers, cp, in)
			for _, s := range specs {
				b.detail("%s", s.Ref)
			}
			return writeImageArchive(ctx, archive, specs)
		}},
		{"node root filesystem", func() error {
			if err := copyTree(ctx, variants[rootfsNode], nodeRoot); err != nil {
				return err
			}
			return b.assembleRootfs(ctx, nodeRoot, in, bins, cp)
		}},
		{"import into Docker", func() error {
			return b.importRootfs(ctx, nodeRoot, rootImage)
		}},
		{"preload images into the node's containerd", func() error {
			return b.preload(ctx, rootImage, archive, committed, imageRefs(specs))
		}},
		{"tag", func() error {
			labels := map[string]string{
				"podpath.kubernetes-version": in.KubernetesVersion,
				"podpath.inputs":             in.Hash(),
			}
			if err := b.finalize(ctx, committed, res.Image, labels); err != nil {
				return err
			}
			return b.tagDefault(ctx, res.Image, opts)
		}},
	}
	for i, s := range stages {
		t := time.Now()
		b.printf("[%d/%d] %s\n", i+1, totalStages, s.name)
		if err := s.run(); err != nil {
			return res, fmt.Errorf("node image stage %q: %w", s.name, err)
		}
		b.printf("[%d/%d] %s: done in %s\n", i+1, totalStages, s.name, since(t))
	}
	if err := removeTree(work); err != nil {
		b.detail("could not remove %s: %v", work, err)
	}
	b.pruneOld(ctx, res.Image)
	res.Duration = time.Since(start)
	b.printf("built %s in %s\n", res.Image, res.Duration.Round(time.Second))
	return res, nil
}

// pruneOld removes node images of earlier inputs that no container uses;
// each is most of a gigabyte.
func (b *builder) pruneOld(ctx context.Context, keep string) {
	out, err := dockercli.Output(ctx, "image", "ls", Repository, "--format", "{{.Repository}}:{{.Tag}}")
	if err != nil {
		return
	}
	for _, ref := range strings.Fields(out) {
		if ref == keep || ref == DefaultImage || strings.HasSuffix(ref, ":<none>") {
			continue
		}
		if err := dockercli.Run(ctx, "rmi", ref); err == nil {
			b.detail("removed the older node image %s", ref)
		}
	}
}

func (b *builder) tagDefault(ctx context.Context, image string, opts Options) error {
	if opts.NoDefaultTag {
		return nil
	}
	if err := dockercli.Run(ctx, "tag", image, DefaultImage); err != nil {
		return err
	}
	b.printf("tagged %s as %s\n", image, DefaultImage)
	return nil
}

func (b *builder) printf(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprintf(b.out, format, args...)
}

func (b *builder) detail(format string, args ...any) {
	b.printf("      "+format+"\n", args...)
}

// heartbeat prints msg() every 15 s until the returned stop is called, so a
// long compile is visibly alive.
func (b *builder) heartbeat(msg func() string) (stop func()) {
	done := make(chan struct{})
	var once sync.Once
	go func() {
		t := time.NewTicker(15 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				b.detail("%s", msg())
			}
		}
	}()
	return func() { once.Do(func() { close(done) }) }
}

// lockFile takes an exclusive lock so two builds never share a cache.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		fmt.Fprintf(os.Stderr, "another image build holds %s; waiting for it\n", path)
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, err
		}
	}
	return func() { f.Close() }, nil
}
