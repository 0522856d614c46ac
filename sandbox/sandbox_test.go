package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podpath/podpath/internal/dockercli"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/sandbox/hostfix"
	"github.com/podpath/podpath/sandbox/kube"
	"github.com/podpath/podpath/sandbox/nodeimage"
)

// run runs a shell command in a node and fails the test unless it exits 0.
func run(t *testing.T, m *sandbox.Manager, name, node, script string) string {
	t.Helper()
	out, code := runCode(t, m, name, node, script)
	if code != 0 {
		t.Fatalf("%s on %s exited %d: %s", script, node, code, out)
	}
	return strings.TrimSpace(out)
}

func runCode(t *testing.T, m *sandbox.Manager, name, node, script string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code, err := m.Exec(ctx, name, node, []string{"sh", "-c", script}, nil, &out, &out)
	if err != nil {
		t.Fatalf("exec %q on %s: %v", script, node, err)
	}
	return out.String(), code
}

func create(t *testing.T, m *sandbox.Manager, name string, workers int) *sandbox.Info {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	_ = m.Delete(ctx, name)
	var stages []string
	info, err := m.Create(ctx, sandbox.Spec{Name: name, Workers: workers}, func(e sandbox.Event) {
		if e.Done {
			stages = append(stages, e.Stage)
		}
		t.Logf("%s: %5.1fs %s done=%v failed=%v", name, e.Elapsed.Seconds(), e.Title, e.Done, e.Failed)
	})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := m.Delete(context.Background(), name); err != nil {
			t.Errorf("delete %s: %v", name, err)
		}
	})
	// Progress must name the stages a learner waits through, in order.
	want := []string{sandbox.StageNetwork, sandbox.StageNodes, sandbox.StageControlPlane, sandbox.StageCNI, sandbox.StageNodeSetup, sandbox.StageNodesReady, sandbox.StageDNS, sandbox.StagePodNetwork}
	if workers > 0 {
		want = append(want[:4], append([]string{sandbox.StageWorkers}, want[4:]...)...)
	}
	j := 0
	for _, s := range stages {
		if j < len(want) && s == want[j] {
			j++
		}
	}
	if j != len(want) {
		t.Errorf("progress stages %v do not include %v in order", stages, want)
	}
	return info
}

func TestSandbox(t *testing.T) {
	testenv.NodeImage(t)
	m := sandbox.NewManager()
	ctx := context.Background()
	const name = "t-main"
	info := create(t, m, name, 1)

	if got := fmt.Sprint(aliases(info.Nodes)); got != "[controlplane node01]" {
		t.Fatalf("nodes %s, want [controlplane node01]", got)
	}
	client, err := m.Client(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if n.Name != "controlplane" && n.Name != "node01" {
			t.Errorf("Kubernetes node %q is not named by its alias", n.Name)
		}
		if !sandbox.NodeReady(&n) {
			t.Errorf("node %s is not Ready after Create returned", n.Name)
		}
	}

	t.Run("kubeconfig through the Engine API, no docker CLI", func(t *testing.T) {
		kc, err := sandbox.EngineKubeconfig(ctx, m, name)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(kc))
		if err != nil {
			t.Fatal(err)
		}
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil || len(nodes.Items) != 2 || !strings.HasPrefix(cfg.Host, "https://127.0.0.1:") {
			t.Errorf("through %s: %d nodes, %v", cfg.Host, len(nodes.Items), err)
		}
	})

	t.Run("unknown node and duplicate name", func(t *testing.T) {
		_, err := m.Exec(ctx, name, "node07", []string{"true"}, nil, nil, nil)
		if err == nil || !strings.Contains(err.Error(), `no node "node07"`) || !strings.Contains(err.Error(), "controlplane") {
			t.Errorf("exec on an unknown node: %v", err)
		}
		if _, err := m.Create(ctx, sandbox.Spec{Name: name}, nil); err == nil || !strings.Contains(err.Error(), "already exists") {
			t.Errorf("creating an existing sandbox: %v", err)
		}
		if _, err := m.Get(ctx, name); err != nil {
			t.Errorf("the failed duplicate create removed the sandbox: %v", err)
		}
	})

	t.Run("aliases inside the cluster", func(t *testing.T) {
		if h := run(t, m, name, "node01", "hostname"); h != "node01" {
			t.Errorf("hostname on node01 = %q", h)
		}
		if h := run(t, m, name, "controlplane", "ssh node01 hostname"); h != "node01" {
			t.Errorf("ssh node01 hostname from controlplane = %q", h)
		}
		if h := run(t, m, name, "node01", "ssh controlplane hostname"); h != "controlplane" {
			t.Errorf("ssh controlplane hostname from node01 = %q", h)
		}
		// kubectl on a worker has no kubeconfig and dials localhost:8080,
		// as the article's first attempt did.
		out, code := runCode(t, m, name, "node01", "kubectl get pods 2>&1")
		if code == 0 || !strings.Contains(out, "localhost:8080") {
			t.Errorf("kubectl on node01 exited %d: %s", code, out)
		}
		if out := run(t, m, name, "controlplane", "bash -lc 'kubectl get nodes -o name'"); !strings.Contains(out, "node/node01") {
			t.Errorf("kubectl in a login shell on controlplane: %s", out)
		}
	})

	t.Run("images come through the registry mirror", func(t *testing.T) {
		mirrorPulls(t, m.Target(name), "node01", "busybox", "1.36")
	})

	t.Run("the Kubernetes backend's objects pass a real API server", func(t *testing.T) {
		// What sandbox/kube writes, sent to this cluster's API server as a
		// server-side dry run: validation and admission (the PriorityClass
		// must exist, the names must be legal) as a host cluster would
		// run them, nothing stored.
		o := kube.Options{Namespace: "podpath-labs", Image: "podpath/node:test", Installation: "inst1",
			NodeSelector: map[string]string{"podpath.dev/pool": "labs"}, PriorityClass: "podpath-labs",
			Tolerations: []corev1.Toleration{{Key: "podpath.dev/labs", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.Namespace}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
		if _, err := client.CoreV1().Pods(o.Namespace).Create(ctx, o.ControlPlanePod("pp-abc"), dry); err == nil || !strings.Contains(err.Error(), "PriorityClass") {
			t.Fatalf("a node Pod naming a PriorityClass that does not exist was admitted: %v", err)
		}
		if _, err := client.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: o.PriorityClass}, Value: 1000000}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitPriorityClassAdmits(ctx, t, client, o.Namespace, o.PriorityClass)
		for _, p := range []*corev1.Pod{o.ControlPlanePod("pp-abc"), o.WorkerPod("pp-abc", 1, "10.244.1.7"), o.WorkerPod("pp-abc", 2, "10.244.1.7")} {
			got, err := client.CoreV1().Pods(o.Namespace).Create(ctx, p, dry)
			if err != nil {
				t.Fatalf("the API server refused node Pod %s: %v", p.Name, err)
			}
			if got.Status.QOSClass != corev1.PodQOSGuaranteed || got.Spec.Priority == nil || *got.Spec.Priority != 1000000 {
				t.Errorf("%s as admitted: QoS %s, priority %v; want Guaranteed and the class's", p.Name, got.Status.QOSClass, got.Spec.Priority)
			}
		}
		if _, err := client.NetworkingV1().NetworkPolicies(o.Namespace).Create(ctx, o.NetworkPolicy("pp-abc"), dry); err != nil {
			t.Errorf("the API server refused the sandbox's NetworkPolicy: %v", err)
		}
		if pods, err := client.CoreV1().Pods(o.Namespace).List(ctx, metav1.ListOptions{}); err != nil || len(pods.Items) != 0 {
			t.Errorf("the dry run stored Pods: %v %v", pods, err)
		}
	})

	t.Run("exec passes output and exit code through", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		code, err := m.Exec(ctx, name, "node01", []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, nil, &stdout, &stderr)
		if err != nil || code != 3 || stdout.String() != "out\n" || stderr.String() != "err\n" {
			t.Errorf("exec: code %d err %v stdout %q stderr %q", code, err, stdout.String(), stderr.String())
		}
		stdout.Reset()
		code, err = m.Exec(ctx, name, "controlplane", []string{"cat"}, strings.NewReader("piped"), &stdout, &stderr)
		if err != nil || code != 0 || stdout.String() != "piped" {
			t.Errorf("exec with stdin: code %d err %v stdout %q", code, err, stdout.String())
		}
	})

	t.Run("deployment on node01, crictl, pod-to-pod HTTP and DNS", func(t *testing.T) {
		deployNginx(t, client, 3)
		pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "node01" || p.Status.Phase != corev1.PodRunning {
				t.Errorf("pod %s on %q is %s", p.Name, p.Spec.NodeName, p.Status.Phase)
			}
		}
		ps := run(t, m, name, "node01", "crictl ps --name nginx --state running -o json")
		var listed struct {
			Containers []struct {
				Labels map[string]string `json:"labels"`
			} `json:"containers"`
		}
		if err := json.Unmarshal([]byte(ps), &listed); err != nil {
			t.Fatalf("crictl ps -o json: %v: %s", err, ps)
		}
		seen := map[string]bool{}
		for _, c := range listed.Containers {
			seen[c.Labels["io.kubernetes.pod.name"]] = true
		}
		for _, p := range pods.Items {
			if !seen[p.Name] {
				t.Errorf("crictl ps on node01 does not list the container of %s (listed %v)", p.Name, seen)
			}
		}

		if _, err := client.CoreV1().Pods("default").Create(ctx, toolsPod("client", "controlplane"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRunning(t, client, "default", "client")
		ip := pods.Items[0].Status.PodIP
		// Poll: a first request can race the route to node01's Pods.
		body := run(t, m, name, "controlplane", "for i in $(seq 30); do kubectl --kubeconfig /etc/kubernetes/admin.conf exec client -- curl -sS --max-time 5 http://"+ip+"/ && break; sleep 2; done")
		if !strings.Contains(body, "Welcome to nginx") {
			t.Errorf("GET http://%s/ from a Pod on controlplane: %q", ip, body)
		}
		dns := run(t, m, name, "controlplane", "for i in $(seq 30); do kubectl --kubeconfig /etc/kubernetes/admin.conf exec client -- getent hosts kubernetes.default && break; sleep 2; done")
		if !strings.HasPrefix(dns, "10.96.0.1 ") {
			t.Errorf("kubernetes.default resolved to %q, want the Service IP 10.96.0.1", dns)
		}
	})

	// The node image carries its images unpacked, with each overlay whiteout
	// stored as a file (sandbox/nodeimage/preload.go); podpath-node-setup
	// must turn them back into 0:0 devices, or files a layer deleted would
	// reappear in containers.
	t.Run("preloaded images are unpacked and their whiteouts hold", func(t *testing.T) {
		for _, node := range []string{"controlplane", "node01"} {
			kinds := run(t, m, name, node, `cd /var/lib/containerd && test -s podpath-whiteouts && xargs -0 stat -c '%F %t:%T' < podpath-whiteouts | sort | uniq -c`)
			if !strings.HasSuffix(kinds, " character special file 0:0") || strings.Count(kinds, "\n") != 0 {
				t.Errorf("%s: the listed whiteouts are not all 0:0 devices:\n%s", node, kinds)
			}
			// every image's snapshot chain is already there: nothing for
			// containerd to unpack on first use
			if out, code := runCode(t, m, name, node, `CONTAINERD_SUPPRESS_DEPRECATION_WARNINGS=1 ctr -n k8s.io images check | awk 'NR > 1 && $NF != "true" { print "not unpacked: " $1 }'`); code != 0 || out != "" {
				t.Errorf("%s: images not unpacked (exit %d): %s", node, code, out)
			}
		}
		// The shared Debian base layer has /etc/alternatives/pager.1.gz and
		// the tools image's own layer deletes it (compare the base and tools
		// root filesystems under /var/cache/podpath/rootfs): with the
		// whiteout lost, the base's file would show through.
		if _, err := client.CoreV1().Pods("default").Create(ctx, toolsPod("layers", "node01"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRunning(t, client, "default", "layers")
		if out, code := runCode(t, m, name, "controlplane", "kubectl --kubeconfig /etc/kubernetes/admin.conf exec layers -- ls /etc/alternatives/pager.1.gz 2>&1"); code == 0 {
			t.Errorf("a file the tools layer deletes is visible in its container: %s", out)
		}
	})

	t.Run("watchers share the learner's shell without resizing it", func(t *testing.T) {
		watchersShareTheShell(t, m, name)
	})

	t.Run("images enter a node: pulled from a registry, imported with ctr", func(t *testing.T) {
		imagesEnterANode(t, m, name, client)
	})

	t.Run("containers of one Pod share the net namespace, not the PID one", func(t *testing.T) {
		pod := toolsPod("pair", "node01")
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "second", Image: nodeimage.ToolsImage, ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "infinity"}})
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRunning(t, client, "default", "pair")
		ns := func(container, kind string) string {
			pid := containerPID(t, m, name, "node01", "pair", container)
			return run(t, m, name, "node01", fmt.Sprintf("readlink /proc/%d/ns/%s", pid, kind))
		}
		if a, b := ns("tools", "net"), ns("second", "net"); a != b || !strings.HasPrefix(a, "net:[") {
			t.Errorf("net namespaces differ: %s vs %s", a, b)
		}
		if a, b := ns("tools", "pid"), ns("second", "pid"); a == b {
			t.Errorf("pid namespaces are the same (%s) without shareProcessNamespace", a)
		}
	})

	t.Run("limits reach the OCI spec and the cgroup files", func(t *testing.T) {
		pod := toolsPod("limited", "node01")
		pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi"),
		}
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRunning(t, client, "default", "limited")
		id := run(t, m, name, "node01", "crictl ps -q --name tools --label io.kubernetes.pod.name=limited")
		res := run(t, m, name, "node01", "crictl inspect "+id+" | jq -c .info.runtimeSpec.linux.resources")
		var spec struct {
			CPU    struct{ Quota, Period int64 }
			Memory struct{ Limit int64 }
		}
		if err := json.Unmarshal([]byte(res), &spec); err != nil {
			t.Fatalf("resources %s: %v", res, err)
		}
		if spec.CPU.Quota != 50000 || spec.CPU.Period != 100000 || spec.Memory.Limit != 128<<20 {
			t.Errorf("OCI resources %s, want cpu quota 50000/100000 and memory 134217728", res)
		}
		pid := containerPID(t, m, name, "node01", "limited", "tools")
		cpu, mem := cgroupLimits(t, m, name, "node01", pid)
		if cpu != "50000 100000" || mem != "134217728" {
			t.Errorf("cgroup files: cpu %q memory %q, want \"50000 100000\" and 134217728", cpu, mem)
		}
	})

	t.Run("kubelet down: containers live, node goes Unknown, and back", func(t *testing.T) {
		pods, _ := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		pids := map[string]int{}
		for _, p := range pods.Items {
			pids[p.Name] = containerPID(t, m, name, "node01", p.Name, "nginx")
		}
		run(t, m, name, "node01", "systemctl stop kubelet")
		t.Cleanup(func() { runCode(t, m, name, "node01", "systemctl start kubelet") })
		if s, _ := runCode(t, m, name, "node01", "systemctl is-active kubelet"); strings.TrimSpace(s) != "inactive" {
			t.Fatalf("kubelet is %q after stop", s)
		}
		var cond corev1.ConditionStatus
		// The node monitor's grace period is 50 s; on a loaded host the
		// controller manager can take much longer to notice.
		err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			n, err := client.CoreV1().Nodes().Get(ctx, "node01", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					cond = c.Status
				}
			}
			return cond == corev1.ConditionUnknown, nil
		})
		if err != nil {
			t.Fatalf("node01 Ready condition is %q 3 min after kubelet stopped, want Unknown", cond)
		}
		for pod, pid := range pids {
			if _, code := runCode(t, m, name, "node01", fmt.Sprintf("kill -0 %d", pid)); code != 0 {
				t.Errorf("container process %d of %s died with kubelet", pid, pod)
			}
			out := run(t, m, name, "node01", "crictl ps -q --label io.kubernetes.pod.name="+pod)
			if out == "" {
				t.Errorf("crictl ps no longer lists %s with kubelet stopped", pod)
			}
			p, err := client.CoreV1().Pods("default").Get(ctx, pod, metav1.GetOptions{})
			if err != nil || p.Status.Phase != corev1.PodRunning {
				t.Errorf("API says pod %s is %v (%v), want Running", pod, p.Status.Phase, err)
			}
		}
		run(t, m, name, "node01", "systemctl start kubelet")
		err = wait.PollUntilContextTimeout(ctx, 2*time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			n, err := client.CoreV1().Nodes().Get(ctx, "node01", metav1.GetOptions{})
			return err == nil && sandbox.NodeReady(n), nil
		})
		if err != nil {
			t.Fatal("node01 not Ready 3 min after kubelet started again")
		}
	})

	t.Run("another sandbox cannot reach this one, and delete leaves nothing", func(t *testing.T) {
		other := create(t, m, "t-other", 0)
		mine, _ := info.Node("node01")
		theirs, _ := other.Node("controlplane")
		if _, code := runCode(t, m, name, "controlplane", "curl -sk --max-time 3 https://"+mine.IP+":10250/healthz"); code == 7 || code == 28 {
			t.Fatalf("controlplane cannot reach its own node01 at %s (curl exit %d); the isolation check below would prove nothing", mine.IP, code)
		}
		if out, code := runCode(t, m, name, "controlplane", "curl -sk --max-time 3 https://"+theirs.IP+":6443/version"); code == 0 {
			t.Errorf("a node of %s reached the API server of t-other at %s: %s", name, theirs.IP, out)
		}
		if out, code := runCode(t, m, "t-other", "controlplane", "ping -c 1 -W 2 "+mine.IP); code == 0 {
			t.Errorf("t-other pinged node01 of %s: %s", name, out)
		}
		volumes, err := dockercli.Output(ctx, "inspect", "--format", "{{range .Mounts}}{{if eq .Type \"volume\"}}{{.Name}} {{end}}{{end}}", theirs.Container)
		if err != nil || strings.TrimSpace(volumes) == "" {
			t.Fatalf("volumes of %s: %q %v", theirs.Container, volumes, err)
		}
		if err := m.Delete(ctx, "t-other"); err != nil {
			t.Fatal(err)
		}
		if err := m.Delete(ctx, "t-other"); err != nil {
			t.Errorf("second delete: %v", err)
		}
		if out, _ := dockercli.Output(ctx, "ps", "-a", "-q", "--filter", "label=io.x-k8s.kind.cluster=podpath-t-other"); out != "" {
			t.Errorf("containers left after delete: %s", out)
		}
		if out, _ := dockercli.Output(ctx, "network", "ls", "-q", "--filter", "name=^podpath-t-other$"); out != "" {
			t.Errorf("network left after delete: %s", out)
		}
		for _, v := range strings.Fields(volumes) {
			if out, _ := dockercli.Output(ctx, "volume", "ls", "-q", "--filter", "name="+v); out != "" {
				t.Errorf("volume %s left after delete", v)
			}
		}
		if _, err := m.Get(ctx, "t-other"); err == nil {
			t.Error("Get finds a deleted sandbox")
		}
	})

	// Last: it makes node01 a lab pool node (tainted).
	t.Run("the Kubernetes backend runs a learner cluster as Pods of this one", func(t *testing.T) {
		kubeBackendRuns(t, m, name, client, m.NodeImage())
	})
}

func TestBadInput(t *testing.T) {
	m := sandbox.NewManager()
	ctx := context.Background()
	for _, bad := range []string{"", "Upper", "-dash", "dash-", "has_underscore", strings.Repeat("a", 41), "a/b"} {
		if _, err := m.Create(ctx, sandbox.Spec{Name: bad}, nil); err == nil || !strings.Contains(err.Error(), "invalid sandbox name") {
			t.Errorf("Create(%q): %v", bad, err)
		}
		if err := m.Delete(ctx, bad); err == nil {
			t.Errorf("Delete(%q) accepted a bad name", bad)
		}
	}
	if _, err := m.Create(ctx, sandbox.Spec{Name: "ok", Workers: sandbox.MaxWorkers + 1}, nil); err == nil || !strings.Contains(err.Error(), "workers") {
		t.Errorf("too many workers: %v", err)
	}
	testenv.Docker(t)
	if _, err := m.Create(ctx, sandbox.Spec{Name: "no-image", Image: "podpath/does-not-exist:1"}, nil); err == nil || !strings.Contains(err.Error(), "podpath nodeimage build") {
		t.Errorf("missing image: %v", err)
	}
	if err := m.Delete(ctx, "never-made"); err != nil {
		t.Errorf("deleting a missing sandbox: %v", err)
	}

	// A cluster that fails to start says where it failed and leaves nothing
	// behind: an image that is not a kind node cannot even start a node.
	if _, err := hostfix.ProbeCapabilities(ctx); err != nil {
		t.Fatal(err) // also makes the small probe image used here
	}
	_, err := m.Create(ctx, sandbox.Spec{Name: "t-broken", Image: "podpath/probe:capabilities"}, nil)
	if err == nil || !strings.Contains(err.Error(), "Node containers") {
		t.Errorf("create from a non-node image: %v", err)
	}
	if out, _ := dockercli.Output(ctx, "ps", "-a", "-q", "--filter", "label=io.x-k8s.kind.cluster=podpath-t-broken"); out != "" {
		t.Errorf("a failed create left containers: %s", out)
	}
	if out, _ := dockercli.Output(ctx, "network", "ls", "-q", "--filter", "name=^podpath-t-broken$"); out != "" {
		t.Errorf("a failed create left its network: %s", out)
	}
	if _, err := m.Exec(ctx, "never-made", "controlplane", []string{"true"}, nil, nil, nil); err == nil {
		t.Error("exec in a missing sandbox succeeded")
	}
}

func aliases(nodes []sandbox.Node) []string {
	var s []string
	for _, n := range nodes {
		s = append(s, n.Alias)
	}
	return s
}

func toolsPod(name, node string) *corev1.Pod {
	zero := int64(0)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{
				Name: "tools", Image: nodeimage.ToolsImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "infinity"},
			}},
		},
	}
}

func deployNginx(t *testing.T, c kubernetes.Interface, replicas int32) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "nginx", Image: nodeimage.NginxImage, ImagePullPolicy: corev1.PullIfNotPresent,
				}}},
			},
		},
	}
	if _, err := c.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := c.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && got.Status.ReadyReplicas == replicas, nil
	})
	if err != nil {
		t.Fatalf("deployment web not ready: %v", err)
	}
}

func waitRunning(t *testing.T, c kubernetes.Interface, ns, name string) {
	t.Helper()
	var phase corev1.PodPhase
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		phase = p.Status.Phase
		return phase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Fatalf("pod %s is %s, not Running", name, phase)
	}
}

// containerPID finds a container's main process ID on the node through crictl.
func containerPID(t *testing.T, m *sandbox.Manager, name, node, pod, container string) int {
	t.Helper()
	id := run(t, m, name, node, fmt.Sprintf("crictl ps -q --name '^%s$' --label io.kubernetes.pod.name=%s", container, pod))
	if id == "" || strings.Contains(id, "\n") {
		t.Fatalf("crictl found %q for container %s of %s", id, container, pod)
	}
	pid, err := strconv.Atoi(run(t, m, name, node, "crictl inspect "+id+" | jq .info.pid"))
	if err != nil || pid <= 1 {
		t.Fatalf("pid of %s/%s: %v", pod, container, err)
	}
	return pid
}

// cgroupLimits reads a process's CPU quota ("quota period") and memory limit
// from its cgroup files, on cgroup v2 or v1.
func cgroupLimits(t *testing.T, m *sandbox.Manager, name, node string, pid int) (cpu, mem string) {
	t.Helper()
	script := fmt.Sprintf(`set -e
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  p=$(sed -n 's/^0:://p' /proc/%[1]d/cgroup)
  cat /sys/fs/cgroup$p/cpu.max; cat /sys/fs/cgroup$p/memory.max
else
  c=$(grep -E '^[0-9]+:([^:]*,)?cpu(,[^:]*)?:' /proc/%[1]d/cgroup | cut -d: -f3)
  m=$(grep -E '^[0-9]+:memory:' /proc/%[1]d/cgroup | cut -d: -f3)
  echo "$(cat /sys/fs/cgroup/cpu$c/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu$c/cpu.cfs_period_us)"
  cat /sys/fs/cgroup/memory$m/memory.limit_in_bytes
fi`, pid)
	lines := strings.Split(run(t, m, name, node, script), "\n")
	if len(lines) != 2 {
		t.Fatalf("cgroup limits of %d: %q", pid, lines)
	}
	return strings.TrimSpace(lines[0]), strings.TrimSpace(lines[1])
}

// Deletes (and creates) of different clusters at once do not fight over a
// lock file: kind's kubeconfig is one file per cluster. A class ending at
// once deleted 40 clusters side by side, and 19 failed with "failed to lock
// config file: ... file exists" when they shared one. Here another
// cluster's create holds its lock (and the old shared file's lock is
// there too) while 40 deletes run at once. Deleting a cluster that does not
// exist takes the same lock, so absent clusters prove it without making any.
func TestDeletesAtOnceShareNoLock(t *testing.T) {
	testenv.Docker(t)
	dir := t.TempDir()
	m := sandbox.NewManager(sandbox.WithStateDir(dir))
	os.MkdirAll(filepath.Join(dir, "kind"), 0o755)
	for _, held := range []string{"kind-kubeconfig.lock", "kind/t-busy.kubeconfig.lock"} {
		if err := os.WriteFile(filepath.Join(dir, held), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const n = 40
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- m.Delete(context.Background(), fmt.Sprintf("t-absent-%02d", i)) }()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "kind", "t-absent-*")); len(left) > 0 {
		t.Errorf("deletes left files behind: %v", left)
	}
}

// waitPriorityClassAdmits waits until the API server's Priority admission
// plugin knows a PriorityClass just created. The plugin reads classes from
// an informer, so for a moment after the create a Pod naming the class is
// still refused with "no PriorityClass with name ... was found".
func waitPriorityClassAdmits(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, class string) {
	t.Helper()
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "priority-probe"},
		Spec: corev1.PodSpec{PriorityClassName: class,
			Containers: []corev1.Container{{Name: "c", Image: "podpath/node:test"}}},
	}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, last = c.CoreV1().Pods(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last == nil || !strings.Contains(last.Error(), "no PriorityClass"), nil
	})
	if err != nil {
		t.Fatalf("PriorityClass %s was created but the API server still refuses Pods naming it after 30 s: %v", class, last)
	}
}
