// Package kube runs learner clusters whose nodes are Pods of a host
// Kubernetes cluster (PODPATH_SANDBOX=kubernetes, issue 20): the node Pods
// and the NetworkPolicy that fences them in (this file), the backend that
// creates them and bootstraps the learner's cluster inside them
// (backend.go), and the ways in: the exec API and a port-forward (exec.go,
// dial.go). docs/KUBERNETES.md says what is built and what is not yet.
//
// Each learner node is one privileged Pod running podpath's node image,
// the same image the Docker backend runs as a container. What a Pod needs
// that a Docker container got for free was found by a trial on these
// machines (../shared/ENVIRONMENT.md, "Learner nodes as Pods"):
//   - a cgroup namespace: the host's containerd (cgroup v1) gives a
//     container none, and kind's entrypoint then doubles systemd's cgroup
//     path so the nested kubelet kills every static Pod; the entrypoint
//     runs under `unshare --cgroup`;
//   - a filled /var: Docker fills kind's /var volume from the image, an
//     emptyDir starts empty; an init container copies the image's /var;
//   - tmpfs /run and /tmp, /lib/modules from the host, a TTY, and
//     container=docker (what kind's entrypoint and systemd look for).
package kube

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podpath/podpath/internal/names"
	"github.com/podpath/podpath/sandbox"
)

// Labels on every object the backend writes.
const (
	LabelManagedBy    = "app.kubernetes.io/managed-by"
	LabelInstallation = "podpath.dev/installation"
	LabelSandbox      = "podpath.dev/sandbox"
	LabelNode         = "podpath.dev/node"
	managedBy         = "podpath"
)

// Nested ranges: the learner cluster's Pods and Services, clear of a
// host cluster's usual 10.244.0.0/16 and 10.96.0.0/12.
const (
	DefaultPodSubnet     = "10.150.0.0/16"
	DefaultServiceSubnet = "10.160.0.0/16"
)

// Resources are one node Pod's CPU and memory. The Pod's requests and
// limits are both these (Guaranteed QoS: the host evicts it last and never
// gives its room away under pressure).
type Resources struct {
	CPU    resource.Quantity
	Memory resource.Quantity
}

// Default node sizes: the idle costs the Docker backend measured (a
// control plane about 13 % of a core and 500 MiB, a worker 2-5 % and
// 100 MiB; docs/PERFORMANCE.md) with room for kubeadm's start and a lab's
// workloads. A limit is a ceiling the learner can hit, not a cost: the
// host's scheduler counts requests, and these are both.
var (
	DefaultControlPlane = Resources{CPU: resource.MustParse("1"), Memory: resource.MustParse("1536Mi")}
	DefaultWorker       = Resources{CPU: resource.MustParse("500m"), Memory: resource.MustParse("768Mi")}
)

// Options are what an operator sets for the backend.
type Options struct {
	// Namespace holds the node Pods (the lab namespace).
	Namespace string
	// Image is the node image, as the lab pool's nodes have it.
	Image string
	// Installation names this podpath installation; every object carries
	// it, so that two installations on one host cluster never touch each
	// other's Pods.
	Installation string
	// NodeSelector and Tolerations put the node Pods on the lab pool (its
	// nodes' labels, and their taint).
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	// PriorityClass keeps a class's Pods from being preempted or evicted
	// before other work; empty for none.
	PriorityClass string
	// ControlPlane and Worker size the node Pods; zero values take the
	// defaults.
	ControlPlane, Worker Resources
}

// withDefaults is o with its zero sizes filled in.
func (o Options) withDefaults() Options {
	if o.ControlPlane.CPU.IsZero() {
		o.ControlPlane.CPU = DefaultControlPlane.CPU
	}
	if o.ControlPlane.Memory.IsZero() {
		o.ControlPlane.Memory = DefaultControlPlane.Memory
	}
	if o.Worker.CPU.IsZero() {
		o.Worker.CPU = DefaultWorker.CPU
	}
	if o.Worker.Memory.IsZero() {
		o.Worker.Memory = DefaultWorker.Memory
	}
	return o
}

// Validate says what is wrong with the options, naming the setting.
func (o Options) Validate() error {
	var bad []string
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		bad = append(bad, fmt.Sprintf("the lab namespace %q: %s", o.Namespace, strings.Join(errs, "; ")))
	}
	if o.Image == "" {
		bad = append(bad, "no node image: name the image the lab pool's nodes have (podpath nodeimage build makes it)")
	}
	if errs := validation.IsValidLabelValue(o.Installation); len(errs) > 0 || o.Installation == "" {
		bad = append(bad, fmt.Sprintf("the installation id %q is not a label value", o.Installation))
	}
	for k, v := range o.NodeSelector {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			bad = append(bad, fmt.Sprintf("the lab pool's node label %q: %s", k, strings.Join(errs, "; ")))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			bad = append(bad, fmt.Sprintf("the lab pool's node label %s=%q: %s", k, v, strings.Join(errs, "; ")))
		}
	}
	d := o.withDefaults()
	for _, r := range []struct {
		what string
		q    resource.Quantity
	}{{"control plane CPU", d.ControlPlane.CPU}, {"control plane memory", d.ControlPlane.Memory}, {"worker CPU", d.Worker.CPU}, {"worker memory", d.Worker.Memory}} {
		if r.q.Sign() < 0 {
			bad = append(bad, fmt.Sprintf("the %s is negative (%s)", r.what, r.q.String()))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("kubernetes sandbox settings: %s", strings.Join(bad, "; "))
	}
	return nil
}

// WorkerSize is a worker Pod's size for a lab that asks for at least s:
// the larger of the configured worker size and s, CPU and memory each.
func (o Options) WorkerSize(s sandbox.Size) Resources {
	w := o.withDefaults().Worker
	if cpu := resource.NewMilliQuantity(s.MilliCPU, resource.DecimalSI); cpu.Cmp(w.CPU) > 0 {
		w.CPU = *cpu
	}
	if mem := resource.NewQuantity(s.MemoryMiB<<20, resource.BinarySI); mem.Cmp(w.Memory) > 0 {
		w.Memory = *mem
	}
	return w
}

// PodName is the name of a sandbox's node Pod: "<sandbox>-<alias>".
func PodName(sandbox, alias string) string { return sandbox + "-" + alias }

// CheckName says whether a sandbox's Pods can be named after it: every
// node Pod's name must be a DNS label (63 characters at most).
func CheckName(sandbox string, workers int) error {
	longest := PodName(sandbox, names.Worker(max(workers, 1)))
	if errs := validation.IsDNS1123Label(longest); len(errs) > 0 {
		return fmt.Errorf("sandbox name %q makes Pod names like %q: %s", sandbox, longest, strings.Join(errs, "; "))
	}
	return nil
}

func (o Options) labels(sandbox, alias string) map[string]string {
	l := map[string]string{LabelManagedBy: managedBy, LabelInstallation: o.Installation, LabelSandbox: sandbox}
	if alias != "" {
		l[LabelNode] = alias
	}
	return l
}

// sandboxSelector selects every Pod of one sandbox of this installation.
func (o Options) sandboxSelector(sandbox string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{LabelInstallation: o.Installation, LabelSandbox: sandbox}}
}

// ControlPlanePod is the Pod of a sandbox's control-plane node.
func (o Options) ControlPlanePod(sandbox string) *corev1.Pod {
	o = o.withDefaults()
	return o.nodePod(sandbox, names.ControlPlane, o.ControlPlane, nil)
}

// WorkerPod is the Pod of a sandbox's i-th worker (1-based). It is made
// once the control plane's Pod has an address, controlPlaneIP: the worker
// knows it by name from its first boot, and runs on the same host node
// (the learner cluster's flannel routes Pod traffic between its nodes as
// neighbours on one network, which Pods on two host nodes are not).
func (o Options) WorkerPod(sandbox string, i int, controlPlaneIP string) *corev1.Pod {
	o = o.withDefaults()
	p := o.nodePod(sandbox, names.Worker(i), o.Worker, []corev1.HostAlias{{IP: controlPlaneIP, Hostnames: []string{names.ControlPlane}}})
	p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: o.labels(sandbox, names.ControlPlane)},
			TopologyKey:   "kubernetes.io/hostname",
		}},
	}}
	return p
}

func (o Options) nodePod(sandbox, alias string, size Resources, aliases []corev1.HostAlias) *corev1.Pod {
	yes, no := true, false
	grace := int64(5)
	rl := corev1.ResourceList{corev1.ResourceCPU: size.CPU, corev1.ResourceMemory: size.Memory}
	// The image's /var, copied into the emptyDir the node runs on.
	copyVar := corev1.Container{
		Name:            "var",
		Image:           o.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"/bin/sh", "-c", "cp -a /var/. /podpath-var/"},
		VolumeMounts:    []corev1.VolumeMount{{Name: "var", MountPath: "/podpath-var"}},
		Resources:       corev1.ResourceRequirements{Requests: rl, Limits: rl},
	}
	node := corev1.Container{
		Name:            "node",
		Image:           o.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		// A cgroup namespace of its own: see the package comment.
		Command: []string{"unshare", "--cgroup", "/usr/local/bin/entrypoint", "/sbin/init"},
		Env:     []corev1.EnvVar{{Name: "container", Value: "docker"}},
		TTY:     true,
		Stdin:   true,
		SecurityContext: &corev1.SecurityContext{
			Privileged:     &yes,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined},
		},
		Resources: corev1.ResourceRequirements{Requests: rl, Limits: rl},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "var", MountPath: "/var"},
			{Name: "run", MountPath: "/run"},
			{Name: "tmp", MountPath: "/tmp"},
			{Name: "modules", MountPath: "/lib/modules", ReadOnly: true},
		},
	}
	hostPathDir := corev1.HostPathDirectory
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: PodName(sandbox, alias), Namespace: o.Namespace, Labels: o.labels(sandbox, alias)},
		Spec: corev1.PodSpec{
			Hostname:                      alias,
			HostAliases:                   aliases,
			InitContainers:                []corev1.Container{copyVar},
			Containers:                    []corev1.Container{node},
			RestartPolicy:                 corev1.RestartPolicyNever, // a node that stops is a failed cluster, as in Docker
			TerminationGracePeriodSeconds: &grace,
			EnableServiceLinks:            &no,
			AutomountServiceAccountToken:  &no,
			NodeSelector:                  o.NodeSelector,
			Tolerations:                   o.Tolerations,
			PriorityClassName:             o.PriorityClass,
			Volumes: []corev1.Volume{
				{Name: "var", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
				{Name: "modules", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/lib/modules", Type: &hostPathDir}}},
			},
		},
	}
}

// NetworkPolicy fences a sandbox's node Pods in: they take traffic only
// from each other and send it only to each other. Another learner's
// nodes, the host cluster's API server and DNS, cloud metadata, Postgres
// and the server's ports are all outside. Terminals and probes do not use
// the Pod network (they go through the host's exec API), so they are
// unaffected. A policy is enforced only where the host cluster runs an
// implementation of NetworkPolicy (the chart's docs say which).
func (o Options) NetworkPolicy(sandbox string) *networkingv1.NetworkPolicy {
	sel := o.sandboxSelector(sandbox)
	peer := []networkingv1.NetworkPolicyPeer{{PodSelector: sel}}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: sandbox, Namespace: o.Namespace, Labels: o.labels(sandbox, "")},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: *sel,
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: peer}},
			Egress:      []networkingv1.NetworkPolicyEgressRule{{To: peer}},
		},
	}
}
