package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podpath/podpath/internal/dockercli"
)

// Info describes a sandbox as Docker has it.
type Info struct {
	Name  string `json:"name"`
	Nodes []Node `json:"nodes"`
	// State is running when every node runs, paused when every node is
	// frozen (hibernated), degraded otherwise.
	State string `json:"state"`
}

// Sandbox states derived from the nodes' Docker states.
const (
	StateRunning  = "running"
	StatePaused   = "paused"
	StateDegraded = "degraded"
)

// Node returns the node with the given alias.
func (i *Info) Node(alias string) (Node, error) {
	var names []string
	for _, n := range i.Nodes {
		if n.Alias == alias {
			return n, nil
		}
		names = append(names, n.Alias)
	}
	return Node{}, fmt.Errorf("sandbox %s has no node %q; its nodes are %s", i.Name, alias, strings.Join(names, ", "))
}

// Get describes one sandbox, or returns an error wrapping ErrNotFound.
func (m *Manager) Get(ctx context.Context, name string) (*Info, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	nodes, err := m.nodes(ctx, name)
	if err != nil {
		return nil, err
	}
	return &Info{Name: name, Nodes: nodes, State: StateOf(nodes)}, nil
}

// StateOf is a sandbox's state from its nodes' Docker states.
func StateOf(nodes []Node) string {
	running, paused := 0, 0
	for _, n := range nodes {
		switch n.State {
		case "running":
			running++
		case "paused":
			paused++
		}
	}
	switch {
	case running == len(nodes):
		return StateRunning
	case paused == len(nodes):
		return StatePaused
	}
	return StateDegraded
}

// List describes every podpath sandbox Docker has, by name.
func (m *Manager) List(ctx context.Context) ([]Info, error) {
	names, err := m.names()
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, n := range names {
		info, err := m.Get(ctx, n)
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, *info)
	}
	return out, nil
}

// names lists the podpath sandboxes kind knows.
func (m *Manager) names() ([]string, error) {
	clusters, err := m.provider.List()
	if err != nil {
		return nil, fmt.Errorf("list kind clusters: %w", err)
	}
	var out []string
	for _, c := range clusters {
		if n, ok := strings.CutPrefix(c, kindPrefix); ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Delete removes a sandbox's containers, their volumes and its network.
// Deleting a sandbox that does not exist is not an error.
func (m *Manager) Delete(ctx context.Context, name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	// A frozen process cannot die: docker rm -f of a paused node waits
	// forever on cgroup v1. Thaw hibernated nodes first.
	if info, err := m.Get(ctx, name); err == nil {
		var paused []string
		for _, n := range info.Nodes {
			if n.State == "paused" {
				paused = append(paused, n.Container)
			}
		}
		if len(paused) > 0 {
			if err := dockercli.Unpause(ctx, paused...); err != nil {
				return fmt.Errorf("wake hibernated sandbox %s before deleting it: %w", name, err)
			}
		}
	}
	kubeconfig, err := m.prepareKindKubeconfig(name)
	if err != nil {
		return fmt.Errorf("delete sandbox %s: %w", name, err)
	}
	if err := m.provider.Delete(kindName(name), kubeconfig); err != nil {
		return fmt.Errorf("delete sandbox %s: %w", name, err)
	}
	os.Remove(kubeconfig)
	if err := removeNetwork(ctx, name); err != nil {
		return fmt.Errorf("delete network of sandbox %s: %w", name, err)
	}
	return nil
}

// Reconcile returns the sandboxes Docker has that known does not name (for
// example, clusters of sessions a crashed server forgot), and the networks
// podpath made that no longer have a cluster.
func (m *Manager) Reconcile(ctx context.Context, known []string) (orphans []string, err error) {
	names, err := m.names()
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, k := range known {
		want[k] = true
	}
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
		if !want[n] {
			orphans = append(orphans, n)
		}
	}
	nets, err := dockercli.Output(ctx, "network", "ls", "--filter", "label="+networkLabel, "--format", "{{.Label \""+networkLabel+"\"}}")
	if err != nil {
		return nil, err
	}
	for _, n := range strings.Fields(nets) {
		if !have[n] && !want[n] {
			orphans = append(orphans, n)
		}
	}
	sort.Strings(orphans)
	return orphans, nil
}

// Hibernate freezes every node of the sandbox (docker pause): its processes
// stop using CPU and keep their memory, and Resume brings them back in about
// a second.
func (m *Manager) Hibernate(ctx context.Context, name string) error {
	return m.eachContainer(ctx, name, "pause", "running")
}

// Resume unfreezes a hibernated sandbox.
func (m *Manager) Resume(ctx context.Context, name string) error {
	return m.eachContainer(ctx, name, "unpause", "paused")
}

func (m *Manager) eachContainer(ctx context.Context, name, verb, from string) error {
	info, err := m.Get(ctx, name)
	if err != nil {
		return err
	}
	var ids []string
	for _, n := range info.Nodes {
		if n.State == from {
			ids = append(ids, n.Container)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if verb == "pause" {
		return dockercli.Pause(ctx, ids...)
	}
	return dockercli.Unpause(ctx, ids...)
}

// Kubeconfig returns an admin kubeconfig for the sandbox's API server as
// published on this host.
// It is kept per control-plane container: it does not change for the
// container's life.
func (m *Manager) Kubeconfig(ctx context.Context, name string) (string, error) {
	info, err := m.Get(ctx, name)
	if err != nil {
		return "", err
	}
	key := info.Nodes[0].id
	if v, ok := m.kubeconfigs.Load(key); ok && key != "" {
		return v.(string), nil
	}
	cfg, err := adminKubeconfig(ctx, info.Nodes[0])
	if err != nil {
		// kind's provider reads it with the docker CLI: slower, but it
		// knows every way kind publishes the port
		var kerr error
		if cfg, kerr = m.provider.KubeConfig(kindName(name), false); kerr != nil {
			return "", fmt.Errorf("kubeconfig of sandbox %s: %w (and through kind: %v)", name, err, kerr)
		}
		m.log.Warn("read the kubeconfig through kind's docker CLI", "sandbox", name, "err", err)
	}
	if key != "" {
		m.kubeconfigs.Store(key, cfg)
	}
	return cfg, nil
}

// RESTConfig returns a client configuration for the sandbox's API server.
func (m *Manager) RESTConfig(ctx context.Context, name string) (*rest.Config, error) {
	kc, err := m.Kubeconfig(ctx, name)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(kc))
	if err != nil {
		return nil, fmt.Errorf("parse kubeconfig of sandbox %s: %w", name, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}

// Client returns a Kubernetes client for the sandbox.
func (m *Manager) Client(ctx context.Context, name string) (kubernetes.Interface, error) {
	cfg, err := m.RESTConfig(ctx, name)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// adminKubeconfig reads the control plane's /etc/kubernetes/admin.conf
// through the Docker Engine API and points it at the API server's port as
// this host publishes it, as kind's provider does with the docker CLI.
func adminKubeconfig(ctx context.Context, cp Node) (string, error) {
	if cp.apiAddr == "" {
		return "", fmt.Errorf("node %s publishes no API server port", cp.Container)
	}
	var out, errOut bytes.Buffer
	code, err := dockercli.Exec(ctx, cp.Container, []string{"cat", "/etc/kubernetes/admin.conf"}, nil, &out, &errOut)
	if err != nil {
		return "", err
	}
	if code != 0 {
		return "", fmt.Errorf("read admin.conf on %s: %s", cp.Container, strings.TrimSpace(errOut.String()))
	}
	cfg, err := clientcmd.Load(out.Bytes())
	if err != nil {
		return "", fmt.Errorf("admin.conf on %s: %w", cp.Container, err)
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + cp.apiAddr
	}
	b, err := clientcmd.Write(*cfg)
	return string(b), err
}
