package kube

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func testOptions() Options {
	return Options{
		Namespace:     "podpath-labs",
		Image:         "podpath/node:v1.34.4-test",
		Installation:  "inst1",
		NodeSelector:  map[string]string{"podpath.dev/pool": "labs"},
		Tolerations:   []corev1.Toleration{{Key: "podpath.dev/labs", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		PriorityClass: "podpath-labs",
	}
}

func container(t *testing.T, p *corev1.Pod, name string) *corev1.Container {
	t.Helper()
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == name {
			return &p.Spec.Containers[i]
		}
	}
	t.Fatalf("pod %s has no container %q", p.Name, name)
	return nil
}

func volume(t *testing.T, p *corev1.Pod, name string) *corev1.Volume {
	t.Helper()
	for i := range p.Spec.Volumes {
		if p.Spec.Volumes[i].Name == name {
			return &p.Spec.Volumes[i]
		}
	}
	t.Fatalf("pod %s has no volume %q", p.Name, name)
	return nil
}

func mount(c *corev1.Container, path string) *corev1.VolumeMount {
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].MountPath == path {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

// guaranteed is Kubernetes' rule for the Guaranteed QoS class: every
// container, init containers too, has CPU and memory limits, and requests
// equal to them.
func guaranteed(p *corev1.Pod) bool {
	for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			lim, ok := c.Resources.Limits[r]
			if !ok || lim.IsZero() {
				return false
			}
			if req, ok := c.Resources.Requests[r]; ok && req.Cmp(lim) != 0 {
				return false
			}
		}
	}
	return true
}

// What the trial on these machines found a node Pod needs (see the
// package comment), on both kinds of node.
func TestNodePodsBootAsNodes(t *testing.T) {
	o := testOptions()
	cp := o.ControlPlanePod("pp-abc")
	w := o.WorkerPod("pp-abc", 1, "10.244.1.7")
	for _, p := range []*corev1.Pod{cp, w} {
		n := container(t, p, "node")
		if got := strings.Join(n.Command, " "); got != "unshare --cgroup /usr/local/bin/entrypoint /sbin/init" {
			t.Errorf("%s: command %q; the entrypoint must run in a cgroup namespace of its own", p.Name, got)
		}
		if n.SecurityContext == nil || n.SecurityContext.Privileged == nil || !*n.SecurityContext.Privileged {
			t.Errorf("%s: not privileged", p.Name)
		}
		if sp := n.SecurityContext.SeccompProfile; sp == nil || sp.Type != corev1.SeccompProfileTypeUnconfined {
			t.Errorf("%s: seccomp %v, want Unconfined", p.Name, sp)
		}
		if !n.TTY || !n.Stdin || !slices.Contains(n.Env, corev1.EnvVar{Name: "container", Value: "docker"}) {
			t.Errorf("%s: tty %v stdin %v env %v; want a TTY, stdin and container=docker", p.Name, n.TTY, n.Stdin, n.Env)
		}
		if n.Image != o.Image {
			t.Errorf("%s: image %q", p.Name, n.Image)
		}
		// /var is an emptyDir the init container fills from the image.
		varMount := mount(n, "/var")
		if varMount == nil || volume(t, p, varMount.Name).EmptyDir == nil {
			t.Fatalf("%s: /var is not an emptyDir: %+v", p.Name, n.VolumeMounts)
		}
		if len(p.Spec.InitContainers) != 1 {
			t.Fatalf("%s: init containers %d, want the one that copies /var", p.Name, len(p.Spec.InitContainers))
		}
		ic := p.Spec.InitContainers[0]
		var into string
		for _, m := range ic.VolumeMounts {
			if m.Name == varMount.Name {
				into = m.MountPath
			}
		}
		if ic.Image != o.Image || into == "" || !strings.Contains(strings.Join(ic.Command, " "), "cp -a /var/. "+into) {
			t.Errorf("%s: the init container (image %s, command %q, the /var volume at %q) does not copy the image's /var into the node's", p.Name, ic.Image, ic.Command, into)
		}
		for _, path := range []string{"/run", "/tmp"} {
			m := mount(n, path)
			if m == nil || volume(t, p, m.Name).EmptyDir == nil || volume(t, p, m.Name).EmptyDir.Medium != corev1.StorageMediumMemory {
				t.Errorf("%s: %s is not a memory emptyDir", p.Name, path)
			}
		}
		if m := mount(n, "/lib/modules"); m == nil || !m.ReadOnly || volume(t, p, m.Name).HostPath == nil || volume(t, p, m.Name).HostPath.Path != "/lib/modules" {
			t.Errorf("%s: /lib/modules is not the host's, read-only", p.Name)
		}
		if *p.Spec.AutomountServiceAccountToken || *p.Spec.EnableServiceLinks {
			t.Errorf("%s: a service account token or service links reach the learner's node", p.Name)
		}
		if p.Spec.RestartPolicy != corev1.RestartPolicyNever {
			t.Errorf("%s: restart policy %s", p.Name, p.Spec.RestartPolicy)
		}
		// On the lab pool, not preempted first, Guaranteed.
		if p.Spec.NodeSelector["podpath.dev/pool"] != "labs" || len(p.Spec.Tolerations) != 1 || p.Spec.PriorityClassName != "podpath-labs" {
			t.Errorf("%s: node selector %v, tolerations %v, priority class %q", p.Name, p.Spec.NodeSelector, p.Spec.Tolerations, p.Spec.PriorityClassName)
		}
		if !guaranteed(p) {
			t.Errorf("%s: not Guaranteed QoS: %+v / %+v", p.Name, p.Spec.InitContainers[0].Resources, n.Resources)
		}
		if p.Namespace != "podpath-labs" || p.Labels[LabelSandbox] != "pp-abc" || p.Labels[LabelInstallation] != "inst1" {
			t.Errorf("%s: namespace %q labels %v", p.Name, p.Namespace, p.Labels)
		}
	}
	if cp.Name != "pp-abc-controlplane" || cp.Spec.Hostname != "controlplane" || w.Name != "pp-abc-node01" || w.Spec.Hostname != "node01" {
		t.Errorf("names: %s (%s), %s (%s)", cp.Name, cp.Spec.Hostname, w.Name, w.Spec.Hostname)
	}
	if len(w.Spec.HostAliases) != 1 || w.Spec.HostAliases[0].IP != "10.244.1.7" || w.Spec.HostAliases[0].Hostnames[0] != "controlplane" {
		t.Errorf("the worker does not know the control plane by name: %+v", w.Spec.HostAliases)
	}
	// The worker lands on the control plane's host node.
	a := w.Spec.Affinity
	if a == nil || a.PodAffinity == nil || len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Fatalf("the worker has no required affinity to its control plane: %+v", a)
	}
	term := a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
	sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil || term.TopologyKey != "kubernetes.io/hostname" || !sel.Matches(labels.Set(cp.Labels)) || sel.Matches(labels.Set(o.ControlPlanePod("pp-other").Labels)) {
		t.Errorf("the worker's affinity (%v on %s) does not pick exactly its own control plane", term.LabelSelector, term.TopologyKey)
	}
}

func TestNodePodSizes(t *testing.T) {
	o := testOptions()
	cp, w := o.ControlPlanePod("pp-a"), o.WorkerPod("pp-a", 1, "10.0.0.1")
	if got := container(t, cp, "node").Resources.Limits[corev1.ResourceMemory]; got.Cmp(DefaultControlPlane.Memory) != 0 {
		t.Errorf("default control plane memory %s", got.String())
	}
	if got := container(t, w, "node").Resources.Limits[corev1.ResourceCPU]; got.Cmp(DefaultWorker.CPU) != 0 {
		t.Errorf("default worker CPU %s", got.String())
	}
	o.Worker = Resources{CPU: resource.MustParse("2"), Memory: resource.MustParse("3Gi")}
	w = o.WorkerPod("pp-a", 2, "10.0.0.1")
	if r := container(t, w, "node").Resources; r.Requests.Cpu().String() != "2" || r.Limits.Memory().String() != "3Gi" || !guaranteed(w) {
		t.Errorf("a set worker size: %+v", r)
	}
	// The objects survive the API's JSON (what client-go sends).
	for _, p := range []*corev1.Pod{cp, w} {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var back corev1.Pod
		if err := json.Unmarshal(b, &back); err != nil || back.Spec.Containers[0].Resources.Limits.Cpu().Cmp(*p.Spec.Containers[0].Resources.Limits.Cpu()) != 0 {
			t.Errorf("%s does not round-trip through JSON: %v", p.Name, err)
		}
	}
}

// The policy admits the sandbox's own nodes and nobody else: not another
// sandbox's, not another installation's, not a Pod of the server.
func TestNetworkPolicyFencesTheSandbox(t *testing.T) {
	o := testOptions()
	np := o.NetworkPolicy("pp-abc")
	if len(np.Spec.PolicyTypes) != 2 || len(np.Spec.Ingress) != 1 || len(np.Spec.Egress) != 1 {
		t.Fatalf("policy types %v, %d ingress and %d egress rules; want both directions, one rule each", np.Spec.PolicyTypes, len(np.Spec.Ingress), len(np.Spec.Egress))
	}
	applies, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	rules := map[string][]metav1.LabelSelector{}
	for _, from := range np.Spec.Ingress[0].From {
		if from.PodSelector == nil || from.NamespaceSelector != nil || from.IPBlock != nil {
			t.Fatalf("an ingress peer beyond the sandbox's Pods: %+v", from)
		}
		rules["in"] = append(rules["in"], *from.PodSelector)
	}
	for _, to := range np.Spec.Egress[0].To {
		if to.PodSelector == nil || to.NamespaceSelector != nil || to.IPBlock != nil {
			t.Fatalf("an egress peer beyond the sandbox's Pods: %+v", to)
		}
		rules["out"] = append(rules["out"], *to.PodSelector)
	}
	if len(np.Spec.Egress[0].Ports) != 0 || len(np.Spec.Ingress[0].Ports) != 0 {
		t.Errorf("ports narrow the rules: the nodes talk on any port among themselves")
	}
	own := []map[string]string{o.ControlPlanePod("pp-abc").Labels, o.WorkerPod("pp-abc", 1, "10.0.0.1").Labels, o.WorkerPod("pp-abc", 2, "10.0.0.1").Labels}
	other := o
	other.Installation = "inst2"
	foreign := []map[string]string{
		o.ControlPlanePod("pp-abd").Labels,            // another learner's
		other.ControlPlanePod("pp-abc").Labels,        // the same name in another installation
		{"app.kubernetes.io/name": "podpath"},         // the server
		{LabelManagedBy: managedBy, LabelSandbox: ""}, // a Pod with the labels but no sandbox
	}
	for _, l := range own {
		if !applies.Matches(labels.Set(l)) {
			t.Errorf("the policy does not apply to the sandbox's node %v", l)
		}
	}
	for _, l := range foreign {
		if applies.Matches(labels.Set(l)) {
			t.Errorf("the policy applies to a Pod outside the sandbox: %v", l)
		}
	}
	for dir, sels := range rules {
		for _, s := range sels {
			peer, err := metav1.LabelSelectorAsSelector(&s)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range own {
				if !peer.Matches(labels.Set(l)) {
					t.Errorf("%s: the sandbox's node %v is not a peer", dir, l)
				}
			}
			for _, l := range foreign {
				if peer.Matches(labels.Set(l)) {
					t.Errorf("%s: a Pod outside the sandbox is a peer: %v", dir, l)
				}
			}
		}
	}
}

func TestOptionsRefused(t *testing.T) {
	if err := testOptions().Validate(); err != nil {
		t.Fatalf("good options refused: %v", err)
	}
	cases := []struct {
		change func(*Options)
		says   string
	}{
		{func(o *Options) { o.Namespace = "Labs_1" }, "the lab namespace"},
		{func(o *Options) { o.Image = "" }, "no node image"},
		{func(o *Options) { o.Installation = "" }, "installation id"},
		{func(o *Options) { o.NodeSelector = map[string]string{"bad key!": "x"} }, "node label"},
		{func(o *Options) { o.Worker.Memory = resource.MustParse("-1Gi") }, "worker memory is negative"},
	}
	for _, c := range cases {
		o := testOptions()
		c.change(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("want an error saying %q, got %v", c.says, err)
		}
	}
	if err := CheckName("pp-abc", 3); err != nil {
		t.Errorf("a short name refused: %v", err)
	}
	if err := CheckName(strings.Repeat("a", 60), 1); err == nil || !strings.Contains(err.Error(), "node01") {
		t.Errorf("a name too long for its Pods: %v", err)
	}
}
