package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podpath/podpath/sandbox/nodeimage"
)

// The peer: kind's own CLI, built from the module proxy at the version in
// go.mod (inside the bench, never the product), creating a 2-node cluster
// from podpath's node image, then waiting for the readiness podpath's own
// create ends with, minus the Pod-to-Pod probe kind does not make: every
// node Ready and CoreDNS Ready.

const peerConfig = `kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
- role: control-plane
- role: worker
`

// kindCLI installs kind's CLI into a folder of the bench's and returns it.
func kindCLI(ctx context.Context) (string, error) {
	dir := filepath.Join(os.TempDir(), "podpath-bench-kind-"+nodeimage.KindVersion)
	bin := filepath.Join(dir, "kind")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	cmd := exec.CommandContext(ctx, "go", "install", "sigs.k8s.io/kind@"+nodeimage.KindVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install sigs.k8s.io/kind@%s: %v\n%s", nodeimage.KindVersion, err, out)
	}
	return bin, nil
}

// peerCreate times kind create cluster until every node and CoreDNS are Ready.
func peerCreate(ctx context.Context, kind, image, name string) (cli, ready time.Duration, err error) {
	cfg := filepath.Join(os.TempDir(), "podpath-bench-kind.yaml")
	if err := os.WriteFile(cfg, []byte(peerConfig), 0o644); err != nil {
		return 0, 0, err
	}
	kubeconfig := filepath.Join(os.TempDir(), "podpath-bench-kind.kubeconfig")
	start := time.Now()
	cmd := exec.CommandContext(ctx, kind, "create", "cluster", "--name", name, "--image", image, "--config", cfg, "--kubeconfig", kubeconfig)
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("kind create cluster: %v\n%s", err, out)
	}
	cli = time.Since(start)
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return 0, 0, err
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return 0, 0, err
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil || len(nodes.Items) != 2 {
			return false, nil
		}
		for _, n := range nodes.Items {
			if !condition(n.Status.Conditions, corev1.NodeReady) {
				return false, nil
			}
		}
		pods, err := c.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
		if err != nil || len(pods.Items) == 0 {
			return false, nil
		}
		for _, p := range pods.Items {
			ok := false
			for _, cd := range p.Status.Conditions {
				if cd.Type == corev1.PodReady && cd.Status == corev1.ConditionTrue {
					ok = true
				}
			}
			if !ok {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("kind's cluster not Ready: %w", err)
	}
	return cli, time.Since(start), nil
}

func condition(cs []corev1.NodeCondition, t corev1.NodeConditionType) bool {
	for _, c := range cs {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func peerDelete(ctx context.Context, kind, name string) {
	_ = exec.CommandContext(ctx, kind, "delete", "cluster", "--name", name).Run()
}

// peerNote explains what the ratio compares.
var peerNote = strings.TrimSpace(`
(podpath's ready also proves Pod-to-Pod traffic across nodes; kind's CLI is timed to the same
nodes-Ready-and-CoreDNS-Ready point, which podpath passes on the way)`)
