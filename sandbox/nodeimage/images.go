package nodeimage

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/podpath/podpath/internal/names"
)

// Workload images preloaded into every node for the labs. Their names say
// where they come from: podpath builds them from Debian packages.
const (
	NginxImage   = names.NginxImage
	ToolsImage   = names.ToolsImage
	flannelImage = "podpath.local/flannel"
)

// nginxSeries is the nginx release Debian bookworm ships; the build checks
// the installed package so NginxImage never lies about its content.
const nginxSeries = "1.22"

const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// imageSpec is one image of the preload archive.
type imageSpec struct {
	Ref        string
	Layers     []string // layer tar files, bottom first
	Entrypoint []string
	Cmd        []string
	StopSignal string
	Env        []string // beside PATH
}

// layerFiles are the layer tars a build writes into its work folder.
type layerFiles struct {
	Base, Net, Nginx, Tools, Kube, Etcd, CoreDNS, Flannel, Pause string
}

// writeLayers writes every layer tar the workload and control-plane images need.
func (b *builder) writeLayers(ctx context.Context, work string, base string, variants map[string]string, bins binaries) (layerFiles, error) {
	l := layerFiles{
		Base: filepath.Join(work, "layer-base.tar"), Net: filepath.Join(work, "layer-net.tar"),
		Nginx: filepath.Join(work, "layer-nginx.tar"), Tools: filepath.Join(work, "layer-tools.tar"),
		Kube: filepath.Join(work, "layer-kube.tar"), Etcd: filepath.Join(work, "layer-etcd.tar"),
		CoreDNS: filepath.Join(work, "layer-coredns.tar"), Flannel: filepath.Join(work, "layer-flannel.tar"),
		Pause: filepath.Join(work, "layer-pause.tar"),
	}
	writers := []struct {
		path string
		fn   func(t *tarWriter) error
	}{
		{l.Base, func(t *tarWriter) error { return t.addTree(base, nil) }},
		{l.Net, func(t *tarWriter) error {
			if err := t.addDiff(base, variants[rootfsNet], nil); err != nil {
				return err
			}
			return addIptablesWrapper(t)
		}},
		{l.Nginx, func(t *tarWriter) error {
			if err := t.addDiff(base, variants[rootfsNginx], nil); err != nil {
				return err
			}
			// Like the official image: logs go to the container's output.
			if err := t.addSymlink("var/log/nginx/access.log", "/dev/stdout"); err != nil {
				return err
			}
			return t.addSymlink("var/log/nginx/error.log", "/dev/stderr")
		}},
		{l.Tools, func(t *tarWriter) error { return t.addDiff(base, variants[rootfsTools], nil) }},
		{l.Kube, func(t *tarWriter) error {
			return addBinary(t, bins.Kube, "usr/local/bin/kube", kubeCommands...)
		}},
		{l.Etcd, func(t *tarWriter) error {
			if err := addBinary(t, bins.Etcd, "usr/local/bin/etcd"); err != nil {
				return err
			}
			return addBinary(t, bins.Etcdctl, "usr/local/bin/etcdctl")
		}},
		{l.CoreDNS, func(t *tarWriter) error { return addBinary(t, bins.CoreDNS, "coredns") }},
		{l.Flannel, func(t *tarWriter) error {
			if err := t.addDir("opt/bin"); err != nil {
				return err
			}
			if err := addBinary(t, bins.Flannel, "opt/bin/flanneld"); err != nil {
				return err
			}
			script, err := nodeFiles.ReadFile("files/flannel/write-cni-config")
			if err != nil {
				return err
			}
			return t.addFile("opt/bin/write-cni-config", 0o755, script)
		}},
		{l.Pause, func(t *tarWriter) error { return addBinary(t, bins.Pause, "pause") }},
	}
	for _, w := range writers {
		if err := ctx.Err(); err != nil {
			return l, err
		}
		if err := writeTar(w.path, w.fn); err != nil {
			return l, fmt.Errorf("write %s: %w", filepath.Base(w.path), err)
		}
	}
	return l, nil
}

// checkNginxVersion makes sure NginxImage's tag matches the installed package.
func checkNginxVersion(root string) error {
	f, err := os.Open(filepath.Join(root, "var/lib/dpkg/status"))
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1024*1024), 1024*1024)
	inNginx := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "Package: ") {
			inNginx = line == "Package: nginx-light" || line == "Package: nginx-core"
		}
		if v, ok := strings.CutPrefix(line, "Version: "); ok && inNginx {
			if !strings.HasPrefix(v, nginxSeries+".") {
				return fmt.Errorf("Debian's nginx is %s, but the image would be named %s: update nginxSeries and the labs", v, NginxImage)
			}
			return nil
		}
	}
	return fmt.Errorf("nginx is not installed in %s", root)
}

func addBinary(t *tarWriter, src, dst string, links ...string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := t.tw.WriteHeader(tarHeaderFor(dst, fi.Size())); err != nil {
		return err
	}
	if _, err := io.Copy(t.tw, f); err != nil {
		return err
	}
	for _, l := range links {
		if err := t.addSymlink(filepath.Join(filepath.Dir(dst), l), filepath.Base(dst)); err != nil {
			return err
		}
	}
	return nil
}

// iptablesCommands are the iptables tools the wrapper stands in for.
var iptablesCommands = []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"}

// addIptablesWrapper makes iptables in the image use the same backend
// (legacy or nft) as the node, as kube-proxy's official image does.
func addIptablesWrapper(t *tarWriter) error {
	script, err := nodeFiles.ReadFile("files/images/iptables-wrapper")
	if err != nil {
		return err
	}
	if err := t.addFile("usr/sbin/iptables-wrapper", 0o755, script); err != nil {
		return err
	}
	for _, c := range iptablesCommands {
		if err := t.addSymlink("usr/sbin/"+c, "iptables-wrapper"); err != nil {
			return err
		}
	}
	return nil
}

func writeTar(path string, fn func(t *tarWriter) error) error {
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	t := newTarWriter(bw)
	if err := fn(t); err != nil {
		f.Close()
		return err
	}
	if err := t.Close(); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// imageSpecs lists the images a node preloads, under the names kubeadm and
// the labs ask for.
func imageSpecs(l layerFiles, cp controlPlaneImages, in Inputs) []imageSpec {
	kube := func(ref, cmd string, extra ...string) imageSpec {
		layers := append([]string{l.Base}, extra...)
		return imageSpec{Ref: ref, Layers: append(layers, l.Kube), Entrypoint: []string{"/usr/local/bin/" + cmd}}
	}
	specs := []imageSpec{
		kube(cp.APIServer, "kube-apiserver"),
		kube(cp.ControllerManager, "kube-controller-manager"),
		kube(cp.Scheduler, "kube-scheduler"),
		kube(cp.Proxy, "kube-proxy", l.Net),
		{Ref: cp.Etcd, Layers: []string{l.Base, l.Etcd}, Entrypoint: []string{"/usr/local/bin/etcd"}},
		{Ref: cp.CoreDNS, Layers: []string{l.Base, l.CoreDNS}, Entrypoint: []string{"/coredns"}},
		{Ref: cp.Pause, Layers: []string{l.Pause}, Entrypoint: []string{"/pause"}},
		{Ref: flannelImage + ":" + in.FlannelVersion, Layers: []string{l.Base, l.Net, l.Flannel}, Entrypoint: []string{"/opt/bin/flanneld"}},
		{Ref: NginxImage, Layers: []string{l.Base, l.Nginx}, Cmd: []string{"nginx", "-g", "daemon off;"}, StopSignal: "SIGQUIT"},
		{Ref: ToolsImage, Layers: []string{l.Base, l.Tools}, Cmd: []string{"sleep", "infinity"}},
	}
	return specs
}

// writeImageArchive writes all images into one docker-archive tarball, each
// shared layer stored once.
func writeImageArchive(ctx context.Context, path string, specs []imageSpec) error {
	layers := map[string]v1.Layer{}
	refs := map[name.Reference]v1.Image{}
	for _, s := range specs {
		img := empty.Image
		for _, lp := range s.Layers {
			layer, ok := layers[lp]
			if !ok {
				var err error
				lp := lp
				layer, err = tarball.LayerFromOpener(func() (io.ReadCloser, error) { return os.Open(lp) },
					tarball.WithCompressionLevel(gzip.BestSpeed))
				if err != nil {
					return fmt.Errorf("layer %s: %w", lp, err)
				}
				layers[lp] = layer
			}
			var err error
			if img, err = mutate.AppendLayers(img, layer); err != nil {
				return err
			}
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return err
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = "linux", "amd64"
		cf.Config.Env = append([]string{defaultPath}, s.Env...)
		cf.Config.Entrypoint = s.Entrypoint
		cf.Config.Cmd = s.Cmd
		cf.Config.StopSignal = s.StopSignal
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			return err
		}
		tag, err := name.NewTag(s.Ref, name.WeakValidation)
		if err != nil {
			return fmt.Errorf("image name %q: %w", s.Ref, err)
		}
		refs[tag] = img
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if err := tarball.MultiRefWriteToFile(path+".tmp", refs); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

func imageRefs(specs []imageSpec) []string {
	var refs []string
	for _, s := range specs {
		refs = append(refs, s.Ref)
	}
	return refs
}
