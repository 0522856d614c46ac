package nodeimage

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// The policy agent's layer names each path once (docker load refuses a
// layer that names a file twice), and its iptables commands are the
// wrapper's, not Debian's.
func TestPolicyAgentLayerNamesEachPathOnce(t *testing.T) {
	base, variant := t.TempDir(), t.TempDir()
	write := func(root, rel, content string) { writeTestFile(t, root, rel, content, 0o755) }
	write(base, "etc/os-release", "debian")
	write(variant, "etc/os-release", "debian")
	write(variant, "usr/sbin/ipset", "ipset")
	write(variant, "usr/sbin/xtables-legacy-multi", "multi")
	for _, c := range iptablesCommands {
		if err := os.Symlink("xtables-legacy-multi", filepath.Join(variant, "usr/sbin", c)); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(t.TempDir(), "kube-router")
	write(filepath.Dir(bin), "kube-router", "binary")

	var buf bytes.Buffer
	tw := newTarWriter(&buf)
	if err := policyAgentLayer(tw, base, variant, bin); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	seen := map[string]*tar.Header{}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if seen[h.Name] != nil {
			t.Errorf("the layer names %s twice", h.Name)
		}
		seen[h.Name] = h
	}
	for _, c := range iptablesCommands {
		h := seen["usr/sbin/"+c]
		if h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "iptables-wrapper" {
			t.Errorf("usr/sbin/%s is %+v, want a link to the wrapper", c, h)
		}
	}
	for _, want := range []string{"usr/sbin/ipset", "usr/sbin/xtables-legacy-multi", "usr/sbin/iptables-wrapper", "usr/local/bin/kube-router"} {
		if seen[want] == nil {
			t.Errorf("the layer lacks %s", want)
		}
	}
}

// writeTestFile writes root/rel with its folders, for the layer tests.
func writeTestFile(t *testing.T, root, rel, content string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}
