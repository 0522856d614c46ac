package sandbox_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/podpath/podpath/internal/names"
	"github.com/podpath/podpath/sandbox/kube"
	"github.com/podpath/podpath/sandbox/nodeimage"
)

// learnerFenced proves the NetworkPolicy of a learner cluster holds on a
// host that enforces it: before the policy agent (deploy/policy-agent.yaml,
// as scripts install it) runs, the learner's node reaches another learner's
// node, a server Pod and the host's API server; after, none of them, while
// its own nodes and API server still answer each other and the other
// learner cannot reach in either.
func learnerFenced(t *testing.T, ctx context.Context, host kubernetes.Interface, poolContainer string, b *kube.Backend, opts kube.Options, learner string) {
	const other, serverNS = "k-two", "t-podpath-server"
	ns := opts.Namespace

	// The agent's image, built offline (cached after the first run), into
	// the pool node's containerd.
	var progress bytes.Buffer
	agent, err := nodeimage.BuildPolicyAgent(ctx, nodeimage.Options{Progress: &progress})
	if err != nil {
		t.Fatalf("build the policy agent image: %v\n%s", err, progress.String())
	}
	archive, err := os.Open(agent.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer archive.Close()
	imp := exec.CommandContext(ctx, "docker", "exec", "-i", poolContainer, "ctr", "-n", "k8s.io", "images", "import", "-")
	imp.Stdin = archive
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("import %s into the pool node: %v: %s", agent.Ref, err, out)
	}

	// Bystanders on the pool node: another learner's node (its own
	// policy; it listens on 8080 and keeps trying the learner's API server,
	// saying what it finds) and a Pod standing in for the server or
	// Postgres, in a namespace of its own.
	otherPolicy := opts.NetworkPolicy(other)
	if _, err := host.NetworkingV1().NetworkPolicies(ns).Create(ctx, otherPolicy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := host.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: serverNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The other learner is labelled as a sandbox of this installation, so
	// it goes before this returns (Reconcile would rightly call it an
	// orphan).
	now := int64(0)
	defer func() {
		bg := context.Background()
		_ = host.CoreV1().Pods(ns).Delete(bg, other, metav1.DeleteOptions{GracePeriodSeconds: &now})
		_ = host.NetworkingV1().NetworkPolicies(ns).Delete(bg, other, metav1.DeleteOptions{})
		_ = host.CoreV1().Namespaces().Delete(bg, serverNS, metav1.DeleteOptions{})
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
			if _, err := host.CoreV1().Pods(ns).Get(bg, other, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				return
			}
		}
		t.Errorf("the other learner's Pod %s is still there a minute after its delete", other)
	}()
	lpods, err := host.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelSandbox + "=" + learner})
	if err != nil {
		t.Fatal(err)
	}
	podIP := map[string]string{}
	for _, p := range lpods.Items {
		podIP[p.Labels[kube.LabelNode]] = p.Status.PodIP
	}
	if podIP["controlplane"] == "" || podIP["node01"] == "" {
		t.Fatalf("the learner's node Pods have no IPs: %v", podIP)
	}
	bystander := func(namespace, name, image string, labels map[string]string, args ...string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
			Spec: corev1.PodSpec{
				NodeName:    "node01",
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				Containers:  []corev1.Container{{Name: "main", Image: image, ImagePullPolicy: corev1.PullNever, Args: args}},
			},
		}
		p, err := host.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		for p.Status.PodIP == "" || p.Status.Phase != corev1.PodRunning {
			if time.Now().After(deadline) {
				t.Fatalf("bystander %s/%s not running: %+v", namespace, name, p.Status)
			}
			time.Sleep(time.Second)
			if p, err = host.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	prober := fmt.Sprintf(`nc -lk 8080 & while true; do if timeout 2 bash -c '</dev/tcp/%s/6443' 2>/dev/null; then echo open; else echo closed; fi; sleep 1; done`, podIP["controlplane"])
	otherPod := bystander(ns, other, names.ToolsImage, otherPolicy.Spec.PodSelector.MatchLabels, "bash", "-c", prober)
	serverPod := bystander(serverNS, "server", names.NginxImage, nil)

	apiEP, err := host.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil || len(apiEP.Subsets) == 0 || len(apiEP.Subsets[0].Addresses) == 0 {
		t.Fatalf("the host API server's endpoints: %v %v", apiEP, err)
	}
	apiSvc, err := host.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]string{
		"another learner's node":           otherPod.Status.PodIP + ":8080",
		"the server's Pod":                 serverPod.Status.PodIP + ":80",
		"the host API server's Service":    apiSvc.Spec.ClusterIP + ":443",
		"the host API server":              fmt.Sprintf("%s:%d", apiEP.Subsets[0].Addresses[0].IP, apiEP.Subsets[0].Ports[0].Port),
		"the learner's own node01 kubelet": podIP["node01"] + ":10250",
		"the learner's own API server":     podIP["controlplane"] + ":6443",
	}
	target := b.Target(learner)
	// open says whether node connects to addr in 3 s.
	open := func(node, addr string) bool {
		host, port, _ := strings.Cut(addr, ":")
		code, err := target.Exec(ctx, node, []string{"timeout", "3", "bash", "-c", fmt.Sprintf("</dev/tcp/%s/%s", host, port)}, nil, nil, nil)
		return err == nil && code == 0
	}
	from := func(what string) string {
		if what == "the learner's own API server" {
			return "node01"
		}
		return "controlplane"
	}
	for what, addr := range targets {
		if !open(from(what), addr) {
			t.Fatalf("before the policy agent runs, the learner's %s cannot reach %s (%s): the test proves nothing", from(what), what, addr)
		}
	}
	if last := lastLine(t, ctx, host, ns, other); last != "open" {
		t.Fatalf("before the policy agent runs, another learner cannot reach this one's API server (%q): the test proves nothing", last)
	}

	// The agent, as the scripts install it.
	applyManifest(t, ctx, host, "../deploy/policy-agent.yaml")
	start := time.Now()
	deadline := start.Add(3 * time.Minute)
	for {
		ds, err := host.AppsV1().DaemonSets("kube-system").Get(ctx, "podpath-policy-agent", metav1.GetOptions{})
		if err == nil && ds.Status.DesiredNumberScheduled > 0 && ds.Status.NumberReady == ds.Status.DesiredNumberScheduled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy agent is not ready after 3 minutes: %+v %v", ds, err)
		}
		time.Sleep(2 * time.Second)
	}
	// Its first sync follows readiness by a moment.
	for open(from("the host API server"), targets["the host API server"]) {
		if time.Now().After(deadline) {
			t.Fatal("the learner still reaches the host's API server 3 minutes after the policy agent started")
		}
		time.Sleep(time.Second)
	}
	t.Logf("policy enforced %s after the agent was applied", time.Since(start).Round(100*time.Millisecond))

	for what, addr := range targets {
		own := strings.HasPrefix(what, "the learner's own")
		if got := open(from(what), addr); got != own {
			t.Errorf("with the policy enforced, the learner's %s reaching %s (%s): %v, want %v", from(what), what, addr, got, own)
		}
	}
	deadline = time.Now().Add(30 * time.Second)
	for lastLine(t, ctx, host, ns, other) != "closed" {
		if time.Now().After(deadline) {
			t.Fatal("another learner still reaches this one's API server with the policy enforced")
		}
		time.Sleep(time.Second)
	}
	// The learner's cluster goes on working (kubelet, flannel and the
	// port-forward are inside the fence or outside the Pod network).
	if err := b.WaitReady(ctx, learner, time.Minute); err != nil {
		t.Errorf("the learner's cluster with the policy enforced: %v", err)
	}
}

// lastLine is the last line a Pod logged.
func lastLine(t *testing.T, ctx context.Context, host kubernetes.Interface, ns, pod string) string {
	t.Helper()
	tail := int64(1)
	raw, err := host.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{TailLines: &tail}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("logs of %s: %v", pod, err)
	}
	return strings.TrimSpace(string(raw))
}

// applyManifest creates (or replaces) the objects of a YAML file of the
// kinds the project's manifests use.
func applyManifest(t *testing.T, ctx context.Context, host kubernetes.Interface, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if err := createObject(ctx, host, obj); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
}

func createObject(ctx context.Context, host kubernetes.Interface, obj runtime.Object) error {
	var err error
	co := metav1.CreateOptions{}
	switch o := obj.(type) {
	case *corev1.ServiceAccount:
		_, err = host.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, co)
	case *rbacv1.ClusterRole:
		_, err = host.RbacV1().ClusterRoles().Create(ctx, o, co)
	case *rbacv1.ClusterRoleBinding:
		_, err = host.RbacV1().ClusterRoleBindings().Create(ctx, o, co)
	case *appsv1.DaemonSet:
		_, err = host.AppsV1().DaemonSets(o.Namespace).Create(ctx, o, co)
	default:
		return fmt.Errorf("no client for %T", obj)
	}
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
