package sandbox

import (
	"strings"
	"testing"
)

// PODPATH_REGISTRY_MIRRORS: what it accepts, what it refuses and says why,
// and the containerd hosts files it becomes (the real pull through a
// mirror is in scripts/test's labs test of the Killercoda fixtures).
func TestParseMirrors(t *testing.T) {
	ms, err := ParseMirrors(" registry.k8s.io=http://10.0.0.5:5000/registry.k8s.io/ , docker.io=http://10.0.0.5:5000,,")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Registry != "docker.io" || ms[1].Registry != "registry.k8s.io" {
		t.Fatalf("mirrors %+v", ms)
	}
	docker := ms[0].HostsTOML()
	for _, want := range []string{`server = "https://registry-1.docker.io"`, `[host."http://10.0.0.5:5000"]`, `capabilities = ["pull", "resolve"]`} {
		if !strings.Contains(docker, want) {
			t.Errorf("docker.io's hosts.toml lacks %s:\n%s", want, docker)
		}
	}
	if strings.Contains(docker, "override_path") {
		t.Errorf("a mirror with no path keeps the API's path:\n%s", docker)
	}
	k8s := ms[1].HostsTOML()
	for _, want := range []string{`server = "https://registry.k8s.io"`, `[host."http://10.0.0.5:5000/v2/registry.k8s.io"]`, "override_path = true"} {
		if !strings.Contains(k8s, want) {
			t.Errorf("registry.k8s.io's hosts.toml lacks %s:\n%s", want, k8s)
		}
	}
	script := mirrorScript(ms)
	if !strings.Contains(script, "/etc/containerd/certs.d/docker.io/hosts.toml") || !strings.Contains(script, "/etc/containerd/certs.d/registry.k8s.io/hosts.toml") {
		t.Errorf("the node script:\n%s", script)
	}
	if ms, err := ParseMirrors(""); err != nil || len(ms) != 0 {
		t.Errorf("none: %v %v", ms, err)
	}
	for in, want := range map[string]string{
		"docker.io":                                  "not registry=URL",
		"docker.io=":                                 "not registry=URL",
		"docker.io=10.0.0.5:5000":                    "not a URL",
		"docker.io=ftp://10.0.0.5":                   "not a URL",
		"docker.io=http://u:p@10.0.0.5":              "not a URL",
		"Docker Hub=http://10.0.0.5":                 "not a registry's host name",
		"docker.io=http://a:1,docker.io=http://b:2":  "names docker.io twice",
		"quay.io=http://10.0.0.5:5000/x'y":           "quotes",
		"ghcr.io=http://10.0.0.5:5000/?insecure=yes": "not a URL",
	} {
		if _, err := ParseMirrors(in); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), RegistryMirrorsEnv) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}
