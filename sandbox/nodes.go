package sandbox

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/sync/errgroup"

	"github.com/podpath/podpath/internal/dockercli"
)

// Node is one node of a sandbox.
type Node struct {
	// Alias is the name learners, the API and Kubernetes use: controlplane, node01, ...
	Alias string `json:"alias"`
	// Container is the Docker container kind made for it.
	Container string `json:"container"`
	Role      string `json:"role"` // control-plane or worker
	IP        string `json:"ip"`
	// State is Docker's: running, paused, exited, ...
	State string `json:"state"`
	// id is the container's Docker id: a node re-created under the same
	// name has another.
	id string
	// apiAddr is where this host publishes the node's API server port
	// (control plane only).
	apiAddr string
}

// The labels kind puts on its node containers.
const (
	kindClusterLabel = "io.x-k8s.kind.cluster"
	kindRoleLabel    = "io.x-k8s.kind.role"
)

// nodes lists a sandbox's nodes with their aliases, control plane first,
// with one Engine API call (it runs on every check and wake).
func (m *Manager) nodes(ctx context.Context, name string) ([]Node, error) {
	list, err := dockercli.Containers(ctx, kindClusterLabel, kindName(name))
	if err != nil {
		return nil, fmt.Errorf("list nodes of %s: %w", name, err)
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("sandbox %q: %w", name, ErrNotFound)
	}
	var cp []Node
	var workers []Node
	for _, c := range list {
		node := Node{Container: c.Name, Role: c.Labels[kindRoleLabel], State: c.State, id: c.ID, apiAddr: c.Published["6443/tcp"]}
		if len(c.IPs) > 0 {
			node.IP = c.IPs[0]
		}
		if node.Role == "control-plane" {
			cp = append(cp, node)
		} else {
			workers = append(workers, node)
		}
	}
	if len(cp) != 1 {
		return nil, fmt.Errorf("sandbox %q has %d control-plane nodes; podpath makes exactly one", name, len(cp))
	}
	// kind names workers <cluster>-worker, -worker2, -worker3, ...
	sort.Slice(workers, func(i, j int) bool { return workerIndex(workers[i].Container) < workerIndex(workers[j].Container) })
	cp[0].Alias = ControlPlane
	for i := range workers {
		workers[i].Alias = WorkerAlias(i + 1)
	}
	return append(cp, workers...), nil
}

func workerIndex(container string) int {
	i := strings.LastIndex(container, "-worker")
	if i < 0 {
		return 0
	}
	suffix := container[i+len("-worker"):]
	if suffix == "" {
		return 1
	}
	n, _ := strconv.Atoi(suffix)
	return n
}

// tmuxConf makes tmux an invisible session keeper for the learner's shell:
// no prefix key, no key bindings, no status line, no escape delay, and the
// normal screen (no alternate screen), so the browser's scrollback works.
const tmuxConf = `# podpath: the learner's shell lives in this tmux session, so it outlives
# the server's attach (docs/TERMINAL.md). Nothing here takes a key.
set -g prefix None
set -g prefix2 None
unbind-key -a
set -g status off
set -g escape-time 0
set -g mouse off
set -g set-titles off
set -g history-limit 10000
set -g default-terminal screen-256color
set -g terminal-overrides "xterm*:smcup@:rmcup@"
set -g destroy-unattached off
set -g exit-empty on
setw -g aggressive-resize on
`

// setupNodes gives each node its alias as hostname, names every node of the
// cluster in each node's /etc/hosts, and installs one SSH key made for this
// cluster, so `ssh node01` works from any node as root.
func (m *Manager) setupNodes(ctx context.Context, nodes []Node) error {
	scripts, err := NodeSetupScripts(nodes)
	if err != nil {
		return err
	}
	var g errgroup.Group
	for _, n := range nodes {
		g.Go(func() error {
			if err := dockercli.RunIO(ctx, strings.NewReader(scripts[n.Alias]), nil, nil, "exec", "-i", n.Container, "sh", "-s"); err != nil {
				return fmt.Errorf("set up node %s: %w", n.Alias, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// NodeSetupScripts are the shell scripts (for sh -s) that set up each node
// of a new cluster, by alias: its alias as hostname, every node of the
// cluster named in its /etc/hosts, one SSH key made for this cluster (so
// `ssh node01` works from any node as root), and the shell keeper's tmux
// configuration, and the registry mirrors' containerd hosts files
// (mirrors.go). Both backends run them.
func NodeSetupScripts(nodes []Node) (map[string]string, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "podpath sandbox")
	if err != nil {
		return nil, err
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, err
	}
	privPEM := string(pem.EncodeToMemory(block))
	pubLine := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub))) + " podpath"

	ms, err := RegistryMirrors()
	if err != nil {
		return nil, err
	}
	var hosts strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&hosts, "%s\t%s # podpath\n", n.IP, n.Alias)
	}
	scripts := map[string]string{}
	for _, n := range nodes {
		scripts[n.Alias] = fmt.Sprintf(`set -e
hostname %[1]s
echo %[1]s > /etc/hostname
# /etc/hosts is a bind mount (from Docker, or a Pod's kubelet): rewrite it in place.
grep -v ' # podpath$' /etc/hosts > /tmp/hosts.podpath || true
cat >> /tmp/hosts.podpath <<'EOF'
%[2]sEOF
cat /tmp/hosts.podpath > /etc/hosts
rm -f /tmp/hosts.podpath
mkdir -p /root/.ssh
chmod 700 /root/.ssh
cat > /root/.ssh/id_ed25519 <<'EOF'
%[3]sEOF
chmod 600 /root/.ssh/id_ed25519
echo '%[4]s' > /root/.ssh/id_ed25519.pub
echo '%[4]s' > /root/.ssh/authorized_keys
chmod 600 /root/.ssh/authorized_keys
mkdir -p /etc/podpath
cat > /etc/podpath/tmux.conf <<'EOF'
%[5]sEOF
`, n.Alias, hosts.String(), privPEM, pubLine, tmuxConf) + mirrorScript(ms)
	}
	return scripts, nil
}
