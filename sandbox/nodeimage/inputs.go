package nodeimage

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"sort"
)

// DefaultKubernetesVersion is the Kubernetes release podpath builds when
// none is asked for. 1.34 still runs on cgroup v1 hosts without extra flags.
const DefaultKubernetesVersion = "v1.34.4"

// Repository is the name every podpath node image is tagged under.
const Repository = "podpath/node"

// DefaultImage is the tag `nodeimage build` moves to the newest build and
// that sandboxes use when no image is configured.
const DefaultImage = Repository + ":latest"

// KindVersion is the sigs.k8s.io/kind module this build reads the node files
// from; a test keeps it equal to go.mod's.
const KindVersion = "v0.33.0"

// builderRevision changes whenever the build recipe changes in a way the
// other inputs do not show, so old cached images are not mistaken for new.
const builderRevision = 2

// Inputs is everything that decides the content of a node image. Its hash
// names the image, so equal inputs reuse the image already built.
type Inputs struct {
	KubernetesVersion string `json:"kubernetesVersion"`
	CrictlVersion     string `json:"crictlVersion"`
	// ContainerdVersion and RuncVersion are the runtime's modules, built
	// from the Go module proxy (components.go).
	ContainerdVersion string `json:"containerdVersion"`
	RuncVersion       string `json:"runcVersion"`
	FlannelVersion    string `json:"flannelVersion"`
	DebianSuite       string `json:"debianSuite"`
	DebianMirror      string `json:"debianMirror"`
	// Packages are the Debian packages of each root filesystem.
	Packages map[string][]string `json:"packages"`
	// KindVersion pins the node files (entrypoint, units, containerd
	// config) read from the kind module.
	KindVersion     string `json:"kindVersion"`
	BuilderRevision int    `json:"builderRevision"`
	// FilesHash covers podpath's own node files embedded in the binary.
	FilesHash string `json:"filesHash"`
	// Preload says how images sit in the node's containerd: "unpacked"
	// (snapshots made at build, preload.go).
	Preload string `json:"preload"`
}

// The Debian root filesystems a build makes: one for the node, and one
// per workload image on top of a shared minimal base.
const (
	rootfsNode  = "node"
	rootfsNet   = "net"   // iptables tools for kube-proxy and flannel
	rootfsNginx = "nginx" // the web server labs deploy
	rootfsTools = "tools" // a shell with network and process tools
)

// DefaultInputs are the inputs of a build of kubernetesVersion.
func DefaultInputs(kubernetesVersion string) Inputs {
	if kubernetesVersion == "" {
		kubernetesVersion = DefaultKubernetesVersion
	}
	return Inputs{
		KubernetesVersion: kubernetesVersion,
		CrictlVersion:     "v1.34.0",
		ContainerdVersion: "v2.4.2",
		RuncVersion:       "v1.5.3",
		FlannelVersion:    "v0.28.10",
		DebianSuite:       "bookworm",
		DebianMirror:      "http://deb.debian.org/debian",
		Packages: map[string][]string{
			rootfsNode: {
				// services and the container runtime
				"systemd", "systemd-sysv", "dbus", "containernetworking-plugins",
				"libseccomp2", "pigz",
				// what kubelet, kubeadm and kube-proxy call on the node
				"iptables", "nftables", "conntrack", "socat", "ethtool", "mount", "util-linux", "kmod",
				"e2fsprogs", "ca-certificates",
				// the learner's tools
				"bash", "bash-completion", "jq", "curl", "less", "vim-tiny", "nano", "procps", "psmisc",
				"iproute2", "iputils-ping", "openssh-server", "openssh-client", "strace", "tcpdump",
				"dnsutils", "lsof",
				// the session keeper the learner's shells live in (docs/TERMINAL.md)
				"tmux",
			},
			rootfsNet:   {"iptables", "nftables", "conntrack"},
			rootfsNginx: {"nginx-light"},
			rootfsTools: {"bash", "curl", "iproute2", "iputils-ping", "procps", "dnsutils", "netcat-openbsd", "jq", "stress", "less"},
		},
		KindVersion:     KindVersion,
		BuilderRevision: builderRevision,
		FilesHash:       filesHash(),
		Preload:         "unpacked",
	}
}

// Hash is a short stable digest of the inputs.
func (in Inputs) Hash() string {
	b, _ := json.Marshal(in) // maps marshal with sorted keys
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:12]
}

// Tag is the image reference a build of these inputs produces.
func (in Inputs) Tag() string {
	return Repository + ":" + in.KubernetesVersion + "-" + in.Hash()
}

func filesHash() string {
	h := sha256.New()
	var names []string
	_ = fs.WalkDir(nodeFiles, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return nil
	})
	sort.Strings(names)
	for _, n := range names {
		b, _ := nodeFiles.ReadFile(n)
		h.Write([]byte(n))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}
