package kube

import (
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Defaults of the backend's settings.
const (
	DefaultNamespace    = "podpath-labs"
	DefaultInstallation = "podpath"
)

// EnvVars documents the backend's environment variables (PODPATH_SANDBOX
// chooses it), with their defaults.
var EnvVars = [][3]string{
	{"PODPATH_SANDBOX", "docker", "where learner clusters run: docker (containers on this host) or kubernetes (Pods of a host cluster; docs/KUBERNETES.md)"},
	{"PODPATH_KUBECONFIG", "in-cluster, else $KUBECONFIG", "kubeconfig of the host cluster (kubernetes backend)"},
	{"PODPATH_KUBE_NAMESPACE", DefaultNamespace, "namespace of the learner node Pods (kubernetes backend)"},
	{"PODPATH_KUBE_INSTALLATION", DefaultInstallation, "names this installation on its Pods, so two installations on one host cluster never touch each other's (kubernetes backend)"},
	{"PODPATH_KUBE_NODE_SELECTOR", "", "labels of the lab pool's nodes, key=value separated by commas (kubernetes backend)"},
	{"PODPATH_KUBE_TOLERATIONS", "", "taints of the lab pool the node Pods tolerate, key=value:Effect or key:Effect separated by commas (kubernetes backend)"},
	{"PODPATH_KUBE_PRIORITY_CLASS", "", "PriorityClass of the node Pods, so a class's clusters are not preempted (kubernetes backend)"},
	{"PODPATH_KUBE_CONTROL_PLANE_SIZE", "cpu=1,memory=1536Mi", "requests and limits of each control-plane node Pod (kubernetes backend)"},
	{"PODPATH_KUBE_WORKER_SIZE", "cpu=500m,memory=768Mi", "requests and limits of each worker node Pod; a lab's cluster.worker may ask for more (kubernetes backend)"},
}

// OptionsFromEnv reads the backend's settings from the environment (get is
// os.Getenv in podpath serve); image is the node image. It says which
// setting is wrong, by its variable.
func OptionsFromEnv(get func(string) string, image string) (Options, error) {
	o := Options{Namespace: DefaultNamespace, Installation: DefaultInstallation, Image: image}
	if v := get("PODPATH_KUBE_NAMESPACE"); v != "" {
		o.Namespace = v
	}
	if v := get("PODPATH_KUBE_INSTALLATION"); v != "" {
		o.Installation = v
	}
	o.PriorityClass = get("PODPATH_KUBE_PRIORITY_CLASS")
	if v := get("PODPATH_KUBE_NODE_SELECTOR"); v != "" {
		o.NodeSelector = map[string]string{}
		for _, kv := range strings.Split(v, ",") {
			k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || k == "" {
				return o, fmt.Errorf("PODPATH_KUBE_NODE_SELECTOR: %q is not key=value", kv)
			}
			o.NodeSelector[k] = val
		}
	}
	if v := get("PODPATH_KUBE_TOLERATIONS"); v != "" {
		for _, t := range strings.Split(v, ",") {
			tol, err := ParseToleration(strings.TrimSpace(t))
			if err != nil {
				return o, fmt.Errorf("PODPATH_KUBE_TOLERATIONS: %w", err)
			}
			o.Tolerations = append(o.Tolerations, tol)
		}
	}
	for _, s := range []struct {
		key string
		dst *Resources
	}{{"PODPATH_KUBE_CONTROL_PLANE_SIZE", &o.ControlPlane}, {"PODPATH_KUBE_WORKER_SIZE", &o.Worker}} {
		if v := get(s.key); v != "" {
			r, err := ParseResources(v)
			if err != nil {
				return o, fmt.Errorf("%s: %w", s.key, err)
			}
			*s.dst = r
		}
	}
	if err := o.Validate(); err != nil {
		return o, err
	}
	return o, nil
}

// ParseResources reads a node Pod's size, "cpu=900m,memory=1536Mi"; a
// part left out keeps the default.
func ParseResources(s string) (Resources, error) {
	var r Resources
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		q, err := resource.ParseQuantity(strings.TrimSpace(v))
		if !ok || err != nil || q.Sign() <= 0 {
			return r, fmt.Errorf("%q: write cpu=AMOUNT,memory=AMOUNT as Kubernetes writes them (cpu=900m,memory=1536Mi)", s)
		}
		switch strings.TrimSpace(k) {
		case "cpu":
			r.CPU = q
		case "memory":
			r.Memory = q
		default:
			return r, fmt.Errorf("%q: %q is neither cpu nor memory", s, k)
		}
	}
	return r, nil
}

// ParseToleration reads a toleration as a taint is written to kubectl
// taint: key=value:Effect (Equal) or key:Effect (Exists).
func ParseToleration(s string) (corev1.Toleration, error) {
	kv, effect, ok := strings.Cut(s, ":")
	if !ok {
		return corev1.Toleration{}, fmt.Errorf("%q has no effect: write key=value:NoSchedule", s)
	}
	var t corev1.Toleration
	switch corev1.TaintEffect(effect) {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		t.Effect = corev1.TaintEffect(effect)
	default:
		return t, fmt.Errorf("%q: the effect is NoSchedule, PreferNoSchedule or NoExecute, not %q", s, effect)
	}
	if k, v, ok := strings.Cut(kv, "="); ok {
		t.Key, t.Operator, t.Value = k, corev1.TolerationOpEqual, v
	} else {
		t.Key, t.Operator = kv, corev1.TolerationOpExists
	}
	if t.Key == "" {
		return t, fmt.Errorf("%q has no key", s)
	}
	return t, nil
}

// HostConfig is the host cluster's client configuration: the kubeconfig
// file at path if given, else the Pod's own service account (podpath runs
// in the host cluster), else $KUBECONFIG or ~/.kube/config.
func HostConfig(path string) (*rest.Config, error) {
	if path == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("host cluster (in-cluster credentials): %w", err)
		}
		return cfg, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("host cluster kubeconfig (PODPATH_KUBECONFIG or KUBECONFIG): %w", err)
	}
	return cfg, nil
}
