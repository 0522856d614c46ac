package nodeimage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// debianBase makes (or finds in the cache) a minimal Debian root filesystem
// with debootstrap. Every other root filesystem starts as a copy of it, so the
// workload images share it as their first layer.
func (b *builder) debianBase(ctx context.Context, in Inputs) (string, error) {
	key := shortHash(in.DebianSuite, in.DebianMirror, fmt.Sprint(builderRevision))
	dir := filepath.Join(b.cacheDir, "rootfs", "base-"+key)
	if done(dir) {
		b.detail("debian base: cached")
		return dir, nil
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return "", fmt.Errorf("debootstrap is needed to build the node's Debian root filesystem: apt-get install -y debootstrap")
	}
	tmp := dir + ".tmp"
	if err := removeTree(tmp); err != nil {
		return "", err
	}
	start := time.Now()
	b.detail("debian base: debootstrap %s from %s", in.DebianSuite, in.DebianMirror)
	cmd := exec.CommandContext(ctx, "debootstrap", "--variant=minbase", "--include=ca-certificates",
		in.DebianSuite, tmp, in.DebianMirror)
	if err := b.runStreaming(cmd, "debootstrap"); err != nil {
		return "", fmt.Errorf("debootstrap %s: %w", in.DebianSuite, err)
	}
	sources := fmt.Sprintf("deb %[1]s %[2]s main\ndeb %[1]s %[2]s-updates main\ndeb %[3]s %[2]s-security main\n",
		in.DebianMirror, in.DebianSuite, securityMirror(in.DebianMirror))
	if err := os.WriteFile(filepath.Join(tmp, "etc/apt/sources.list"), []byte(sources), 0o644); err != nil {
		return "", err
	}
	// Images do not need manuals, docs or apt's lists; nor does the node.
	dpkgExcludes := "path-exclude /usr/share/doc/*\npath-include /usr/share/doc/*/copyright\npath-exclude /usr/share/man/*\npath-exclude /usr/share/info/*\npath-exclude /usr/share/locale/*\npath-include /usr/share/locale/locale.alias\n"
	if err := os.WriteFile(filepath.Join(tmp, "etc/dpkg/dpkg.cfg.d/podpath-nodoc"), []byte(dpkgExcludes), 0o644); err != nil {
		return "", err
	}
	if err := b.chroot(ctx, tmp, "apt-get update -qq && apt-get -y -qq upgrade && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt/* /var/log/dpkg.log /var/log/bootstrap.log && rm -rf /usr/share/doc/* /usr/share/man/* /usr/share/info/*"); err != nil {
		return "", err
	}
	if err := finish(tmp, dir); err != nil {
		return "", err
	}
	b.detail("debian base: made in %s", since(start))
	return dir, nil
}

func securityMirror(mirror string) string {
	if mirror == "http://deb.debian.org/debian" {
		return "http://deb.debian.org/debian-security"
	}
	return strings.TrimSuffix(mirror, "/") + "-security"
}

// debianVariant makes (or finds) a copy of base with packages installed.
func (b *builder) debianVariant(ctx context.Context, in Inputs, base, name string) (string, error) {
	pkgs := in.Packages[name]
	key := shortHash(filepath.Base(base), strings.Join(pkgs, " "), fmt.Sprint(builderRevision))
	dir := filepath.Join(b.cacheDir, "rootfs", name+"-"+key)
	if done(dir) {
		b.detail("%s root filesystem: cached", name)
		return dir, nil
	}
	tmp := dir + ".tmp"
	if err := removeTree(tmp); err != nil {
		return "", err
	}
	start := time.Now()
	if err := copyTree(ctx, base, tmp); err != nil {
		return "", err
	}
	b.detail("%s root filesystem: installing %d packages", name, len(pkgs))
	script := "apt-get update -qq && apt-get install -y -qq --no-install-recommends " + strings.Join(pkgs, " ") +
		" && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt/* /var/log/dpkg.log" +
		" /var/cache/debconf/*-old /var/lib/dpkg/*-old"
	if err := b.chroot(ctx, tmp, script); err != nil {
		return "", fmt.Errorf("install packages into the %s root filesystem: %w", name, err)
	}
	if err := finish(tmp, dir); err != nil {
		return "", err
	}
	b.detail("%s root filesystem: made in %s", name, since(start))
	return dir, nil
}

// chroot runs a shell script inside root with /proc and /dev mounted, the
// host's resolv.conf for apt, and services kept from starting.
func (b *builder) chroot(ctx context.Context, root, script string) error {
	policy := filepath.Join(root, "usr/sbin/policy-rc.d")
	if err := os.WriteFile(policy, []byte("#!/bin/sh\nexit 101\n"), 0o755); err != nil {
		return err
	}
	defer os.Remove(policy)
	resolv := filepath.Join(root, "etc/resolv.conf")
	_ = os.Remove(resolv)
	if host, err := os.ReadFile("/etc/resolv.conf"); err == nil {
		if err := os.WriteFile(resolv, host, 0o644); err != nil {
			return err
		}
	}
	defer os.WriteFile(resolv, nil, 0o644)
	var mounted []string
	defer func() {
		for i := len(mounted) - 1; i >= 0; i-- {
			if err := syscall.Unmount(mounted[i], 0); err != nil {
				_ = syscall.Unmount(mounted[i], syscall.MNT_DETACH)
			}
		}
	}()
	for _, m := range []struct{ src, dst, fstype string }{
		{"proc", "proc", "proc"},
		{"/dev", "dev", ""},
	} {
		target := filepath.Join(root, m.dst)
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
		var err error
		if m.fstype != "" {
			err = syscall.Mount(m.src, target, m.fstype, 0, "")
		} else {
			err = syscall.Mount(m.src, target, "", syscall.MS_BIND, "")
		}
		if err != nil {
			return fmt.Errorf("mount %s in %s (building needs root): %w", m.dst, root, err)
		}
		mounted = append(mounted, target)
	}
	cmd := exec.CommandContext(ctx, "chroot", root, "/bin/sh", "-ec", script)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C", "HOME=/root"}
	return b.runStreaming(cmd, "chroot")
}

func shortHash(parts ...string) string {
	b, _ := json.Marshal(parts)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:12]
}

// done reports whether a cached tree was finished (finish renamed it into place).
func done(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}

func finish(tmp, dir string) error {
	if err := removeTree(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// removeTree removes a root filesystem, refusing to follow a mount left
// behind by an interrupted chroot.
func removeTree(dir string) error {
	for _, m := range []string{"proc", "dev"} {
		_ = syscall.Unmount(filepath.Join(dir, m), syscall.MNT_DETACH)
	}
	if mounts, err := os.ReadFile("/proc/self/mounts"); err == nil {
		abs, _ := filepath.Abs(dir)
		for _, line := range strings.Split(string(mounts), "\n") {
			if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], abs+"/") {
				return fmt.Errorf("refusing to remove %s: %s is still mounted; unmount it first", dir, f[1])
			}
		}
	}
	return os.RemoveAll(dir)
}

func copyTree(ctx context.Context, src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, "cp", "-a", src, dst).CombinedOutput()
	if err != nil {
		return fmt.Errorf("copy %s: %v: %s", src, err, out)
	}
	return nil
}
