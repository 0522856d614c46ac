package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/podpath/podpath/internal/names"
	"github.com/podpath/podpath/sandbox"
)

// Backend runs learner clusters as Pods of a host Kubernetes cluster: the
// second sandbox backend, beside sandbox.Manager's Docker containers. It
// makes the node Pods (pods.go), bootstraps the learner's cluster inside
// them as kind does in Docker containers (kubeadm init and join, flannel,
// the default StorageClass, then podpath's node set-up), and reaches them
// through the host's API server only: commands and terminals by the exec
// API, the learner's API server by a port-forward (dial.go).
type Backend struct {
	cs   kubernetes.Interface
	cfg  *rest.Config
	opts Options
	log  *slog.Logger

	// kubeconfigs caches each control-plane Pod's admin kubeconfig, by
	// the Pod's UID (a Pod made again under the same name has another).
	kubeconfigs sync.Map
}

// New returns a Backend that writes its Pods with cfg's credentials.
func New(cfg *rest.Config, opts Options, log *slog.Logger) (*Backend, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	RouteKlog(log)
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("host cluster client: %w", err)
	}
	return &Backend{cs: cs, cfg: cfg, opts: opts.withDefaults(), log: log}, nil
}

// Options are the backend's settings, defaults filled in.
func (b *Backend) Options() Options { return b.opts }

// Bootstrap timeouts. A node Pod is Running within seconds once its image
// is on the lab node; Pending longer than podStartTimeout means the pool
// has no room (or no image), and the message says which.
const (
	podStartTimeout  = 3 * time.Minute
	bootTimeout      = 2 * time.Minute
	commandTimeout   = 4 * time.Minute
	readyTimeout     = 4 * time.Minute
	nodeContainer    = "node"
	kubeadmConfigDir = "/kind/kubeadm.conf"
	adminConf        = "/etc/kubernetes/admin.conf"
)

// Create makes a learner cluster of one control plane and spec.Workers
// workers, each a Pod on the lab pool, and returns once every node is
// Ready, CoreDNS runs and a Pod on one node has reached a Pod on another:
// what sandbox.Manager.Create promises, with the same stages reported to
// progress. On failure nothing of the cluster is left (unless spec.Retain).
func (b *Backend) Create(ctx context.Context, spec sandbox.Spec, progress func(sandbox.Event)) (info *sandbox.Info, err error) {
	if err := sandbox.ValidateName(spec.Name); err != nil {
		return nil, err
	}
	if spec.Workers < 0 || spec.Workers > sandbox.MaxWorkers {
		return nil, fmt.Errorf("a sandbox has 0 to %d workers, not %d", sandbox.MaxWorkers, spec.Workers)
	}
	if err := CheckName(spec.Name, spec.Workers); err != nil {
		return nil, err
	}
	if len(spec.Publish) > 0 {
		return nil, errors.New("published ports (--publish) are for the docker backend: on the kubernetes backend expose a learner's port with a Service of the host cluster")
	}
	opts := b.opts
	if spec.Image != "" {
		opts.Image = spec.Image
	}
	opts.Worker = opts.WorkerSize(spec.Worker)
	if all, err := b.names(ctx); err != nil {
		return nil, err
	} else if slices.Contains(all, spec.Name) {
		return nil, fmt.Errorf("sandbox %q already exists: delete it first (podpath sandbox delete %s)", spec.Name, spec.Name)
	}

	start := time.Now()
	run := func(stage string, fn func() error) error {
		if progress != nil {
			progress(sandbox.Event{Stage: stage, Title: sandbox.StageTitles[stage], Elapsed: time.Since(start)})
		}
		err := fn()
		if progress != nil {
			progress(sandbox.Event{Stage: stage, Title: sandbox.StageTitles[stage], Done: true, Failed: err != nil, Elapsed: time.Since(start)})
		}
		if err != nil {
			return fmt.Errorf("%s: %w", sandbox.StageTitles[stage], err)
		}
		return nil
	}
	defer func() {
		if err != nil && !spec.Retain {
			b.log.Warn("sandbox create failed; removing what was made", "sandbox", spec.Name, "err", err)
			if derr := b.Delete(context.WithoutCancel(ctx), spec.Name); derr != nil {
				err = errors.Join(err, fmt.Errorf("clean up after the failure: %w", derr))
			}
		}
	}()

	var nodes []sandbox.Node
	if err := run(sandbox.StageNodes, func() (err error) {
		nodes, err = b.startPods(ctx, opts, spec)
		return err
	}); err != nil {
		return nil, err
	}
	cp := nodes[0]
	token := bootstrapToken()
	if err := run(sandbox.StageConfig, func() error {
		version, err := b.output(ctx, spec.Name, cp.Alias, "cat", "/kind/version")
		if err != nil {
			return fmt.Errorf("read the node image's Kubernetes version: %w", err)
		}
		var g errgroup.Group
		for _, n := range nodes {
			cfg, err := kubeadmValues{
				Version: strings.TrimSpace(version), ClusterName: spec.Name,
				ControlPlaneIP: cp.IP, NodeName: n.Alias, NodeIP: n.IP, Token: token,
				PodSubnet: DefaultPodSubnet, ServiceSubnet: DefaultServiceSubnet,
			}.render()
			if err != nil {
				return err
			}
			g.Go(func() error {
				_, err := b.run(ctx, spec.Name, n.Alias, strings.NewReader(cfg), "sh", "-c", "cat > "+kubeadmConfigDir)
				return err
			})
		}
		return g.Wait()
	}); err != nil {
		return nil, err
	}
	if err := run(sandbox.StageControlPlane, func() error {
		if _, err := b.run(ctx, spec.Name, cp.Alias, nil, "kubeadm", "init", "--config="+kubeadmConfigDir, "--skip-token-print", "--v=1"); err != nil {
			return err
		}
		if spec.Workers == 0 {
			// One node runs the learner's Pods too, as kind does it.
			if _, err := b.run(ctx, spec.Name, cp.Alias, nil, "kubectl", "--kubeconfig="+adminConf, "taint", "nodes", "--all", "node-role.kubernetes.io/control-plane-"); err != nil {
				return err
			}
			if _, err := b.run(ctx, spec.Name, cp.Alias, nil, "kubectl", "--kubeconfig="+adminConf, "label", "nodes", "--all", "node.kubernetes.io/exclude-from-external-load-balancers-"); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := run(sandbox.StageCNI, func() error {
		manifest, err := b.output(ctx, spec.Name, cp.Alias, "cat", "/kind/manifests/default-cni.yaml")
		if err != nil {
			return fmt.Errorf("read the CNI manifest: %w", err)
		}
		if manifest, err = cniManifest(manifest, cp.IP+":6443"); err != nil {
			return err
		}
		_, err = b.run(ctx, spec.Name, cp.Alias, strings.NewReader(manifest), "kubectl", "--kubeconfig="+adminConf, "apply", "-f", "-")
		return err
	}); err != nil {
		return nil, err
	}
	if err := run(sandbox.StageStorage, func() error {
		// The node image's storage manifest, or a host-path default
		// StorageClass where it has none (as kind does it).
		manifest, err := b.output(ctx, spec.Name, cp.Alias, "sh", "-c", "cat /kind/manifests/default-storage.yaml 2>/dev/null || true")
		if err != nil {
			return err
		}
		if strings.TrimSpace(manifest) == "" {
			manifest = defaultStorageClass
		}
		_, err = b.run(ctx, spec.Name, cp.Alias, strings.NewReader(manifest), "kubectl", "--kubeconfig="+adminConf, "apply", "-f", "-")
		return err
	}); err != nil {
		return nil, err
	}
	if spec.Workers > 0 {
		if err := run(sandbox.StageWorkers, func() error {
			var g errgroup.Group
			for _, n := range nodes[1:] {
				g.Go(func() error {
					_, err := b.run(ctx, spec.Name, n.Alias, nil, "kubeadm", "join", "--config", kubeadmConfigDir, "--skip-phases=preflight", "--v=1")
					return err
				})
			}
			return g.Wait()
		}); err != nil {
			return nil, err
		}
	}
	if err := run(sandbox.StageNodeSetup, func() error {
		scripts, err := sandbox.NodeSetupScripts(nodes)
		if err != nil {
			return err
		}
		var g errgroup.Group
		for _, n := range nodes {
			g.Go(func() error {
				_, err := b.run(ctx, spec.Name, n.Alias, strings.NewReader(scripts[n.Alias]), "sh", "-s")
				return err
			})
		}
		return g.Wait()
	}); err != nil {
		return nil, err
	}
	client, err := b.Client(ctx, spec.Name)
	if err != nil {
		return nil, err
	}
	// As on Docker: the Pod-to-Pod probe runs while the nodes and CoreDNS
	// become Ready, and is reported last.
	probeCtx, cancelProbe := context.WithCancel(ctx)
	defer cancelProbe()
	probed := make(chan error, 1)
	go func() { probed <- sandbox.ProbePodNetwork(probeCtx, client, nodes) }()
	stopProbe := func() {
		cancelProbe()
		<-probed
	}
	if err := run(sandbox.StageNodesReady, func() error {
		return sandbox.WaitNodesReady(ctx, client, len(nodes), readyTimeout)
	}); err != nil {
		stopProbe()
		return nil, err
	}
	if err := run(sandbox.StageDNS, func() error { return sandbox.WaitCoreDNS(ctx, client, readyTimeout) }); err != nil {
		stopProbe()
		return nil, err
	}
	if err := run(sandbox.StagePodNetwork, func() error { return <-probed }); err != nil {
		return nil, err
	}
	return b.Get(ctx, spec.Name)
}

// startPods makes the cluster's NetworkPolicy and node Pods and waits until
// every node's systemd has booted. The workers are made once the control
// plane's Pod has an address (they name it in /etc/hosts from their first
// boot, and are placed beside it).
func (b *Backend) startPods(ctx context.Context, opts Options, spec sandbox.Spec) ([]sandbox.Node, error) {
	if _, err := b.cs.NetworkingV1().NetworkPolicies(opts.Namespace).Create(ctx, opts.NetworkPolicy(spec.Name), metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("NetworkPolicy: %w", err)
	}
	if _, err := b.cs.CoreV1().Pods(opts.Namespace).Create(ctx, opts.ControlPlanePod(spec.Name), metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("control-plane Pod: %w", err)
	}
	cp, err := b.waitRunning(ctx, PodName(spec.Name, names.ControlPlane))
	if err != nil {
		return nil, err
	}
	for i := 1; i <= spec.Workers; i++ {
		if _, err := b.cs.CoreV1().Pods(opts.Namespace).Create(ctx, opts.WorkerPod(spec.Name, i, cp.Status.PodIP), metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("worker Pod %d: %w", i, err)
		}
	}
	for i := 1; i <= spec.Workers; i++ {
		if _, err := b.waitRunning(ctx, PodName(spec.Name, names.Worker(i))); err != nil {
			return nil, err
		}
	}
	pods, err := b.pods(ctx, spec.Name)
	if err != nil {
		return nil, err
	}
	nodes := nodesOf(pods)
	var g errgroup.Group
	for _, n := range nodes {
		g.Go(func() error { return b.waitBooted(ctx, spec.Name, n.Alias) })
	}
	return nodes, g.Wait()
}

// waitRunning waits until a node Pod runs and has an address. It gives up
// at once where the Pod cannot start (its image is not on the node, it
// failed) and after podStartTimeout where it stays unscheduled, saying why.
func (b *Backend) waitRunning(ctx context.Context, pod string) (*corev1.Pod, error) {
	var last *corev1.Pod
	var fatal error
	var since time.Time // first seen unschedulable
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, podStartTimeout, true, func(ctx context.Context) (bool, error) {
		p, err := b.cs.CoreV1().Pods(b.opts.Namespace).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		if why, ok := unschedulable(p); ok {
			if since.IsZero() {
				since = time.Now()
			} else if time.Since(since) >= noRoomAfter {
				fatal = fmt.Errorf("%w: node Pod %s: %s", sandbox.ErrNoRoom, pod, why)
				return false, fatal
			}
		} else {
			since = time.Time{}
		}
		switch p.Status.Phase {
		case corev1.PodRunning:
			return p.Status.PodIP != "", nil
		case corev1.PodFailed, corev1.PodSucceeded:
			fatal = fmt.Errorf("node Pod %s stopped: %s", pod, podStatus(p))
			return false, fatal
		}
		for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			if w := cs.State.Waiting; w != nil {
				switch w.Reason {
				case "ErrImageNeverPull", "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError":
					fatal = fmt.Errorf("node Pod %s cannot start: %s: %s (is the node image %s on the lab nodes?)", pod, w.Reason, w.Message, cs.Image)
					return false, fatal
				}
			}
		}
		return false, nil
	})
	if fatal != nil {
		return nil, fatal
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if last == nil {
			return nil, fmt.Errorf("node Pod %s: not found after %s", pod, podStartTimeout)
		}
		return nil, fmt.Errorf("node Pod %s not running after %s: %s", pod, podStartTimeout, podStatus(last))
	}
	return last, nil
}

// noRoomAfter is how long a node Pod stays unschedulable, with no node
// nominated for it by preemption, before its create gives up with
// sandbox.ErrNoRoom (the scheduler retries a Pod it could not place; a
// few seconds let a just-freed node count).
const noRoomAfter = 10 * time.Second

// unschedulable says whether the host's scheduler could place the Pod
// nowhere, and its reason; a Pod for which preemption has nominated a node
// is on its way.
func unschedulable(p *corev1.Pod) (string, bool) {
	if p.Spec.NodeName != "" || p.Status.NominatedNodeName != "" {
		return "", false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.Message, true
		}
	}
	return "", false
}

// podStatus says in one line why a Pod is where it is: its phase, and the
// scheduler's or the kubelet's reason.
func podStatus(p *corev1.Pod) string {
	parts := []string{string(p.Status.Phase)}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue && c.Message != "" {
			parts = append(parts, "not scheduled: "+c.Message)
		}
	}
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			parts = append(parts, cs.Name+" "+w.Reason+" "+w.Message)
		}
		if t := cs.State.Terminated; t != nil && (t.ExitCode != 0 || cs.Name == nodeContainer) {
			parts = append(parts, fmt.Sprintf("%s exited %d %s", cs.Name, t.ExitCode, t.Reason))
		}
	}
	if p.Status.Message != "" {
		parts = append(parts, p.Status.Message)
	}
	return strings.TrimSpace(strings.Join(parts, "; "))
}

// waitBooted waits until the node's systemd has finished starting up
// (containerd and sshd run; kubelet waits for its configuration).
func (b *Backend) waitBooted(ctx context.Context, name, alias string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, bootTimeout, true, func(ctx context.Context) (bool, error) {
		var out bytes.Buffer
		_, err := b.Target(name).Exec(ctx, alias, []string{"systemctl", "is-system-running"}, nil, &out, &out)
		last = strings.TrimSpace(out.String())
		if err != nil {
			last = err.Error()
			return false, nil
		}
		// degraded: a unit failed, which kind's nodes show too (the
		// kubelet restarts until kubeadm writes its configuration).
		return last == "running" || last == "degraded", nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("node %s: systemd not up after %s (%s)", alias, bootTimeout, last)
	}
	return nil
}

// run runs a command in a node during bootstrap and fails with the end of
// its output when it exits non-zero.
func (b *Backend) run(ctx context.Context, name, alias string, stdin io.Reader, cmd ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	var out bytes.Buffer
	code, err := b.Target(name).Exec(ctx, alias, cmd, stdin, &out, &out)
	if err != nil {
		return out.String(), fmt.Errorf("%s on %s: %w", cmd[0], alias, err)
	}
	if code != 0 {
		said := tail(out.String(), 15)
		if said == "" {
			said = "(no output)"
		}
		return out.String(), fmt.Errorf("%s on %s exited %d: %s", strings.Join(cmd, " "), alias, code, said)
	}
	return out.String(), nil
}

func (b *Backend) output(ctx context.Context, name, alias string, cmd ...string) (string, error) {
	return b.run(ctx, name, alias, nil, cmd...)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// pods lists a sandbox's node Pods of this installation.
func (b *Backend) pods(ctx context.Context, name string) ([]corev1.Pod, error) {
	sel := labels.Set{LabelInstallation: b.opts.Installation, LabelSandbox: name}.String()
	list, err := b.cs.CoreV1().Pods(b.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list node Pods of %s: %w", name, err)
	}
	return list.Items, nil
}

// nodesOf describes node Pods as sandbox nodes, control plane first, then
// the workers in order.
func nodesOf(pods []corev1.Pod) []sandbox.Node {
	var nodes []sandbox.Node
	for _, p := range pods {
		alias := p.Labels[LabelNode]
		role := "worker"
		if alias == names.ControlPlane {
			role = "control-plane"
		}
		state := strings.ToLower(string(p.Status.Phase))
		if p.DeletionTimestamp != nil {
			state = "removing"
		} else if p.Status.Phase == corev1.PodRunning {
			state = sandbox.StateRunning
			if p.Annotations[AnnotationHibernated] == "true" {
				state = sandbox.StatePaused
			}
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == nodeContainer && cs.State.Running == nil {
					state = "exited"
				}
			}
		}
		nodes = append(nodes, sandbox.Node{Alias: alias, Container: p.Name, Role: role, IP: p.Status.PodIP, State: state})
	}
	sort.Slice(nodes, func(i, j int) bool {
		if (nodes[i].Alias == names.ControlPlane) != (nodes[j].Alias == names.ControlPlane) {
			return nodes[i].Alias == names.ControlPlane
		}
		return nodes[i].Alias < nodes[j].Alias
	})
	return nodes
}

// Get describes one sandbox, or returns an error wrapping
// sandbox.ErrNotFound.
func (b *Backend) Get(ctx context.Context, name string) (*sandbox.Info, error) {
	if err := sandbox.ValidateName(name); err != nil {
		return nil, err
	}
	pods, err := b.pods(ctx, name)
	if err != nil {
		return nil, err
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("sandbox %q: %w", name, sandbox.ErrNotFound)
	}
	nodes := nodesOf(pods)
	if nodes[0].Alias != names.ControlPlane {
		// A Pod of a host cluster can go alone (preempted, deleted by
		// hand): the cluster is there and broken, which the engine's
		// health check fails it for.
		nodes = append([]sandbox.Node{{Alias: names.ControlPlane, Container: PodName(name, names.ControlPlane), Role: "control-plane", State: "missing"}}, nodes...)
	}
	return &sandbox.Info{Name: name, Nodes: nodes, State: sandbox.StateOf(nodes)}, nil
}

// List describes every sandbox of this installation.
func (b *Backend) List(ctx context.Context) ([]sandbox.Info, error) {
	names, err := b.names(ctx)
	if err != nil {
		return nil, err
	}
	var out []sandbox.Info
	for _, n := range names {
		info, err := b.Get(ctx, n)
		if errors.Is(err, sandbox.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, *info)
	}
	return out, nil
}

// names lists the sandboxes of this installation that have a Pod or a
// NetworkPolicy.
func (b *Backend) names(ctx context.Context) ([]string, error) {
	sel := labels.Set{LabelManagedBy: managedBy, LabelInstallation: b.opts.Installation}.String()
	pods, err := b.cs.CoreV1().Pods(b.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list node Pods: %w", err)
	}
	pols, err := b.cs.NetworkingV1().NetworkPolicies(b.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list NetworkPolicies: %w", err)
	}
	seen := map[string]bool{}
	var out []string
	add := func(l map[string]string) {
		if n := l[LabelSandbox]; n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, p := range pods.Items {
		add(p.Labels)
	}
	for _, p := range pols.Items {
		add(p.Labels)
	}
	sort.Strings(out)
	return out, nil
}

// Reconcile returns the sandboxes of this installation the host cluster
// has that known does not name (a crashed server's, for one).
func (b *Backend) Reconcile(ctx context.Context, known []string) ([]string, error) {
	all, err := b.names(ctx)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, k := range known {
		want[k] = true
	}
	var orphans []string
	for _, n := range all {
		if !want[n] {
			orphans = append(orphans, n)
		}
	}
	return orphans, nil
}

// Delete removes a sandbox's Pods and NetworkPolicy and waits until the
// Pods are gone (their room on the lab pool is free again). Deleting a
// sandbox that does not exist is not an error.
func (b *Backend) Delete(ctx context.Context, name string) error {
	if err := sandbox.ValidateName(name); err != nil {
		return err
	}
	sel := labels.Set{LabelInstallation: b.opts.Installation, LabelSandbox: name}.String()
	grace := int64(2)
	if err := b.cs.CoreV1().Pods(b.opts.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &grace}, metav1.ListOptions{LabelSelector: sel}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete node Pods of %s: %w", name, err)
	}
	if err := b.cs.NetworkingV1().NetworkPolicies(b.opts.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: sel}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete the NetworkPolicy of %s: %w", name, err)
	}
	var left string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := b.pods(ctx, name)
		if err != nil {
			left = err.Error()
			return false, nil
		}
		left = fmt.Sprintf("%d node Pods still there", len(pods))
		return len(pods) == 0, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("delete sandbox %s: not done after 2m: %s", name, left)
	}
	return nil
}

// Hibernate marks the cluster hibernated and keeps it running. On this
// backend a frozen seat costs the lab pool what a running one does: the
// scheduler counts a Pod's requests, not its use, and a node Pod's requests
// are its limits (Guaranteed QoS). The mark (an annotation on the node
// Pods) keeps the state the engine and a restarted server read the same as
// on Docker; docs/KUBERNETES.md says what freezing would save.
func (b *Backend) Hibernate(ctx context.Context, name string) error {
	return b.mark(ctx, name, true)
}

// Resume takes the mark off: the cluster never stopped.
func (b *Backend) Resume(ctx context.Context, name string) error {
	return b.mark(ctx, name, false)
}

// AnnotationHibernated marks the node Pods of a hibernated sandbox.
const AnnotationHibernated = "podpath.dev/hibernated"

func (b *Backend) mark(ctx context.Context, name string, on bool) error {
	info, err := b.Get(ctx, name)
	if err != nil {
		return err
	}
	value := "null"
	if on {
		value = `"true"`
	}
	patch := []byte(`{"metadata":{"annotations":{"` + AnnotationHibernated + `":` + value + `}}}`)
	for _, n := range info.Nodes {
		if n.State == "missing" {
			continue
		}
		if _, err := b.cs.CoreV1().Pods(b.opts.Namespace).Patch(ctx, n.Container, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("mark node Pod %s: %w", n.Container, err)
		}
	}
	return nil
}

// WaitReady waits until every node of the sandbox is Ready with a fresh
// lease (see sandbox.Manager.WaitReady).
func (b *Backend) WaitReady(ctx context.Context, name string, timeout time.Duration) error {
	since := time.Now().Add(-time.Second)
	c, err := b.Client(ctx, name)
	if err != nil {
		return err
	}
	return sandbox.WaitLeases(ctx, c, name, since, timeout)
}

// WaitAPI waits until the sandbox's API server answers.
func (b *Backend) WaitAPI(ctx context.Context, name string, timeout time.Duration) error {
	c, err := b.Client(ctx, name)
	if err != nil {
		return err
	}
	return sandbox.WaitAPIServer(ctx, c, name, timeout)
}

// Kubeconfig is the learner cluster's admin kubeconfig as its control
// plane has it (the API server at the control-plane Pod's address, which
// only the cluster's own nodes can reach).
func (b *Backend) Kubeconfig(ctx context.Context, name string) (string, error) {
	pod, err := b.cs.CoreV1().Pods(b.opts.Namespace).Get(ctx, PodName(name, names.ControlPlane), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("sandbox %q: %w", name, sandbox.ErrNotFound)
	}
	if err != nil {
		return "", err
	}
	if pod.Labels[LabelInstallation] != b.opts.Installation {
		return "", fmt.Errorf("sandbox %q: %w (Pod %s belongs to installation %q)", name, sandbox.ErrNotFound, pod.Name, pod.Labels[LabelInstallation])
	}
	if v, ok := b.kubeconfigs.Load(pod.UID); ok {
		return v.(string), nil
	}
	kc, err := b.output(ctx, name, names.ControlPlane, "cat", adminConf)
	if err != nil {
		return "", fmt.Errorf("kubeconfig of sandbox %s: %w", name, err)
	}
	b.kubeconfigs.Store(pod.UID, kc)
	return kc, nil
}

// RESTConfig is a client configuration for the sandbox's API server,
// reached through a port-forward to the control-plane Pod (dial.go).
func (b *Backend) RESTConfig(ctx context.Context, name string) (*rest.Config, error) {
	kc, err := b.Kubeconfig(ctx, name)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(kc))
	if err != nil {
		return nil, fmt.Errorf("parse kubeconfig of sandbox %s: %w", name, err)
	}
	// The certificate names 127.0.0.1 (kubeadm.go); the dialer ignores
	// the address.
	cfg.Host = "https://127.0.0.1:6443"
	cfg.Dial = podDialer{cs: b.cs, cfg: b.cfg, namespace: b.opts.Namespace, pod: PodName(name, names.ControlPlane), port: 6443}.DialContext
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}

// Client is a Kubernetes client for the sandbox's API server.
func (b *Backend) Client(ctx context.Context, name string) (kubernetes.Interface, error) {
	cfg, err := b.RESTConfig(ctx, name)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// NodeImage is the image new sandboxes run by default.
func (b *Backend) NodeImage() string { return b.opts.Image }

// Exec runs cmd in a node of a sandbox and returns its exit code (see
// Target.Exec).
func (b *Backend) Exec(ctx context.Context, name, node string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return b.Target(name).Exec(ctx, node, cmd, stdin, stdout, stderr)
}

// ClusterCost is what a cluster of this shape takes from the lab pool: its
// node Pods' requests, in cores and MiB (session.Coster), with workers
// sized as Create sizes them for a lab's worker size. The host's scheduler
// counts these whatever the cluster does.
func (b *Backend) ClusterCost(workers int, worker sandbox.Size) (cpu float64, memMiB int) {
	w := b.opts.WorkerSize(worker)
	cpu = b.opts.ControlPlane.CPU.AsApproximateFloat64() + float64(workers)*w.CPU.AsApproximateFloat64()
	mem := b.opts.ControlPlane.Memory.Value() + int64(workers)*w.Memory.Value()
	return cpu, int(mem >> 20)
}

// HibernatedHoldsCPU is true: Hibernate does not stop a cluster here, and
// a frozen Pod would still hold its requests.
func (b *Backend) HibernatedHoldsCPU() bool { return true }

// NodeRoom is one lab node's room for this installation's learner
// clusters, in cores and MiB.
type NodeRoom struct {
	Name   string
	CPU    float64
	Memory int
}

// Room reads the lab pool: each schedulable node the node selector picks,
// with its allocatable room less what the lab namespace's other Pods (a
// second installation's) request there, and the node each of this
// installation's sandboxes is on. Pods of other namespaces (the pool's
// DaemonSets) are not read: the server's RBAC stops at the lab namespace,
// so their requests show only as a start the host's scheduler cannot
// place (sandbox.ErrNoRoom).
func (b *Backend) Room(ctx context.Context) ([]NodeRoom, map[string]string, error) {
	list, err := b.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: labels.Set(b.opts.NodeSelector).String()})
	if err != nil {
		return nil, nil, fmt.Errorf("list the lab pool's nodes: %w", err)
	}
	pods, err := b.cs.CoreV1().Pods(b.opts.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("list the lab namespace's Pods: %w", err)
	}
	return room(list.Items, pods.Items, b.opts.Installation)
}

// room is Room's arithmetic, apart from the API.
func room(nodes []corev1.Node, pods []corev1.Pod, installation string) ([]NodeRoom, map[string]string, error) {
	free := map[string]*NodeRoom{}
	var out []*NodeRoom
	for _, n := range nodes {
		if n.Spec.Unschedulable {
			continue
		}
		r := &NodeRoom{Name: n.Name, CPU: n.Status.Allocatable.Cpu().AsApproximateFloat64(), Memory: int(n.Status.Allocatable.Memory().Value() >> 20)}
		free[n.Name] = r
		out = append(out, r)
	}
	placed := map[string]string{}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if sb := p.Labels[LabelSandbox]; sb != "" && p.Labels[LabelInstallation] == installation {
			if _, ok := placed[sb]; !ok || p.Labels[LabelNode] == names.ControlPlane {
				placed[sb] = p.Spec.NodeName
			}
			continue
		}
		r := free[p.Spec.NodeName]
		if r == nil {
			continue
		}
		req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		r.CPU -= req.Cpu().AsApproximateFloat64()
		r.Memory -= int(req.Memory().Value() >> 20)
	}
	rooms := make([]NodeRoom, len(out))
	for i, r := range out {
		rooms[i] = *r
	}
	return rooms, placed, nil
}
