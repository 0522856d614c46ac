package nodeimage

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

//go:embed files
var nodeFiles embed.FS

// AgentPath is where the node image has podpath-agent (files/agent).
const AgentPath = "/usr/local/lib/podpath/agent"

// NodeEntrypoint is kind's node entrypoint, which the image runs before systemd.
var NodeEntrypoint = []string{"/usr/local/bin/entrypoint", "/sbin/init"}

// assembleRootfs turns a copy of the node's Debian root filesystem into a
// kind node: kind's own node files (read from the kind module, pinned by
// go.mod), the Kubernetes binaries, the CNI manifest and podpath's settings.
func (b *builder) assembleRootfs(ctx context.Context, root string, in Inputs, bins binaries, cp controlPlaneImages) error {
	kindDir, err := b.moduleDir(ctx, "sigs.k8s.io/kind", in.KindVersion)
	if err != nil {
		return err
	}
	if err := copyKindFiles(filepath.Join(kindDir, "images/base/files"), root); err != nil {
		return fmt.Errorf("copy kind's node files: %w", err)
	}

	// kind's units and scripts expect upstream's paths for the CNI plugins;
	// Debian's package puts them elsewhere.
	links := map[string]string{}
	plugins, err := os.ReadDir(filepath.Join(root, "usr/lib/cni"))
	if err != nil {
		return fmt.Errorf("CNI plugins: %w", err)
	}
	for _, p := range plugins {
		links["opt/cni/bin/"+p.Name()] = "/usr/lib/cni/" + p.Name()
	}
	for _, c := range []string{"kubelet", "kubeadm", "kubectl"} {
		links["usr/bin/"+c] = "/usr/local/lib/podpath/kube"
	}
	for link, target := range links {
		if err := symlink(root, link, target); err != nil {
			return err
		}
	}
	if err := installFile(bins.Kube, filepath.Join(root, "usr/local/lib/podpath/kube"), 0o755); err != nil {
		return err
	}
	if err := installFile(bins.Crictl, filepath.Join(root, "usr/local/bin/crictl"), 0o755); err != nil {
		return err
	}
	if err := installFile(bins.Agent, filepath.Join(root, AgentPath), 0o755); err != nil {
		return err
	}
	// The runtime where kind's units (containerd.service) look for it.
	for src, dst := range map[string]string{
		bins.Containerd: "usr/local/bin/containerd",
		bins.Shim:       "usr/local/bin/containerd-shim-runc-v2",
		bins.Ctr:        "usr/local/bin/ctr",
		bins.Runc:       "usr/local/sbin/runc",
	} {
		if err := installFile(src, filepath.Join(root, dst), 0o755); err != nil {
			return err
		}
	}

	// containerd's base OCI spec, as kind's base image makes it: the
	// default spec, a hook that mounts the node's product_uuid, no rlimits.
	spec, err := exec.CommandContext(ctx, "chroot", root, "ctr", "oci", "spec").Output()
	if err != nil {
		return fmt.Errorf("ctr oci spec: %w", err)
	}
	baseSpec, err := criBaseSpec(spec)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "etc/containerd/cri-base.json"), baseSpec, 0o644); err != nil {
		return err
	}
	// podpath's own containerd config (files/node/containerd.toml, config
	// version 4) replaces kind's, which is still written for containerd 1.x
	// (version 2) and would be migrated in memory at every start.
	config, err := nodeFiles.ReadFile("files/node/containerd.toml")
	if err != nil {
		return err
	}
	if !strings.Contains(string(config), "@SANDBOX_IMAGE@") {
		return fmt.Errorf("files/node/containerd.toml names no @SANDBOX_IMAGE@")
	}
	config = []byte(strings.ReplaceAll(string(config), "@SANDBOX_IMAGE@", cp.Pause))
	if err := writeFile(filepath.Join(root, "etc/containerd/config.toml"), config, 0o644); err != nil {
		return err
	}

	files := map[string]struct {
		src  string
		mode fs.FileMode
	}{
		"usr/local/bin/podpath-node-setup":              {"files/node/podpath-node-setup", 0o755},
		"etc/systemd/system/podpath-node-setup.service": {"files/node/podpath-node-setup.service", 0o644},
		"etc/profile.d/podpath.sh":                      {"files/node/profile.sh", 0o644},
		"etc/ssh/ssh_config.d/podpath.conf":             {"files/node/ssh_config", 0o644},
		"etc/ssh/sshd_config.d/podpath.conf":            {"files/node/sshd_config", 0o644},
		"etc/motd":                                      {"files/node/motd", 0o644},
		"etc/default/kubelet":                           {"files/node/kubelet.default", 0o644},
	}
	for dst, f := range files {
		data, err := nodeFiles.ReadFile(f.src)
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(root, dst), data, f.mode); err != nil {
			return err
		}
	}
	manifest, err := nodeFiles.ReadFile("files/flannel/default-cni.yaml")
	if err != nil {
		return err
	}
	manifest = []byte(strings.ReplaceAll(string(manifest), "@FLANNEL_IMAGE@", flannelImage+":"+in.FlannelVersion))
	if err := writeFile(filepath.Join(root, "kind/manifests/default-cni.yaml"), manifest, 0o644); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(root, "kind/version"), []byte(in.KubernetesVersion), 0o644); err != nil {
		return err
	}
	for _, c := range []struct{ bin, as, out string }{
		{bins.Kube, "kubectl", "kubectl"},
		{bins.Kube, "kubeadm", "kubeadm"},
		{bins.Crictl, "crictl", "crictl"},
	} {
		script, err := runKube(ctx, c.bin, c.as, "completion", "bash")
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(root, "usr/share/bash-completion/completions", c.out), []byte(script), 0o644); err != nil {
			return err
		}
	}

	// What kind's base image Dockerfile does after installing packages.
	setup := strings.Join([]string{
		"find /lib/systemd/system/sysinit.target.wants/ -name systemd-tmpfiles-setup.service -delete",
		"rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/*",
		"rm -f /lib/systemd/system/local-fs.target.wants/* /lib/systemd/system/sockets.target.wants/*udev*",
		"rm -f /lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/*",
		"echo ReadKMsg=no >> /etc/systemd/journald.conf",
		"systemctl enable kubelet.service containerd.service undo-mount-hacks.service ssh.service podpath-node-setup.service",
		"systemctl mask systemd-binfmt.service",
		"mkdir -p /etc/kubernetes/manifests /root/.ssh",
		"chmod 700 /root/.ssh",
		"rm -f /etc/ssh/ssh_host_* /etc/machine-id /var/lib/dbus/machine-id",
		"touch /etc/machine-id",
	}, " && ")
	if out, err := exec.CommandContext(ctx, "chroot", root, "/bin/sh", "-ec", setup).CombinedOutput(); err != nil {
		return fmt.Errorf("systemd setup in the node root filesystem: %v: %s", err, out)
	}
	return nil
}

// copyKindFiles copies kind's base-image files into root with the modes its
// Dockerfile gives them: scripts 0755, everything else 0644.
func copyKindFiles(src, root string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "." {
			return nil
		}
		dst := filepath.Join(root, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		mode := fs.FileMode(0o644)
		if strings.HasPrefix(rel, "usr/local/bin/") || strings.HasPrefix(rel, "kind/bin/") {
			mode = 0o755
		}
		return installFile(p, dst, mode)
	})
}

func criBaseSpec(raw []byte) ([]byte, error) {
	var spec map[string]any
	if err := json.Unmarshal(raw, &spec); err != nil {
		return nil, fmt.Errorf("parse ctr oci spec: %w", err)
	}
	hooks, _ := spec["hooks"].(map[string]any)
	if hooks == nil {
		hooks = map[string]any{}
	}
	create, _ := hooks["createContainer"].([]any)
	hooks["createContainer"] = append(create, map[string]any{"path": "/kind/bin/mount-product-files.sh"})
	spec["hooks"] = hooks
	if proc, ok := spec["process"].(map[string]any); ok {
		delete(proc, "rlimits")
	}
	return json.MarshalIndent(spec, "", "  ")
}

func symlink(root, link, target string) error {
	p := filepath.Join(root, link)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	_ = os.Remove(p)
	return os.Symlink(target, p)
}

func installFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	_ = os.Remove(dst)
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}

func writeFile(path string, data []byte, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		return err
	}
	return os.Chmod(path, mode)
}

func editFile(path string, fn func(string) (string, error)) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := fn(string(raw))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(out), 0o644)
}
