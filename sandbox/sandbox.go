// Package sandbox runs learner clusters: one kind cluster per lab session,
// each on a Docker network of its own, built on the kind Go library
// (sigs.k8s.io/kind/pkg/cluster). Callers see a handful of verbs (Create,
// Get, List, Exec, Attach, Client, Delete, Reconcile, Hibernate,
// Resume) and node aliases (controlplane, node01, ...); kind and Docker stay
// behind them.
package sandbox

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"sigs.k8s.io/kind/pkg/cluster"

	"github.com/podpath/podpath/internal/names"
)

// ControlPlane is the alias of every sandbox's control-plane node.
const ControlPlane = names.ControlPlane

// WorkerAlias is the alias of the i-th worker (1-based): node01, node02, ...
func WorkerAlias(i int) string { return names.Worker(i) }

// kindPrefix marks the kind clusters podpath owns, so other kind clusters on
// the same host are never listed, reconciled or deleted.
const kindPrefix = "podpath-"

// MaxWorkers bounds the cluster shape a caller may ask for.
const MaxWorkers = 5

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`)

// ErrNotFound is returned for a sandbox Docker does not have.
var ErrNotFound = errors.New("sandbox not found")

// ErrNoRoom is why a create failed when the backend's scheduler found no
// node with room for it (the Kubernetes backend: its node Pods stayed
// unschedulable). What was made is deleted; the engine queues the start
// again.
var ErrNoRoom = errors.New("no room for the cluster")

// ValidateName says what is wrong with a sandbox name, or returns nil.
func ValidateName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("invalid sandbox name %q: use 1 to 40 lowercase letters, digits and dashes, starting and ending with a letter or digit", name)
	}
	return nil
}

// Manager creates and runs sandboxes on the local Docker engine.
type Manager struct {
	provider *cluster.Provider
	log      *slog.Logger
	image    string
	stateDir string
	pool     string

	// envMu guards KIND_EXPERIMENTAL_DOCKER_NETWORK, the one way to give
	// kind a network per cluster: kind reads it from the process
	// environment early in Create.
	envMu sync.Mutex
	// netMu serialises picking a free subnet for a new network.
	netMu sync.Mutex
	// kubeconfigs caches each control-plane container's kubeconfig, by
	// container id.
	kubeconfigs sync.Map
}

// Option configures a Manager.
type Option func(*Manager)

// WithNodeImage sets the node image new sandboxes use by default.
func WithNodeImage(ref string) Option { return func(m *Manager) { m.image = ref } }

// WithLogger sets the logger for kind's and the manager's messages.
func WithLogger(l *slog.Logger) Option { return func(m *Manager) { m.log = l } }

// WithStateDir sets the folder for kind's scratch kubeconfig.
func WithStateDir(dir string) Option { return func(m *Manager) { m.stateDir = dir } }

// DefaultNodeImage is the image sandboxes use unless configured otherwise.
const DefaultNodeImage = "podpath/node:latest"

// DefaultNetworkPool is where sandbox networks get their subnets.
const DefaultNetworkPool = "10.210.0.0/16"

// NewManager returns a Manager for the local Docker engine.
func NewManager(opts ...Option) *Manager {
	m := &Manager{
		log:      slog.New(slog.DiscardHandler),
		image:    envOr("PODPATH_NODE_IMAGE", DefaultNodeImage),
		stateDir: envOr("PODPATH_STATE_DIR", "/var/lib/podpath"),
		pool:     envOr("PODPATH_NETWORK_POOL", DefaultNetworkPool),
	}
	for _, o := range opts {
		o(m)
	}
	m.provider = cluster.NewProvider(cluster.ProviderWithDocker(), cluster.ProviderWithLogger(kindLogger{log: m.log}))
	return m
}

// NodeImage is the image new sandboxes use by default.
func (m *Manager) NodeImage() string { return m.image }

// kindKubeconfig is the kubeconfig file kind writes a cluster into on
// create and removes it from on delete, one per cluster. kind guards the
// file with a lock file that fails at once when taken ("failed to lock
// config file: ... file exists"): one file shared by every cluster made
// concurrent creates and deletes (a class ending at once, two servers on one
// host) fail each other. podpath never reads it: the admin kubeconfig comes
// from the control plane itself (Kubeconfig).
func (m *Manager) kindKubeconfig(name string) string {
	return filepath.Join(m.stateDir, "kind", name+".kubeconfig")
}

// prepareKindKubeconfig makes the folder of name's kind kubeconfig and
// removes a lock file a killed create or delete of the same cluster left
// (only one create or delete of a cluster runs at a time).
func (m *Manager) prepareKindKubeconfig(name string) (string, error) {
	p := m.kindKubeconfig(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", fmt.Errorf("state folder: %w", err)
	}
	if err := os.Remove(p + ".lock"); err != nil && !os.IsNotExist(err) {
		return "", err
	}
	return p, nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func kindName(name string) string { return kindPrefix + name }

func networkName(name string) string { return kindPrefix + name }
