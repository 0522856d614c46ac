package sandbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/podpath/podpath/sandbox/nodeimage"
)

// readyPoll is how often a create asks the API server how far the cluster
// is: a quarter of a second of waiting at most per stage, a few cheap GETs.
const readyPoll = 250 * time.Millisecond

// WaitNodesReady waits until want Nodes exist and all are Ready.
func WaitNodesReady(ctx context.Context, c kubernetes.Interface, want int, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, readyPoll, timeout, true, func(ctx context.Context) (bool, error) {
		nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		var notReady []string
		for _, n := range nodes.Items {
			if !NodeReady(&n) {
				notReady = append(notReady, n.Name)
			}
		}
		last = fmt.Sprintf("%d of %d nodes registered, not Ready: %s", len(nodes.Items), want, strings.Join(notReady, ", "))
		return len(nodes.Items) == want && len(notReady) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("nodes not Ready after %s (%s)", timeout, last)
	}
	return nil
}

// NodeReady reports whether the Node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// WaitCoreDNS waits until every CoreDNS replica is available.
func WaitCoreDNS(ctx context.Context, c kubernetes.Interface, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, readyPoll, timeout, true, func(ctx context.Context) (bool, error) {
		d, err := c.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		last = fmt.Sprintf("%d of %d replicas available", d.Status.AvailableReplicas, want)
		return d.Status.AvailableReplicas >= want, nil
	})
	if err != nil {
		return fmt.Errorf("CoreDNS not running after %s (%s)", timeout, last)
	}
	return nil
}

const probeNamespace = "kube-system"

// ProbePodNetwork proves Pod-to-Pod traffic across nodes: a web server Pod
// on the control plane, and a client Pod on the last node that fetches a
// page from the server's Pod IP. The server goes first because the control
// plane's Pod network is up first (its flannel starts before the workers
// join); the client is made as soon as the server has an address, so the
// worker starts it the moment its own network is up, and its success is read
// from its log (the Pod's phase follows a second or two later, after the
// kubelet's next relist). Both are removed afterwards.
// createProbePod creates p, waiting for the namespace's default
// ServiceAccount: the probe starts right after the nodes join, and on a
// control-plane-only cluster that is before the ServiceAccount controller
// has made it ("serviceaccount default not found" is a Forbidden).
func createProbePod(ctx context.Context, pods typedcorev1.PodInterface, p *corev1.Pod) error {
	var err error
	werr := wait.PollUntilContextTimeout(ctx, readyPoll, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err = pods.Create(ctx, p, metav1.CreateOptions{})
		if err != nil && apierrors.IsForbidden(err) && strings.Contains(err.Error(), "serviceaccount") {
			return false, nil
		}
		return true, nil
	})
	if err == nil && werr != nil {
		err = werr
	}
	return err
}

func ProbePodNetwork(ctx context.Context, c kubernetes.Interface, nodes []Node) error {
	pods := c.CoreV1().Pods(probeNamespace)
	tolerate := []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	never := corev1.RestartPolicyNever
	zero := int64(0)
	server := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "podpath-probe-server", Labels: map[string]string{"app.kubernetes.io/managed-by": "podpath"}},
		Spec: corev1.PodSpec{
			NodeName:                      nodes[0].Alias,
			Tolerations:                   tolerate,
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{
				Name: "nginx", Image: nodeimage.NginxImage, ImagePullPolicy: corev1.PullNever,
				Ports: []corev1.ContainerPort{{ContainerPort: 80}},
			}},
		},
	}
	// Removed gracefully, and waited for: a Pod deleted with grace 0 leaves
	// the API at once while its node still holds its sandbox and its IP
	// (host-local IPAM releases the address at the sandbox's CNI DEL), and a
	// lab that starts at once must find the node as a learner would.
	defer func() {
		bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
		defer cancel()
		one := int64(1)
		names := []string{"podpath-probe-server", "podpath-probe-client"}
		for _, n := range names {
			_ = pods.Delete(bg, n, metav1.DeleteOptions{GracePeriodSeconds: &one})
		}
		_ = wait.PollUntilContextCancel(bg, readyPoll, true, func(ctx context.Context) (bool, error) {
			for _, n := range names {
				if _, err := pods.Get(ctx, n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return false, nil
				}
			}
			return true, nil
		})
	}()
	if err := createProbePod(ctx, pods, server); err != nil {
		return fmt.Errorf("create probe server Pod: %w", err)
	}
	var serverIP, last string
	err := wait.PollUntilContextTimeout(ctx, readyPoll, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, server.Name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = podSummary(p)
		serverIP = p.Status.PodIP
		return serverIP != "", nil
	})
	if err != nil {
		return fmt.Errorf("probe web server Pod on %s got no address: %s", server.Spec.NodeName, last)
	}
	const okLine = "podpath-probe-ok"
	client := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "podpath-probe-client", Labels: map[string]string{"app.kubernetes.io/managed-by": "podpath"}},
		Spec: corev1.PodSpec{
			NodeName:                      nodes[len(nodes)-1].Alias,
			Tolerations:                   tolerate,
			RestartPolicy:                 never,
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{
				Name: "curl", Image: nodeimage.ToolsImage, ImagePullPolicy: corev1.PullNever,
				// a try every 0.2 s while nginx starts; the last error is kept
				Command: []string{"sh", "-c", `for i in $(seq 600); do curl -fsS -o /dev/null --max-time 2 "$0" 2>/tmp/err && { echo ` + okLine + `; exit 0; }; sleep 0.2; done; cat /tmp/err; exit 1`, "http://" + serverIP + "/"},
			}},
		},
	}
	if err := createProbePod(ctx, pods, client); err != nil {
		return fmt.Errorf("create probe client Pod: %w", err)
	}
	var phase corev1.PodPhase
	err = wait.PollUntilContextTimeout(ctx, readyPoll, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, client.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				return false, err
			}
			return false, nil
		}
		phase, last = p.Status.Phase, podSummary(p)
		if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
			return true, nil
		}
		if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].ContainerID == "" {
			return false, nil
		}
		logs, err := pods.GetLogs(client.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err == nil && strings.Contains(string(logs), okLine) {
			phase = corev1.PodSucceeded
			return true, nil
		}
		return false, nil
	})
	if err != nil || phase != corev1.PodSucceeded {
		logs, _ := pods.GetLogs(client.Name, &corev1.PodLogOptions{}).DoRaw(context.WithoutCancel(ctx))
		return fmt.Errorf("a Pod on %s could not fetch a page from a Pod on %s (%s): %s %s",
			client.Spec.NodeName, server.Spec.NodeName, serverIP, last, strings.TrimSpace(string(logs)))
	}
	return nil
}

// podSummary says why a Pod is where it is, for error messages.
func podSummary(p *corev1.Pod) string {
	s := string(p.Status.Phase)
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			s += fmt.Sprintf(", %s: %s %s", cs.Name, w.Reason, w.Message)
		}
		if t := cs.State.Terminated; t != nil {
			s += fmt.Sprintf(", %s exited %d (%s)", cs.Name, t.ExitCode, t.Reason)
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			s += ", " + c.Message
		}
	}
	return s
}

// WaitReady waits until every node of the sandbox is Ready and has renewed
// its Lease since the call began. A cluster woken from hibernation still
// shows the Ready it had when frozen; a fresh lease shows its kubelet is
// really back.
func (m *Manager) WaitReady(ctx context.Context, name string, timeout time.Duration) error {
	since := time.Now().Add(-time.Second)
	c, err := m.Client(ctx, name)
	if err != nil {
		return err
	}
	return WaitLeases(ctx, c, name, since, timeout)
}

// WaitLeases waits until every node of the cluster c reaches is Ready and
// has renewed its Lease since the given time (see Manager.WaitReady).
func WaitLeases(ctx context.Context, c kubernetes.Interface, name string, since time.Time, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		var waiting []string
		for _, n := range nodes.Items {
			if !NodeReady(&n) {
				waiting = append(waiting, n.Name+" not Ready")
				continue
			}
			lease, err := c.CoordinationV1().Leases("kube-node-lease").Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil || lease.Spec.RenewTime == nil || lease.Spec.RenewTime.Time.Before(since) {
				waiting = append(waiting, n.Name+" lease not renewed")
			}
		}
		last = strings.Join(waiting, ", ")
		return len(nodes.Items) > 0 && len(waiting) == 0, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("sandbox %s: nodes not Ready after %s (%s)", name, timeout, last)
	}
	return nil
}

// WaitAPI waits until the sandbox's API server answers, which it does about
// a second after a hibernated cluster wakes.
func (m *Manager) WaitAPI(ctx context.Context, name string, timeout time.Duration) error {
	c, err := m.Client(ctx, name)
	if err != nil {
		return err
	}
	return WaitAPIServer(ctx, c, name, timeout)
}

// WaitAPIServer waits until the API server c reaches answers.
func WaitAPIServer(ctx context.Context, c kubernetes.Interface, name string, timeout time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, last = c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return last == nil, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("sandbox %s: the API server does not answer after %s: %v", name, timeout, last)
	}
	return nil
}
