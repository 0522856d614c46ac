package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/kind/pkg/cluster"
	kindexec "sigs.k8s.io/kind/pkg/exec"

	"github.com/podpath/podpath/internal/dockercli"
)

// Spec is the shape of a sandbox to create.
type Spec struct {
	Name    string
	Workers int
	// Image is the node image; the manager's default when empty.
	Image string
	// Retain keeps a failed sandbox's containers for debugging.
	Retain bool
	// Publish opens ports of this host onto the control plane node (kind's
	// extraPortMappings), on every address: scripts/kube-up publishes a
	// host cluster's NodePort Service this way. The Docker backend only.
	Publish []PortMapping
	// Worker is the least each worker must be able to use (a lab's
	// cluster.worker). The Docker backend's nodes have no limits, so it
	// needs nothing; the Kubernetes backend sizes its worker Pods by it.
	Worker Size
}

// Size is a node's CPU in millicores and memory in MiB; a zero field is
// the backend's default.
type Size struct {
	MilliCPU  int64 `json:"milliCPU,omitempty"`
	MemoryMiB int64 `json:"memoryMiB,omitempty"`
}

// PortMapping is one published port: HostPort on this host forwards to
// NodePort on the control plane node.
type PortMapping struct {
	HostPort, NodePort int32
}

// ParsePortMapping reads HOST:NODE, as `podpath sandbox create --publish`
// takes it.
func ParsePortMapping(s string) (PortMapping, error) {
	h, n, ok := strings.Cut(s, ":")
	hp, herr := strconv.ParseUint(h, 10, 16)
	np, nerr := strconv.ParseUint(n, 10, 16)
	if !ok || herr != nil || nerr != nil || hp == 0 || np == 0 {
		return PortMapping{}, fmt.Errorf("--publish %q: want HOST:NODE, two ports from 1 to 65535 (e.g. 8090:30080)", s)
	}
	return PortMapping{HostPort: int32(hp), NodePort: int32(np)}, nil
}

// Stages of provisioning, in the order they happen.
const (
	StageNetwork      = "network"
	StageNodes        = "nodes"
	StageConfig       = "config"
	StageControlPlane = "control-plane"
	StageCNI          = "cni"
	StageStorage      = "storage"
	StageWorkers      = "workers"
	StageNodeSetup    = "node-setup"
	StageNodesReady   = "nodes-ready"
	StageDNS          = "dns"
	StagePodNetwork   = "pod-network"
)

// StageTitles says in a few words what each stage does.
var StageTitles = map[string]string{
	StageNetwork:      "Docker network for this cluster",
	StageNodes:        "Node containers",
	StageConfig:       "kubeadm configuration",
	StageControlPlane: "Control plane (kubeadm init)",
	StageCNI:          "Pod network (flannel CNI)",
	StageStorage:      "Default StorageClass",
	StageWorkers:      "Workers join (kubeadm join)",
	StageNodeSetup:    "Node names, hosts and SSH keys",
	StageNodesReady:   "Every node Ready",
	StageDNS:          "CoreDNS running",
	StagePodNetwork:   "Pod-to-Pod traffic across nodes",
}

// kindStages maps the start of kind's status lines to podpath stages.
var kindStages = []struct{ prefix, stage string }{
	{"Preparing nodes", StageNodes},
	{"Writing configuration", StageConfig},
	{"Starting control-plane", StageControlPlane},
	{"Installing CNI", StageCNI},
	{"Installing StorageClass", StageStorage},
	{"Joining worker nodes", StageWorkers},
}

// Event reports progress of a Create.
type Event struct {
	Stage   string        `json:"stage"`
	Title   string        `json:"title"`
	Done    bool          `json:"done"`
	Failed  bool          `json:"failed,omitempty"`
	Elapsed time.Duration `json:"elapsed"`
}

// Create makes a sandbox of one control plane and spec.Workers workers and
// returns once every node is Ready, CoreDNS runs and a Pod on one node has
// reached a Pod on another. progress, if not nil, receives each stage as it
// starts and ends. On failure nothing of the sandbox is left behind (unless
// spec.Retain).
func (m *Manager) Create(ctx context.Context, spec Spec, progress func(Event)) (info *Info, err error) {
	if err := ValidateName(spec.Name); err != nil {
		return nil, err
	}
	if spec.Workers < 0 || spec.Workers > MaxWorkers {
		return nil, fmt.Errorf("a sandbox has 0 to %d workers, not %d", MaxWorkers, spec.Workers)
	}
	if spec.Image == "" {
		spec.Image = m.image
	}
	if err := dockercli.Ping(ctx); err != nil {
		return nil, err
	}
	if ok, err := dockercli.ImageExists(ctx, spec.Image); err != nil {
		return nil, err
	} else if !ok {
		return nil, fmt.Errorf("node image %s is not in the local Docker engine: build it with `podpath nodeimage build`, or load it with `docker load`", spec.Image)
	}
	if existing, err := m.provider.List(); err != nil {
		return nil, fmt.Errorf("list kind clusters: %w", err)
	} else {
		for _, c := range existing {
			if c == kindName(spec.Name) {
				return nil, fmt.Errorf("sandbox %q already exists: delete it first (podpath sandbox delete %s)", spec.Name, spec.Name)
			}
		}
	}

	start := time.Now()
	var evMu sync.Mutex
	current := ""
	emit := func(stage string, done, failed bool) {
		evMu.Lock()
		defer evMu.Unlock()
		if !done {
			current = stage
		}
		if progress == nil {
			return
		}
		progress(Event{Stage: stage, Title: StageTitles[stage], Done: done, Failed: failed, Elapsed: time.Since(start)})
	}
	run := func(stage string, fn func() error) error {
		emit(stage, false, false)
		if err := fn(); err != nil {
			emit(stage, true, true)
			return fmt.Errorf("%s: %w", StageTitles[stage], err)
		}
		emit(stage, true, false)
		return nil
	}
	defer func() {
		if err != nil && !spec.Retain {
			m.log.Warn("sandbox create failed; removing what was made", "sandbox", spec.Name, "err", err)
			if derr := m.Delete(context.WithoutCancel(ctx), spec.Name); derr != nil {
				err = errors.Join(err, fmt.Errorf("clean up after the failure: %w", derr))
			}
		}
	}()

	if err := run(StageNetwork, func() error { return m.ensureNetwork(ctx, spec.Name) }); err != nil {
		return nil, err
	}
	if err := m.kindCreate(ctx, spec, func(title string, done, failed bool) {
		for _, s := range kindStages {
			if strings.HasPrefix(title, s.prefix) {
				emit(s.stage, done, failed)
				return
			}
		}
	}); err != nil {
		evMu.Lock()
		failedStage := current
		evMu.Unlock()
		if failedStage != "" {
			return nil, fmt.Errorf("%s: %w", StageTitles[failedStage], err)
		}
		return nil, err
	}
	var nodes []Node
	if err := run(StageNodeSetup, func() (err error) {
		if nodes, err = m.nodes(ctx, spec.Name); err != nil {
			return err
		}
		return m.setupNodes(ctx, nodes)
	}); err != nil {
		return nil, err
	}
	client, err := m.Client(ctx, spec.Name)
	if err != nil {
		return nil, err
	}
	// The Pod-to-Pod probe starts as soon as the nodes are named: its Pods
	// are bound to their nodes and tolerate every taint, so each kubelet
	// starts them the moment its Pod network is up (it retries a sandbox
	// every second while the network is not ready). It runs while the nodes
	// and CoreDNS become Ready, and its stage is reported last, in the order
	// a learner reads.
	probeCtx, cancelProbe := context.WithCancel(ctx)
	defer cancelProbe()
	probed := make(chan error, 1)
	go func() { probed <- ProbePodNetwork(probeCtx, client, nodes) }()
	stopProbe := func() {
		cancelProbe()
		<-probed // its deferred clean-up has run when it returns
	}
	if err := run(StageNodesReady, func() error { return WaitNodesReady(ctx, client, len(nodes), 4*time.Minute) }); err != nil {
		stopProbe()
		return nil, err
	}
	if err := run(StageDNS, func() error { return WaitCoreDNS(ctx, client, 4*time.Minute) }); err != nil {
		stopProbe()
		return nil, err
	}
	if err := run(StagePodNetwork, func() error { return <-probed }); err != nil {
		return nil, err
	}
	return m.Get(ctx, spec.Name)
}

// kindCreate runs kind's Create with the sandbox's network, node image and
// node names. kind reads the network from the process environment before it
// starts any node ("Preparing nodes"), so the variable is held only until then.
func (m *Manager) kindCreate(ctx context.Context, spec Spec, onStatus func(title string, done, failed bool)) error {
	kubeconfig, err := m.prepareKindKubeconfig(spec.Name)
	if err != nil {
		return err
	}
	// Written by kind, read by nobody.
	defer os.Remove(kubeconfig)
	m.envMu.Lock()
	var once sync.Once
	release := func() { once.Do(m.envMu.Unlock) }
	defer release()
	if err := os.Setenv("KIND_EXPERIMENTAL_DOCKER_NETWORK", networkName(spec.Name)); err != nil {
		return err
	}
	signCtx, stopSigning := context.WithCancel(ctx)
	defer stopSigning()
	logger := kindLogger{log: m.log.With("sandbox", spec.Name), onStatus: func(title string, done, failed bool) {
		if !done && strings.HasPrefix(title, "Preparing nodes") {
			release()
		}
		// kubeadm init is done when kind installs the CNI, and join
		// follows the CNI and the StorageClass.
		if !done && strings.HasPrefix(title, "Installing CNI") {
			go m.quickCoreDNSReadiness(signCtx, spec.Name)
			if spec.Workers > 0 {
				go m.signClusterInfo(signCtx, spec.Name)
			}
		}
		onStatus(title, done, failed)
	}}
	provider := cluster.NewProvider(cluster.ProviderWithDocker(), cluster.ProviderWithLogger(logger))
	done := make(chan error, 1)
	go func() {
		done <- provider.Create(kindName(spec.Name),
			cluster.CreateWithV1Alpha4Config(kindConfig(spec)),
			cluster.CreateWithNodeImage(spec.Image),
			cluster.CreateWithRetain(spec.Retain),
			cluster.CreateWithWaitForReady(0),
			cluster.CreateWithKubeconfigPath(kubeconfig),
			cluster.CreateWithDisplayUsage(false),
			cluster.CreateWithDisplaySalutation(false),
		)
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("kind create: %w%s", err, kindOutput(err))
		}
		return ctx.Err()
	case <-ctx.Done():
		// kind's Create takes no context: let it finish, then the caller
		// deletes what it made.
		<-done
		return ctx.Err()
	}
}

// kindConfig describes the cluster to kind. Each node registers with
// Kubernetes under its podpath alias, so kubectl get nodes shows
// controlplane and node01, as the labs say.
func kindConfig(spec Spec) *v1alpha4.Cluster {
	cfg := &v1alpha4.Cluster{
		TypeMeta: v1alpha4.TypeMeta{Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"},
	}
	cp := v1alpha4.Node{
		Role:                 v1alpha4.ControlPlaneRole,
		KubeadmConfigPatches: []string{nodeNamePatch("InitConfiguration", ControlPlane)},
	}
	for _, p := range spec.Publish {
		cp.ExtraPortMappings = append(cp.ExtraPortMappings, v1alpha4.PortMapping{
			ContainerPort: p.NodePort, HostPort: p.HostPort, ListenAddress: "0.0.0.0", Protocol: v1alpha4.PortMappingProtocolTCP,
		})
	}
	cfg.Nodes = append(cfg.Nodes, cp)
	for i := 1; i <= spec.Workers; i++ {
		cfg.Nodes = append(cfg.Nodes, v1alpha4.Node{
			Role:                 v1alpha4.WorkerRole,
			KubeadmConfigPatches: []string{nodeNamePatch("JoinConfiguration", WorkerAlias(i))},
		})
	}
	return cfg
}

// kindOutput quotes the end of a failed command's output, which kind keeps
// out of its error message.
func kindOutput(err error) string {
	re := kindexec.RunErrorForError(err)
	if re == nil || len(re.Output) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(re.Output)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return ": " + strings.Join(lines, "\n")
}

func nodeNamePatch(kind, name string) string {
	return fmt.Sprintf("kind: %s\nnodeRegistration:\n  name: %s\n", kind, name)
}
