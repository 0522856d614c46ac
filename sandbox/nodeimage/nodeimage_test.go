package nodeimage

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/podpath/podpath/internal/dockercli"
	"github.com/podpath/podpath/internal/testenv"
)

func TestKindVersionMatchesGoMod(t *testing.T) {
	raw, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`sigs\.k8s\.io/kind (v\S+)`).FindSubmatch(raw)
	if m == nil || string(m[1]) != KindVersion {
		t.Errorf("go.mod has kind %s, nodeimage.KindVersion is %s: keep them equal", m, KindVersion)
	}
}

func TestInputsHash(t *testing.T) {
	a, b := DefaultInputs(""), DefaultInputs(DefaultKubernetesVersion)
	if a.Hash() != b.Hash() || a.Tag() != b.Tag() {
		t.Errorf("equal inputs hash differently: %s %s", a.Hash(), b.Hash())
	}
	c := DefaultInputs("v1.34.3")
	if c.Hash() == a.Hash() || !strings.HasPrefix(c.Tag(), Repository+":v1.34.3-") {
		t.Errorf("another Kubernetes version: %s", c.Tag())
	}
	d := DefaultInputs("")
	d.Packages = map[string][]string{rootfsNode: {"extra"}}
	if d.Hash() == a.Hash() {
		t.Error("other packages, same hash")
	}
}

func TestEtcdModuleVersion(t *testing.T) {
	if v := etcdModuleVersion("3.6.5-0"); v != "v3.6.5" {
		t.Errorf("got %s", v)
	}
}

func TestGoModHasStagingReplaces(t *testing.T) {
	g := goBinary{Name: "k", Require: map[string]string{"k8s.io/kubernetes": "v1.34.4"}, Replace: map[string]string{"k8s.io/api": "k8s.io/api v0.34.4"}}
	mod := g.goMod("go1.26.8")
	for _, want := range []string{"go 1.26.8", "k8s.io/kubernetes v1.34.4", "k8s.io/api => k8s.io/api v0.34.4"} {
		if !strings.Contains(mod, want) {
			t.Errorf("go.mod lacks %q:\n%s", want, mod)
		}
	}
}

// A layer holds what changed from base to upper: new and changed files, and
// whiteouts for deleted ones; hard links and symlinks survive.
func TestLayerDiff(t *testing.T) {
	base, upper := t.TempDir(), t.TempDir()
	write := func(root, name, content string) { writeTestFile(t, root, name, content, 0o644) }
	write(base, "etc/keep", "same")
	write(base, "etc/change", "old")
	write(base, "etc/gone", "bye")
	write(base, "usr/old/dir/file", "x")
	if err := copyTree(context.Background(), base, filepath.Join(upper, "u")); err != nil {
		t.Fatal(err)
	}
	upper = filepath.Join(upper, "u")
	write(upper, "etc/change", "new content")
	os.Remove(filepath.Join(upper, "etc/gone"))
	os.RemoveAll(filepath.Join(upper, "usr/old"))
	write(upper, "usr/bin/tool", "#!/bin/sh\n")
	os.Link(filepath.Join(upper, "usr/bin/tool"), filepath.Join(upper, "usr/bin/tool2"))
	os.Symlink("tool", filepath.Join(upper, "usr/bin/alias"))
	write(upper, "proc/should-not-appear", "x")

	var buf bytes.Buffer
	tw := newTarWriter(&buf)
	if err := tw.addDiff(base, upper, nil); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	entries := map[string]*tar.Header{}
	var names []string
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		entries[h.Name] = h
		names = append(names, h.Name)
	}
	sort.Strings(names)
	for _, want := range []string{"etc/change", "etc/.wh.gone", "usr/.wh.old", "usr/bin/tool", "usr/bin/alias"} {
		if entries[want] == nil {
			t.Errorf("layer lacks %s; has %v", want, names)
		}
	}
	for _, unwanted := range []string{"etc/keep", "usr/old/dir/file", "usr/old/.wh.dir", "proc/should-not-appear"} {
		if entries[unwanted] != nil {
			t.Errorf("layer has %s; has %v", unwanted, names)
		}
	}
	if h := entries["usr/bin/tool2"]; h == nil || h.Typeflag != tar.TypeLink || h.Linkname != "usr/bin/tool" {
		t.Errorf("hard link: %+v", h)
	}
	if h := entries["usr/bin/alias"]; h.Typeflag != tar.TypeSymlink || h.Linkname != "tool" {
		t.Errorf("symlink: %+v", h)
	}
}

// A second build with the same inputs finds the image and says so.
func TestCachedBuild(t *testing.T) {
	testenv.Docker(t)
	tag := DefaultInputs("").Tag()
	if ok, _ := dockercli.ImageExists(context.Background(), tag); !ok {
		testenv.Missing(t, "node image %s is not built (podpath nodeimage build)", tag)
	}
	var out bytes.Buffer
	res, err := Build(context.Background(), Options{Progress: &out})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cached || res.Image != tag || !strings.Contains(out.String(), "already built") || strings.Contains(out.String(), "[1/7]") {
		t.Errorf("cached build: %+v\n%s", res, out.String())
	}
	labels, err := dockercli.Output(context.Background(), "image", "inspect", "-f", `{{index .Config.Labels "podpath.inputs"}} {{.Config.StopSignal}} {{json .Config.Entrypoint}}`, tag)
	if err != nil || labels != DefaultInputs("").Hash()+` SIGRTMIN+3 ["/usr/local/bin/entrypoint","/sbin/init"]` {
		t.Errorf("image config: %q %v", labels, err)
	}
}

// The node runs the runtime its inputs name, built from source: containerd
// and runc report those versions, runc has seccomp, and containerd reads
// the node's config as the newest config version (no migration at start)
// with the sandbox image the build filled in.
func TestNodeRuntime(t *testing.T) {
	testenv.Docker(t)
	in := DefaultInputs("")
	tag := in.Tag()
	if ok, _ := dockercli.ImageExists(context.Background(), tag); !ok {
		testenv.Missing(t, "node image %s is not built (podpath nodeimage build)", tag)
	}
	script := `set -e
/usr/local/bin/containerd --version
/usr/local/sbin/runc --version
containerd --config /etc/containerd/config.toml config dump 2>/tmp/dump.err | grep -A1 "pinned_images\]"
cat /tmp/dump.err
grep '^KUBELET_EXTRA_ARGS=' /etc/default/kubelet
echo "debian packages: $(dpkg-query -W -f '${Package} ' containerd runc 2>/dev/null)"`
	out, err := dockercli.Output(context.Background(), "run", "--rm", "--entrypoint", "/bin/sh", tag, "-c", script)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		"containerd github.com/containerd/containerd/v2 " + in.ContainerdVersion,
		"runc version " + strings.TrimPrefix(in.RuncVersion, "v"),
		"libseccomp: 2.",
		"sandbox = 'registry.k8s.io/pause:",
		// kubelet at verbosity 2 (its SyncLoop and PLEG lines), with kind's flag kept.
		"KUBELET_EXTRA_ARGS=--runtime-cgroups=/system.slice/containerd.service --v=2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the node image lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"migrated", "@SANDBOX_IMAGE@", "level=error"} {
		if strings.Contains(out, bad) {
			t.Errorf("the node's containerd config: %q in\n%s", bad, out)
		}
	}
	if !strings.Contains(out, "debian packages: \n") && !strings.HasSuffix(strings.TrimSpace(out), "debian packages:") {
		t.Errorf("Debian's containerd or runc is installed beside the built ones:\n%s", out)
	}
}
