package sandbox

import (
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Registry mirrors (docs/LABS.md "Images without internet"): a site with no
// internet serves what labs and Killercoda scenarios pull (nginx, busybox,
// ...) from a registry of its own. PODPATH_REGISTRY_MIRRORS names, for
// each upstream registry, the mirror the nodes' containerd asks first:
//
//	docker.io=http://10.0.0.5:5000,registry.k8s.io=http://10.0.0.5:5000
//
// At create every node gets /etc/containerd/certs.d/<registry>/hosts.toml
// (the node image's containerd reads that folder at each pull; files/node/
// containerd.toml), so `kubectl run web --image=nginx` pulls
// docker.io/library/nginx from the mirror's library/nginx. A mirror URL
// with a path serves that upstream under the path alone
// (http://10.0.0.5:5000/docker.io: docker.io/library/nginx is the mirror's
// docker.io/library/nginx), so one registry can hold several upstreams.
// containerd falls back to the upstream itself when the mirror lacks an
// image.

// RegistryMirrorsEnv is the variable the mirrors are read from.
const RegistryMirrorsEnv = "PODPATH_REGISTRY_MIRRORS"

// registryNameRE is a registry's host name, maybe with a port.
var registryNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?$`)

// Mirror is one upstream registry and the mirror its pulls go to.
type Mirror struct {
	Registry string // docker.io, registry.k8s.io, quay.io, ghcr.io, ...
	URL      *url.URL
}

// ParseMirrors reads registry=URL pairs separated by commas.
func ParseMirrors(s string) ([]Mirror, error) {
	var out []Mirror
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		reg, raw, ok := strings.Cut(part, "=")
		reg, raw = strings.ToLower(strings.TrimSpace(reg)), strings.TrimSpace(raw)
		if !ok || reg == "" || raw == "" {
			return nil, fmt.Errorf("%s: %q is not registry=URL (docker.io=http://10.0.0.5:5000)", RegistryMirrorsEnv, part)
		}
		if !registryNameRE.MatchString(reg) {
			return nil, fmt.Errorf("%s: %q is not a registry's host name like docker.io or registry.k8s.io", RegistryMirrorsEnv, reg)
		}
		if seen[reg] {
			return nil, fmt.Errorf("%s names %s twice", RegistryMirrorsEnv, reg)
		}
		seen[reg] = true
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return nil, fmt.Errorf("%s: the mirror of %s, %q, is not a URL like http://10.0.0.5:5000 or https://mirror.example.com/docker.io", RegistryMirrorsEnv, reg, raw)
		}
		if strings.ContainsAny(u.String(), "\"'\\\n") {
			return nil, fmt.Errorf("%s: the mirror of %s, %q, has quotes or backslashes", RegistryMirrorsEnv, reg, raw)
		}
		u.Path = strings.TrimRight(u.Path, "/")
		out = append(out, Mirror{Registry: reg, URL: u})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Registry < out[j].Registry })
	return out, nil
}

var (
	mirrorsOnce sync.Once
	mirrors     []Mirror
	mirrorsErr  error
)

// RegistryMirrors are the mirrors PODPATH_REGISTRY_MIRRORS names, read once;
// an error says what is wrong with it.
func RegistryMirrors() ([]Mirror, error) {
	mirrorsOnce.Do(func() { mirrors, mirrorsErr = ParseMirrors(os.Getenv(RegistryMirrorsEnv)) })
	return mirrors, mirrorsErr
}

// upstream is where containerd goes when the mirror does not have it.
func (m Mirror) upstream() string {
	if m.Registry == "docker.io" {
		return "https://registry-1.docker.io"
	}
	return "https://" + m.Registry
}

// HostsTOML is the containerd hosts file for the mirror's registry.
func (m Mirror) HostsTOML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# podpath: the mirror of %s (%s)\nserver = %q\n\n", m.Registry, RegistryMirrorsEnv, m.upstream())
	if m.URL.Path == "" {
		fmt.Fprintf(&b, "[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", m.URL.Scheme+"://"+m.URL.Host)
	} else {
		// override_path: the host's path is the registry API's root.
		fmt.Fprintf(&b, "[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n  override_path = true\n", m.URL.Scheme+"://"+m.URL.Host+"/v2"+m.URL.Path)
	}
	return b.String()
}

// mirrorScript writes every mirror's hosts file (sh).
func mirrorScript(ms []Mirror) string {
	var b strings.Builder
	for _, m := range ms {
		dir := "/etc/containerd/certs.d/" + m.Registry
		fmt.Fprintf(&b, "mkdir -p '%s'\ncat > '%s/hosts.toml' <<'EOF'\n%sEOF\n", dir, dir, m.HostsTOML())
	}
	return b.String()
}
