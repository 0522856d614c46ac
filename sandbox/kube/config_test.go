package kube

import (
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

func TestOptionsFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	o, err := OptionsFromEnv(env(nil), "podpath/node:x")
	if err != nil || o.Namespace != DefaultNamespace || o.Installation != DefaultInstallation || o.Image != "podpath/node:x" || o.NodeSelector != nil || o.Tolerations != nil || o.PriorityClass != "" {
		t.Fatalf("defaults: %+v %v", o, err)
	}

	o, err = OptionsFromEnv(env(map[string]string{
		"PODPATH_KUBE_NAMESPACE":      "labs",
		"PODPATH_KUBE_INSTALLATION":   "eu-1",
		"PODPATH_KUBE_NODE_SELECTOR":  "pool=labs, zone=a",
		"PODPATH_KUBE_TOLERATIONS":    "podpath.dev/labs=true:NoSchedule,dedicated:NoExecute",
		"PODPATH_KUBE_PRIORITY_CLASS": "classes",
	}), "img")
	if err != nil {
		t.Fatal(err)
	}
	if o.Namespace != "labs" || o.Installation != "eu-1" || o.PriorityClass != "classes" || len(o.NodeSelector) != 2 || o.NodeSelector["zone"] != "a" {
		t.Errorf("read %+v", o)
	}
	want := []corev1.Toleration{
		{Key: "podpath.dev/labs", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule},
		{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	}
	if len(o.Tolerations) != 2 || o.Tolerations[0] != want[0] || o.Tolerations[1] != want[1] {
		t.Errorf("tolerations %+v, want %+v", o.Tolerations, want)
	}

	// Node Pod sizes: a part left out keeps its default.
	o, err = OptionsFromEnv(env(map[string]string{
		"PODPATH_KUBE_CONTROL_PLANE_SIZE": "cpu=900m",
		"PODPATH_KUBE_WORKER_SIZE":        "cpu=400m, memory=1Gi",
	}), "img")
	if err != nil {
		t.Fatal(err)
	}
	d := o.withDefaults()
	if d.ControlPlane.CPU.String() != "900m" || d.ControlPlane.Memory.String() != "1536Mi" || d.Worker.CPU.String() != "400m" || d.Worker.Memory.String() != "1Gi" {
		t.Errorf("sizes: control plane %s/%s, worker %s/%s", d.ControlPlane.CPU.String(), d.ControlPlane.Memory.String(), d.Worker.CPU.String(), d.Worker.Memory.String())
	}

	// Each bad value is refused with the variable that holds it.
	for v, bad := range map[string]map[string]string{
		"PODPATH_KUBE_NODE_SELECTOR": {"PODPATH_KUBE_NODE_SELECTOR": "pool"},
		"PODPATH_KUBE_TOLERATIONS":   {"PODPATH_KUBE_TOLERATIONS": "pool=labs"},
		"NoSchedule":                 {"PODPATH_KUBE_TOLERATIONS": "pool=labs:Never"},
		"lab namespace":              {"PODPATH_KUBE_NAMESPACE": "Labs_1"},
		"installation":               {"PODPATH_KUBE_INSTALLATION": "two words"},
		"PODPATH_KUBE_WORKER_SIZE":   {"PODPATH_KUBE_WORKER_SIZE": "cpu=lots"},
		"neither cpu nor memory":     {"PODPATH_KUBE_CONTROL_PLANE_SIZE": "cpu=1,disk=1Gi"},
	} {
		if _, err := OptionsFromEnv(env(bad), "img"); err == nil || !strings.Contains(err.Error(), v) {
			t.Errorf("%v: %v, want an error naming %s", bad, err, v)
		}
	}
}

// The kubeadm configuration is YAML documents kubeadm reads: each a known
// kind, the control plane reached at its Pod's address, each node named by
// its alias, the nested ranges, and the settings kind gives its nodes.
func TestKubeadmConfig(t *testing.T) {
	cfg, err := kubeadmValues{Version: "v1.34.4", ClusterName: "pp-1", ControlPlaneIP: "10.244.1.5", NodeName: "node01", NodeIP: "10.244.1.6", Token: bootstrapToken(), PodSubnet: DefaultPodSubnet, ServiceSubnet: DefaultServiceSubnet}.render()
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]map[string]any{}
	for _, d := range strings.Split(cfg, "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, d)
		}
		var tm metav1.TypeMeta
		_ = yaml.Unmarshal([]byte(d), &tm)
		docs[tm.Kind] = m
	}
	for _, k := range []string{"ClusterConfiguration", "InitConfiguration", "JoinConfiguration", "KubeletConfiguration", "KubeProxyConfiguration"} {
		if docs[k] == nil {
			t.Errorf("no %s", k)
		}
	}
	get := func(kind string, path ...string) any {
		var v any = docs[kind]
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		return v
	}
	checks := []struct {
		kind string
		path []string
		want any
	}{
		{"ClusterConfiguration", []string{"controlPlaneEndpoint"}, "10.244.1.5:6443"},
		{"ClusterConfiguration", []string{"networking", "podSubnet"}, "10.150.0.0/16"},
		{"ClusterConfiguration", []string{"networking", "serviceSubnet"}, "10.160.0.0/16"},
		{"ClusterConfiguration", []string{"kubernetesVersion"}, "v1.34.4"},
		{"InitConfiguration", []string{"localAPIEndpoint", "advertiseAddress"}, "10.244.1.5"},
		{"InitConfiguration", []string{"nodeRegistration", "name"}, "node01"},
		{"JoinConfiguration", []string{"nodeRegistration", "name"}, "node01"},
		{"JoinConfiguration", []string{"discovery", "bootstrapToken", "apiServerEndpoint"}, "10.244.1.5:6443"},
		{"KubeletConfiguration", []string{"cgroupRoot"}, "/kubelet"},
		{"KubeletConfiguration", []string{"cgroupDriver"}, "systemd"},
		{"KubeProxyConfiguration", []string{"mode"}, "iptables"},
	}
	for _, c := range checks {
		if got := get(c.kind, c.path...); got != c.want {
			t.Errorf("%s %v = %v, want %v", c.kind, c.path, got, c.want)
		}
	}
	sans, _ := get("ClusterConfiguration", "apiServer", "certSANs").([]any)
	for _, want := range []string{"127.0.0.1", "controlplane", "10.244.1.5"} {
		found := false
		for _, s := range sans {
			found = found || s == want
		}
		if !found {
			t.Errorf("the API server's certificate does not name %s (the port-forward or a learner needs it): %v", want, sans)
		}
	}
	if !strings.Contains(cfg, `node-ip"`+"\n      value: \"10.244.1.6\"") {
		t.Errorf("the node's kubelet does not use its Pod address:\n%s", cfg)
	}
}

func TestBootstrapToken(t *testing.T) {
	re := regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`)
	seen := map[string]bool{}
	for range 100 {
		tok := bootstrapToken()
		if !re.MatchString(tok) {
			t.Fatalf("token %q is not a kubeadm bootstrap token", tok)
		}
		if seen[tok] {
			t.Fatalf("token %q made twice", tok)
		}
		seen[tok] = true
	}
}

func TestNodesOf(t *testing.T) {
	pod := func(alias, phase string, running bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "s-" + alias, Labels: map[string]string{LabelNode: alias}}}
		p.Status.Phase = corev1.PodPhase(phase)
		p.Status.PodIP = "10.0.0." + alias[len(alias)-1:]
		st := corev1.ContainerStatus{Name: nodeContainer}
		if running {
			st.State.Running = &corev1.ContainerStateRunning{}
		} else {
			st.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1}
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{st}
		return p
	}
	nodes := nodesOf([]corev1.Pod{pod("node02", "Running", true), pod("controlplane", "Running", true), pod("node01", "Running", false)})
	var got []string
	for _, n := range nodes {
		got = append(got, n.Alias+":"+n.Role+":"+n.State)
	}
	if strings.Join(got, " ") != "controlplane:control-plane:running node01:worker:exited node02:worker:running" {
		t.Errorf("nodes %v", got)
	}
}

// The node image's CNI manifest as the learner cluster gets it: the nested
// Pod range, and the control plane's address in the DaemonSet's first
// container, every document kept.
func TestCNIManifest(t *testing.T) {
	in := `# would you kindly template this file
# would you kindly patch this file
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  net-conf.json: |
    {"Network": "{{ .PodSubnet }}", "Backend": {"Type": "host-gw"}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: cni
spec:
  template:
    spec:
      containers:
      - name: first
        image: x
        env:
        - name: A
          value: "1"
      - name: second
        image: y
`
	out, err := cniManifest(in, "10.244.1.5:6443")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"Network": "10.150.0.0/16"`) {
		t.Errorf("Pod range not filled in:\n%s", out)
	}
	if !strings.Contains(out, `"Type": "vxlan"`) || strings.Contains(out, "host-gw") {
		t.Errorf("flannel's backend not VXLAN:\n%s", out)
	}
	docs := strings.Split(out, "---\n")
	if len(docs) != 2 {
		t.Fatalf("%d documents, want 2:\n%s", len(docs), out)
	}
	var ds struct {
		Spec struct {
			Template struct {
				Spec corev1.PodSpec `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(docs[1]), &ds); err != nil {
		t.Fatal(err)
	}
	cs := ds.Spec.Template.Spec.Containers
	if len(cs) != 2 || len(cs[0].Env) != 2 || cs[0].Env[0].Name != "A" || cs[0].Env[1] != (corev1.EnvVar{Name: "CONTROL_PLANE_ENDPOINT", Value: "10.244.1.5:6443"}) || len(cs[1].Env) != 0 {
		t.Errorf("containers %+v", cs)
	}
}
