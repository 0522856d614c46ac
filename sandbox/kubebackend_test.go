package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/sandbox/kube"
)

// kubeBackendRuns makes the sandbox name (a podpath cluster from the node
// image, one worker) the host cluster of the Kubernetes backend: node01 is
// the lab pool (labelled, tainted, the node image imported into its
// containerd) and a learner cluster of two node Pods is bootstrapped on it.
// It runs last in TestSandbox: it taints node01.
func kubeBackendRuns(t *testing.T, m *sandbox.Manager, name string, host kubernetes.Interface, image string) {
	ctx := context.Background()
	info, err := m.Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := info.Node("node01")
	if err != nil {
		t.Fatal(err)
	}

	// The node image into the pool node's containerd, as an operator
	// without a registry loads it (scripts would use kind load).
	start := time.Now()
	save := exec.Command("docker", "save", image)
	load := exec.Command("docker", "exec", "-i", pool.Container, "ctr", "-n", "k8s.io", "images", "import", "-")
	pipe, err := save.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	load.Stdin = pipe
	var loadOut bytes.Buffer
	load.Stdout, load.Stderr = &loadOut, &loadOut
	if err := load.Start(); err != nil {
		t.Fatal(err)
	}
	if err := save.Run(); err != nil {
		t.Fatalf("docker save %s: %v", image, err)
	}
	if err := load.Wait(); err != nil {
		t.Fatalf("ctr images import on the pool node: %v: %s", err, loadOut.String())
	}
	t.Logf("node image imported into the pool node in %s", time.Since(start).Round(100*time.Millisecond))

	const ns = "podpath-labs"
	taint := corev1.Taint{Key: "podpath.dev/lab-pool", Value: "true", Effect: corev1.TaintEffectNoSchedule}
	node, err := host.CoreV1().Nodes().Get(ctx, "node01", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Labels["podpath.dev/lab-pool"] = "true"
	node.Spec.Taints = append(node.Spec.Taints, taint)
	if _, err := host.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := host.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := host.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "podpath-labs"}, Value: 1000000}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	waitPriorityClassAdmits(ctx, t, host, ns, "podpath-labs")

	cfg, err := m.RESTConfig(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := kube.OptionsFromEnv(func(k string) string {
		return map[string]string{
			"PODPATH_KUBE_NAMESPACE":      ns,
			"PODPATH_KUBE_INSTALLATION":   "t-kube",
			"PODPATH_KUBE_NODE_SELECTOR":  "podpath.dev/lab-pool=true",
			"PODPATH_KUBE_TOLERATIONS":    "podpath.dev/lab-pool=true:NoSchedule",
			"PODPATH_KUBE_PRIORITY_CLASS": "podpath-labs",
		}[k]
	}, image)
	if err != nil {
		t.Fatal(err)
	}
	b, err := kube.New(cfg, opts, nil)
	if err != nil {
		t.Fatal(err)
	}

	const learner = "k-one"
	cctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
	defer cancel()
	var stages []string
	got, err := b.Create(cctx, sandbox.Spec{Name: learner, Workers: 1}, func(e sandbox.Event) {
		if e.Done {
			stages = append(stages, e.Stage)
		}
		t.Logf("%s: %5.1fs %s done=%v failed=%v", learner, e.Elapsed.Seconds(), e.Title, e.Done, e.Failed)
	})
	if err != nil {
		t.Fatalf("create a learner cluster on the host cluster: %v", err)
	}
	t.Cleanup(func() { _ = b.Delete(context.Background(), learner) })
	want := []string{sandbox.StageNodes, sandbox.StageConfig, sandbox.StageControlPlane, sandbox.StageCNI, sandbox.StageStorage, sandbox.StageWorkers, sandbox.StageNodeSetup, sandbox.StageNodesReady, sandbox.StageDNS, sandbox.StagePodNetwork}
	if !slices.Equal(stages, want) {
		t.Errorf("stages %v, want %v", stages, want)
	}
	if fmt.Sprint(aliases(got.Nodes)) != "[controlplane node01]" || got.State != sandbox.StateRunning {
		t.Errorf("created %+v", got)
	}

	// The host's view: two Guaranteed Pods with the class's priority, on
	// the pool node.
	pods, err := host.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelSandbox + "=" + learner})
	if err != nil || len(pods.Items) != 2 {
		t.Fatalf("node Pods of %s: %v %v", learner, pods, err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "node01" || p.Status.QOSClass != corev1.PodQOSGuaranteed || p.Spec.Priority == nil || *p.Spec.Priority != 1000000 {
			t.Errorf("node Pod %s: on %q, QoS %s, priority %v; want node01, Guaranteed, 1000000", p.Name, p.Spec.NodeName, p.Status.QOSClass, p.Spec.Priority)
		}
	}

	// The learner's view: its own two nodes, Ready, by their aliases,
	// through the port-forwarded API server.
	lc, err := b.Client(ctx, learner)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := lc.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("the learner's API server through the port-forward: %v", err)
	}
	var names []string
	for _, n := range nodes.Items {
		names = append(names, n.Name)
		if !sandbox.NodeReady(&n) {
			t.Errorf("learner node %s not Ready", n.Name)
		}
	}
	if slices.Sort(names); fmt.Sprint(names) != "[controlplane node01]" {
		t.Errorf("learner cluster nodes %v", names)
	}

	target := b.Target(learner)
	var out, errOut bytes.Buffer
	code, err := target.Exec(ctx, "node01", []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, nil, &out, &errOut)
	if err != nil || code != 3 || out.String() != "out\n" || errOut.String() != "err\n" {
		t.Errorf("exec: code %d err %v stdout %q stderr %q", code, err, out.String(), errOut.String())
	}
	out.Reset()
	code, err = target.Exec(ctx, "node01", []string{"sh", "-c", "ssh -o BatchMode=yes controlplane hostname; kubectl --kubeconfig /etc/kubernetes/kubelet.conf get node node01 -o name"}, nil, &out, &out)
	if err != nil || code != 0 || !strings.Contains(out.String(), "controlplane\n") || !strings.Contains(out.String(), "node/node01") {
		t.Errorf("ssh controlplane and kubectl from node01: code %d err %v: %s", code, err, out.String())
	}
	out.Reset()
	code, err = target.Exec(ctx, "controlplane", []string{"cat"}, strings.NewReader("piped"), &out, nil)
	if err != nil || code != 0 || out.String() != "piped" {
		t.Errorf("exec with stdin: code %d err %v stdout %q", code, err, out.String())
	}

	// Registry mirrors (PODPATH_REGISTRY_MIRRORS, which scripts/test sets
	// to its registry): node01 of the learner's cluster pulls busybox:1.36
	// from the mirror, the image the mirror holds, by its digest.
	mirrorPulls(t, target, "node01", "busybox", "1.36")

	// Traffic ports: a connection to a port listening in node01 (kubelet's
	// health endpoint, on the node's loopback), through the host's API
	// server.
	if conn, err := target.Dial(ctx, "node01", 10248); err != nil {
		t.Errorf("dial node01:10248: %v", err)
	} else {
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprint(conn, "GET /healthz HTTP/1.0\r\nHost: node01\r\n\r\n")
		got, _ := io.ReadAll(conn)
		conn.Close()
		if !strings.HasPrefix(string(got), "HTTP/1.0 200") || !strings.HasSuffix(string(got), "ok") {
			t.Errorf("kubelet's /healthz through Dial: %q", got)
		}
	}

	// Probes (bash -c, no stdin) go through a probe channel: outputs and
	// exit codes as an exec gives them, one agent in the node while the
	// target is open, none once it is closed (closing its stdin ends it).
	probes := b.Target(learner)
	for i := 0; i < 5; i++ {
		out.Reset()
		errOut.Reset()
		code, err := probes.Exec(ctx, "node01", []string{"bash", "-c", fmt.Sprintf("echo out-%d; echo err-%d >&2; exit %d", i, i, i)}, nil, &out, &errOut)
		if err != nil || code != i || out.String() != fmt.Sprintf("out-%d\n", i) || errOut.String() != fmt.Sprintf("err-%d\n", i) {
			t.Errorf("probe %d: code %d err %v stdout %q stderr %q", i, code, err, out.String(), errOut.String())
		}
	}
	agents := func() string {
		out.Reset()
		_, _ = target.Exec(ctx, "node01", []string{"sh", "-c", "ps -eo args | grep -c '^/usr/local/lib/podpath/agent' || true"}, nil, &out, nil)
		return strings.TrimSpace(out.String())
	}
	if n := agents(); n != "1" {
		t.Errorf("%s probe channels in node01 after five probes, want 1", n)
	}
	probes.Close()
	deadline := time.Now().Add(30 * time.Second)
	for agents() != "0" && time.Now().Before(deadline) {
		time.Sleep(time.Second)
	}
	if n := agents(); n != "0" {
		t.Errorf("%s probe channels left in node01 after the target closed, want 0", n)
	}
	if code, err := probes.Exec(ctx, "node01", []string{"bash", "-c", "exit 4"}, nil, nil, nil); code != 4 || err != nil {
		t.Errorf("a probe after Close (an exec): code %d err %v", code, err)
	}

	// The learner's terminal: a shell in its keeper, typed into.
	tty, err := target.Attach(ctx, "controlplane", 100, 30)
	if err != nil {
		t.Fatal(err)
	}
	scr := &screen{}
	go func() { _, _ = io.Copy(scr, tty) }()
	if _, err := tty.Write([]byte("echo $((6*7))-$(hostname)\r")); err != nil {
		t.Fatal(err)
	}
	scr.waitFor(t, "the learner's terminal", "42-controlplane")
	if cols, rows, err := target.WindowSize(ctx, "controlplane"); err != nil || cols != 100 || rows != 30 {
		t.Errorf("the keeper's window: %dx%d %v, want 100x30", cols, rows, err)
	}
	clients := func() string {
		var out bytes.Buffer
		_, _ = target.Exec(ctx, "controlplane", []string{"sh", "-c", "tmux -L podpath list-clients | wc -l"}, nil, &out, nil)
		return strings.TrimSpace(out.String())
	}
	if n := clients(); n != "1" {
		t.Errorf("%s tmux clients with the learner's terminal open, want 1", n)
	}
	tty.Close()
	// Closing the terminal hangs up its process: the tmux client goes (a
	// cancelled exec alone leaves it running on containerd).
	deadline = time.Now().Add(30 * time.Second)
	for clients() != "0" {
		if time.Now().After(deadline) {
			t.Fatalf("the closed terminal's tmux client is still attached (%s clients)", clients())
		}
		time.Sleep(500 * time.Millisecond)
	}

	// Hibernation marks the cluster and keeps it running (its Pods hold
	// the pool's room either way); Resume takes the mark off.
	if err := b.Hibernate(ctx, learner); err != nil {
		t.Fatal(err)
	}
	if info, err := b.Get(ctx, learner); err != nil || info.State != sandbox.StatePaused {
		t.Errorf("after Hibernate: %+v %v, want %s", info, err, sandbox.StatePaused)
	}
	if err := b.Resume(ctx, learner); err != nil {
		t.Fatal(err)
	}
	if info, err := b.Get(ctx, learner); err != nil || info.State != sandbox.StateRunning {
		t.Errorf("after Resume: %+v %v, want %s", info, err, sandbox.StateRunning)
	}
	if err := b.WaitReady(ctx, learner, time.Minute); err != nil {
		t.Errorf("WaitReady after Resume: %v", err)
	}

	// Another installation in the same namespace sees none of it.
	otherOpts := opts
	otherOpts.Installation = "t-kube-other"
	other, err := kube.New(cfg, otherOpts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Get(ctx, learner); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("another installation's Get: %v, want not found", err)
	}
	if code, err := other.Target(learner).Exec(ctx, "controlplane", []string{"true"}, nil, nil, nil); err == nil {
		t.Errorf("another installation ran a command in this one's node (exit %d)", code)
	}
	if _, err := other.Kubeconfig(ctx, learner); err == nil {
		t.Error("another installation read this one's kubeconfig")
	}
	if _, err := other.Create(cctx, sandbox.Spec{Name: learner}, nil); err == nil {
		t.Error("another installation created a sandbox over this one's")
	}
	if info, err := b.Get(ctx, learner); err != nil || info.State != sandbox.StateRunning {
		t.Errorf("this installation's sandbox after the other's attempts: %+v %v", info, err)
	}

	learnerFenced(t, ctx, host, pool.Container, b, opts, learner)

	// The pool as the capacity model reads it: node01's allocatable (the
	// learner's own Pods are the model's to count) and the learner there.
	rooms, placed, err := b.Room(ctx)
	if err != nil || len(rooms) != 1 || rooms[0].Name != "node01" || rooms[0].CPU < 1 || placed[learner] != "node01" {
		t.Errorf("Room: %+v %v %v; want node01 with its allocatable cores, and %s placed there", rooms, placed, err, learner)
	}
	// A second cluster the host's scheduler has no room for (node01 holds
	// the first's 1.5 cores) fails with ErrNoRoom and the scheduler's
	// reason, leaving nothing, well before the start timeout.
	began := time.Now()
	_, err = b.Create(cctx, sandbox.Spec{Name: "k-full", Workers: 0}, nil)
	if !errors.Is(err, sandbox.ErrNoRoom) || !strings.Contains(err.Error(), "Insufficient cpu") {
		t.Errorf("create with no room on the pool: %v, want ErrNoRoom saying Insufficient cpu", err)
	} else if d := time.Since(began); d > time.Minute {
		t.Errorf("the create with no room gave up after %s", d)
	}
	if left, _ := host.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelSandbox + "=k-full"}); left == nil || len(left.Items) != 0 {
		t.Errorf("Pods left by the create with no room: %v", left)
	}

	if orphans, err := b.Reconcile(ctx, nil); err != nil || !slices.Contains(orphans, learner) {
		t.Errorf("Reconcile knowing nothing: %v %v; want %s among them", orphans, err, learner)
	}
	if orphans, err := b.Reconcile(ctx, []string{learner}); err != nil || len(orphans) != 0 {
		t.Errorf("Reconcile knowing %s: %v %v", learner, orphans, err)
	}

	if err := b.Delete(ctx, learner); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, learner); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("Get after Delete: %v", err)
	}
	if left, _ := host.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelSandbox + "=" + learner}); left == nil || len(left.Items) != 0 {
		t.Errorf("Pods left after Delete: %v", left)
	}

	// A cluster that cannot start says why and leaves nothing (with the
	// pool free again: a Pod that finds no room waits for it).
	_, err = b.Create(cctx, sandbox.Spec{Name: "k-bad", Image: "podpath/node:absent"}, nil)
	if err == nil || !strings.Contains(err.Error(), "cannot start") {
		t.Errorf("create from an image the pool does not have: %v", err)
	}
	if left, _ := host.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelSandbox + "=k-bad"}); left == nil || len(left.Items) != 0 {
		t.Errorf("Pods left by the failed create: %v", left)
	}
	if left, _ := host.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelSandbox + "=k-bad"}); left == nil || len(left.Items) != 0 {
		t.Errorf("NetworkPolicy left by the failed create: %v", left)
	}
}

// mirrorPulls has node pull docker.io/library/<repo>:<tag> and checks that
// it came from the docker.io mirror of PODPATH_REGISTRY_MIRRORS: the digest
// containerd records is the one the mirror serves for the tag (podpath
// mirror push's image, built from Debian's packages, not Docker Hub's).
func mirrorPulls(t *testing.T, target sandbox.Execer, node, repo, tag string) {
	t.Helper()
	ctx := context.Background()
	ms, err := sandbox.RegistryMirrors()
	if err != nil {
		t.Fatal(err)
	}
	var mirror *sandbox.Mirror
	for i := range ms {
		if ms[i].Registry == "docker.io" {
			mirror = &ms[i]
		}
	}
	if mirror == nil {
		if os.Getenv("CI") == "true" {
			t.Errorf("%s names no docker.io mirror: scripts/test sets it (start_mirror in scripts/lib.sh)", sandbox.RegistryMirrorsEnv)
		} else {
			t.Logf("no docker.io mirror in %s: the mirror pull is not tested", sandbox.RegistryMirrorsEnv)
		}
		return
	}
	req, err := http.NewRequestWithContext(ctx, "HEAD", mirror.URL.String()+"/v2/library/"+repo+"/manifests/"+tag, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("the mirror %s: %v", mirror.URL, err)
	}
	res.Body.Close()
	digest := res.Header.Get("Docker-Content-Digest")
	if res.StatusCode != 200 || !strings.HasPrefix(digest, "sha256:") {
		t.Fatalf("the mirror has no %s:%s (%s, digest %q): podpath mirror push fills it", repo, tag, res.Status, digest)
	}
	var out bytes.Buffer
	ref := "docker.io/library/" + repo + ":" + tag
	code, err := target.Exec(ctx, node, []string{"sh", "-c", "crictl rmi " + ref + " >/dev/null 2>&1; cat /etc/containerd/certs.d/docker.io/hosts.toml && crictl pull " + ref + " && crictl inspecti -o go-template --template '{{range .status.repoDigests}}{{.}} {{end}}' " + ref}, nil, &out, &out)
	if err != nil || code != 0 {
		t.Fatalf("pulling %s on %s: exit %d %v:\n%s", ref, node, code, err, out.String())
	}
	if !strings.Contains(out.String(), mirror.URL.Host) || !strings.Contains(out.String(), "docker.io/library/"+repo+"@"+digest) {
		t.Errorf("%s on %s did not come from the mirror %s (its digest %s):\n%s", ref, node, mirror.URL.Host, digest, out.String())
	}
}
