package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podpath/podpath/sandbox"
)

func labNode(name, cpu, mem string, unschedulable bool) corev1.Node {
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{Unschedulable: unschedulable},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
		}},
	}
}

// The pool's room is each schedulable node's allocatable, less what the
// lab namespace's other Pods request there; this installation's own node
// Pods are not subtracted (the capacity model counts them) but say where
// each of its clusters is.
func TestRoomCountsOtherPodsAndPlacesOurs(t *testing.T) {
	o := testOptions().withDefaults()
	ours := o.ControlPlanePod("lab-1")
	ours.Spec.NodeName = "w1"
	oursWorker := o.WorkerPod("lab-1", 1, "10.0.0.1")
	oursWorker.Spec.NodeName = "w1"
	pending := o.ControlPlanePod("lab-2") // not scheduled yet: nowhere
	other := Options{Namespace: o.Namespace, Image: o.Image, Installation: "inst2"}.withDefaults().ControlPlanePod("lab-9")
	other.Spec.NodeName = "w2"
	done := other.DeepCopy()
	done.Name, done.Spec.NodeName, done.Status.Phase = "gone", "w1", corev1.PodSucceeded

	rooms, placed, err := room(
		[]corev1.Node{labNode("w1", "4", "8Gi", false), labNode("w2", "4", "8Gi", false), labNode("drained", "8", "16Gi", true)},
		[]corev1.Pod{*ours, *oursWorker, *pending, *other, *done}, o.Installation)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]NodeRoom{
		"w1": {Name: "w1", CPU: 4, Memory: 8192},
		// the other installation's control plane: 1 core and 1536 MiB
		"w2": {Name: "w2", CPU: 3, Memory: 8192 - 1536},
	}
	if len(rooms) != len(want) {
		t.Fatalf("rooms %+v, want %+v (a cordoned node has no room)", rooms, want)
	}
	for _, r := range rooms {
		if w := want[r.Name]; r != w {
			t.Errorf("room of %s: %+v, want %+v", r.Name, r, w)
		}
	}
	if len(placed) != 1 || placed["lab-1"] != "w1" {
		t.Errorf("placed %v, want lab-1 on w1 only", placed)
	}
}

// A node Pod the scheduler placed nowhere is unschedulable, with its
// reason; one for which preemption nominated a node is on its way.
func TestUnschedulable(t *testing.T) {
	p := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/3 nodes are available: 2 Insufficient cpu",
	}}}}
	if why, ok := unschedulable(p); !ok || why != "0/3 nodes are available: 2 Insufficient cpu" {
		t.Fatalf("unschedulable = %q, %v", why, ok)
	}
	p.Status.NominatedNodeName = "w1"
	if _, ok := unschedulable(p); ok {
		t.Fatal("a Pod with a nominated node counted as unschedulable")
	}
	if _, ok := unschedulable(&corev1.Pod{Spec: corev1.PodSpec{NodeName: "w1"}}); ok {
		t.Fatal("a scheduled Pod counted as unschedulable")
	}
}

// A lab's worker size makes worker Pods larger, never smaller than the
// configured size, and the cost the capacity model counts follows.
func TestWorkerSize(t *testing.T) {
	o := testOptions()
	w := o.WorkerSize(sandbox.Size{MemoryMiB: 4096, MilliCPU: 250})
	if w.CPU.String() != "500m" || w.Memory.String() != "4Gi" {
		t.Fatalf("worker of at least 250m and 4096 MiB: %s, %s; want 500m (the default is larger) and 4Gi", w.CPU.String(), w.Memory.String())
	}
	o.Worker = w
	p := o.WorkerPod("lab-1", 1, "10.0.0.1")
	var node *corev1.Container
	for i := range p.Spec.Containers {
		node = &p.Spec.Containers[i]
	}
	if got := node.Resources.Limits.Memory().String(); got != "4Gi" || node.Resources.Requests.Memory().String() != "4Gi" {
		t.Fatalf("the worker Pod's memory: limit %s, request %s; want 4Gi both", got, node.Resources.Requests.Memory().String())
	}
	b := &Backend{opts: testOptions().withDefaults()}
	if cpu, mem := b.ClusterCost(2, sandbox.Size{MemoryMiB: 4096}); cpu != 2 || mem != 1536+2*4096 {
		t.Fatalf("cost of two 4 GiB workers: %v cores, %d MiB; want 2 and %d", cpu, mem, 1536+2*4096)
	}
	if cpu, mem := b.ClusterCost(1, sandbox.Size{}); cpu != 1.5 || mem != 2304 {
		t.Fatalf("cost of a default seat: %v cores, %d MiB", cpu, mem)
	}
}
