package nodeimage

import (
	"archive/tar"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Images for a registry mirror (docs/LABS.md "Images without internet"):
// a site with no internet points the nodes' containerd at a registry of
// its own (PODPATH_REGISTRY_MIRRORS) and fills it with `podpath mirror
// push`. podpath builds what scenarios pull most, offline, from Debian
// packages, under the names and tags they ask for: Docker Hub's nginx and
// busybox. The content is Debian's (nginx 1.22, busybox 1.35) whatever
// the tag says; a scenario that needs a release's own behaviour needs the
// real image in the mirror.

// RegistryVersion is the CNCF Distribution registry release `podpath
// mirror registry` builds from the Go module proxy.
const RegistryVersion = "v3.0.0"

// MirrorImage is an image archive and the names it is pushed under
// (repository:tag, as Docker Hub names them: library/nginx:1.27).
type MirrorImage struct {
	Archive
	Tags []string
}

// Mirror tags: what scenarios and the Kubernetes docs pull most.
var (
	mirrorNginxTags   = []string{"latest", "stable", "alpine", "1", "1.14.2", "1.21", "1.22", "1.23", "1.24", "1.25", "1.26", "1.27", "1.28", "1.29"}
	mirrorBusyboxTags = []string{"latest", "stable", "1", "1.28", "1.34", "1.35", "1.36", "1.37"}
)

// BuildMirrorImages builds (or finds in the cache) the mirror's images.
func BuildMirrorImages(ctx context.Context, opts Options) ([]MirrorImage, error) {
	b, unlock, err := newHostBuilder(&opts, "the mirror's images")
	if err != nil {
		return nil, err
	}
	defer unlock()
	base, nginx, err := b.hostRootfs(ctx, opts, rootfsNginx, "nginx-light")
	if err != nil {
		return nil, err
	}
	if err := checkNginxVersion(nginx); err != nil {
		return nil, err
	}
	key := shortHash(filepath.Base(base), filepath.Base(nginx), fmt.Sprint(builderRevision), "mirror nginx")
	ng, err := b.hostImage(ctx, "mirror-nginx-"+key, imageSpec{Ref: "docker.io/library/nginx:latest", Cmd: []string{"nginx", "-g", "daemon off;"}, StopSignal: "SIGQUIT"},
		func(t *tarWriter) error { return t.addTree(base, nil) },
		func(t *tarWriter) error {
			if err := t.addDiff(base, nginx, nil); err != nil {
				return err
			}
			if err := t.addSymlink("var/log/nginx/access.log", "/dev/stdout"); err != nil {
				return err
			}
			return t.addSymlink("var/log/nginx/error.log", "/dev/stderr")
		})
	if err != nil {
		return nil, err
	}
	_, bb, err := b.hostRootfs(ctx, opts, "busybox", "busybox-static")
	if err != nil {
		return nil, err
	}
	bin := ""
	for _, p := range []string{"usr/bin/busybox", "bin/busybox"} {
		if fi, err := os.Lstat(filepath.Join(bb, p)); err == nil && fi.Mode().IsRegular() {
			bin = filepath.Join(bb, p)
			break
		}
	}
	if bin == "" {
		return nil, fmt.Errorf("busybox-static installed no busybox in %s", bb)
	}
	out, err := exec.CommandContext(ctx, bin, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("list busybox's commands: %w", err)
	}
	applets := strings.Fields(string(out))
	bkey := shortHash(filepath.Base(bb), fmt.Sprint(builderRevision), "mirror busybox")
	bx, err := b.hostImage(ctx, "mirror-busybox-"+bkey, imageSpec{Ref: "docker.io/library/busybox:latest", Cmd: []string{"sh"}},
		func(t *tarWriter) error { return busyboxLayer(t, bin, applets) })
	if err != nil {
		return nil, err
	}
	return []MirrorImage{
		{Archive: ng, Tags: withRepo("library/nginx", mirrorNginxTags)},
		{Archive: bx, Tags: withRepo("library/busybox", mirrorBusyboxTags)},
	}, nil
}

func withRepo(repo string, tags []string) []string {
	out := make([]string, len(tags))
	for i, t := range tags {
		out[i] = repo + ":" + t
	}
	return out
}

// busyboxLayer is the busybox image's one layer, as Docker Hub's is made:
// the static binary at /bin/busybox, every command a link to it, and the
// files a shell expects.
func busyboxLayer(t *tarWriter, bin string, applets []string) error {
	for _, d := range []string{"bin", "sbin", "usr", "usr/bin", "usr/sbin", "etc", "root", "var", "var/www", "home"} {
		if err := t.addDir(d); err != nil {
			return err
		}
	}
	if err := t.tw.WriteHeader(&tar.Header{Name: "tmp/", Mode: 0o1777, Typeflag: tar.TypeDir, Format: tar.FormatPAX}); err != nil {
		return err
	}
	if err := addBinary(t, bin, "bin/busybox"); err != nil {
		return err
	}
	seen := map[string]bool{"bin/busybox": true}
	for _, a := range applets {
		a = strings.TrimPrefix(a, "/")
		if seen[a] || strings.Contains(a, "..") {
			continue
		}
		seen[a] = true
		if err := t.addSymlink(a, "/bin/busybox"); err != nil {
			return err
		}
	}
	files := map[string]string{
		"etc/passwd":   "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n",
		"etc/group":    "root:x:0:\nnogroup:x:65534:\n",
		"etc/hostname": "busybox\n",
	}
	for _, name := range []string{"etc/group", "etc/hostname", "etc/passwd"} {
		if err := t.addFile(name, 0o644, []byte(files[name])); err != nil {
			return err
		}
	}
	return nil
}

// BuildRegistry builds (or finds in the cache) the CNCF Distribution
// registry from the Go module proxy and returns the binary's path.
func BuildRegistry(ctx context.Context, opts Options) (string, error) {
	b, unlock, err := newHostBuilder(&opts, "the registry")
	if err != nil {
		return "", err
	}
	defer unlock()
	return b.buildGo(ctx, goBinary{
		Name:    "registry",
		Require: map[string]string{"github.com/distribution/distribution/v3": RegistryVersion},
		Package: "github.com/distribution/distribution/v3/cmd/registry",
		LDFlags: "-s -w",
	})
}
