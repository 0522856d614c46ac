package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/sandbox/kube"
)

// KubeSandboxOptions tune `podpath bench sandbox --backend kubernetes`.
type KubeSandboxOptions struct {
	Out io.Writer
	// Backend is the Kubernetes backend to measure and Host its host
	// cluster's client configuration (the kubelet's stats are read through
	// it).
	Backend *kube.Backend
	Host    *rest.Config
	// Docker, when set, is measured in the same run for the comparison.
	Docker *sandbox.Manager
	Runs   int
	Settle time.Duration
}

// KubeSandbox measures learner clusters (a control plane and one worker)
// on the Kubernetes backend: create and delete times, against the Docker
// backend on this machine in the same run; what a settled cluster uses
// (the kubelet's summary of its node Pods); and how many seats each lab
// node holds at the Pods' requests.
func KubeSandbox(ctx context.Context, o KubeSandboxOptions) error {
	if o.Runs == 0 {
		o.Runs = 3
	}
	if o.Settle == 0 {
		o.Settle = 90 * time.Second
	}
	out := o.Out
	cs, err := kubernetes.NewForConfig(o.Host)
	if err != nil {
		return err
	}
	opts := o.Backend.Options()
	fmt.Fprintf(out, "machine: %s\n", Machine())
	fmt.Fprintf(out, "host cluster: %s; lab pool %v, namespace %s, node image %s\n\n", o.Host.Host, opts.NodeSelector, opts.Namespace, opts.Image)

	var kubeCreates, kubeDeletes, dockerCreates []time.Duration
	var stages stageTimes
	var used []podUse
	for i := 0; i < o.Runs; i++ {
		if o.Docker != nil {
			name := fmt.Sprintf("bench-docker-%d", i)
			_ = o.Docker.Delete(ctx, name)
			t0 := time.Now()
			if _, err := o.Docker.Create(ctx, sandbox.Spec{Name: name, Workers: 1}, func(sandbox.Event) {}); err != nil {
				return fmt.Errorf("docker backend, create %s: %w", name, err)
			}
			dockerCreates = append(dockerCreates, time.Since(t0))
			if err := o.Docker.Delete(ctx, name); err != nil {
				return err
			}
			fmt.Fprintf(out, "docker backend: create 2-node cluster #%d until Ready: %s\n", i+1, dockerCreates[i].Round(100*time.Millisecond))
		}
		name := fmt.Sprintf("bench-kube-%d", i)
		_ = o.Backend.Delete(ctx, name)
		t0 := time.Now()
		info, err := o.Backend.Create(ctx, sandbox.Spec{Name: name, Workers: 1}, stages.record)
		if err != nil {
			return fmt.Errorf("kubernetes backend, create %s: %w", name, err)
		}
		kubeCreates = append(kubeCreates, time.Since(t0))
		fmt.Fprintf(out, "kubernetes backend: create 2-node cluster #%d until Ready: %s\n", i+1, kubeCreates[i].Round(100*time.Millisecond))
		if i == o.Runs-1 {
			if err := kubeProbes(ctx, o.Backend, name, out); err != nil {
				return err
			}
			fmt.Fprintf(out, "letting the cluster settle for %s...\n", o.Settle)
			select {
			case <-time.After(o.Settle):
			case <-ctx.Done():
				return ctx.Err()
			}
			if used, err = kubeletUse(ctx, cs, opts.Namespace, info); err != nil {
				return err
			}
		}
		t0 = time.Now()
		if err := o.Backend.Delete(ctx, name); err != nil {
			return err
		}
		kubeDeletes = append(kubeDeletes, time.Since(t0))
	}

	fmt.Fprintf(out, "\nkubernetes backend, create until Ready: median %s (of %d: %s)\n", median(kubeCreates).Round(100*time.Millisecond), len(kubeCreates), list(kubeCreates))
	fmt.Fprintf(out, "kubernetes backend, delete until its Pods are gone: median %s (of %d: %s)\n", median(kubeDeletes).Round(100*time.Millisecond), len(kubeDeletes), list(kubeDeletes))
	if len(dockerCreates) > 0 {
		fmt.Fprintf(out, "docker backend, same machine and run: median %s (of %d: %s)\n", median(dockerCreates).Round(100*time.Millisecond), len(dockerCreates), list(dockerCreates))
		fmt.Fprintf(out, "ratio kubernetes / docker (medians): %.2f\n", float64(median(kubeCreates))/float64(median(dockerCreates)))
	}
	fmt.Fprintf(out, "\nwhere the time goes on the kubernetes backend (median from the start of create to the end of each stage):\n")
	stages.print(out)

	var useCPU, useMiB float64
	fmt.Fprintf(out, "\na settled cluster's use (the kubelet's summary, after %s):\n", o.Settle)
	for _, u := range used {
		fmt.Fprintf(out, "  %s: %.2f cores, %.0f MiB working set\n", u.name, u.cores, u.mib)
		useCPU += u.cores
		useMiB += u.mib
	}
	reqCPU, reqMiB := o.Backend.ClusterCost(1, sandbox.Size{})
	fmt.Fprintf(out, "one seat (control plane + one worker): uses %.2f cores and %.0f MiB settled; requests (= limits) %.2f cores and %d MiB\n", useCPU, useMiB, reqCPU, reqMiB)

	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: labels.Set(opts.NodeSelector).String()})
	if err != nil {
		return fmt.Errorf("list the lab pool: %w", err)
	}
	fmt.Fprintf(out, "\nseats per lab node (a seat's two Pods share one node):\n")
	total := 0
	for _, n := range nodes.Items {
		cpu := n.Status.Allocatable.Cpu().AsApproximateFloat64()
		mib := float64(n.Status.Allocatable.Memory().Value() >> 20)
		byReq := int(math.Min(cpu/reqCPU, mib/float64(reqMiB)))
		byUse := 0
		if useCPU > 0 && useMiB > 0 {
			byUse = int(math.Min(cpu/useCPU, mib/useMiB))
		}
		total += byReq
		fmt.Fprintf(out, "  %s: allocatable %.1f cores, %.0f MiB: %d seats at the requests (%d if requests were the settled use)\n", n.Name, cpu, mib, byReq, byUse)
	}
	fmt.Fprintf(out, "the pool holds %d seats at the requests\n", total)
	return nil
}

type podUse struct {
	name       string
	cores, mib float64
}

// kubeletUse reads each node Pod's CPU and memory from its host node's
// kubelet (/stats/summary through the API server's node proxy).
func kubeletUse(ctx context.Context, cs kubernetes.Interface, ns string, info *sandbox.Info) ([]podUse, error) {
	want := map[string]bool{}
	for _, n := range info.Nodes {
		want[n.Container] = true
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	hosts := map[string]bool{}
	for _, p := range pods.Items {
		if want[p.Name] {
			hosts[p.Spec.NodeName] = true
		}
	}
	var use []podUse
	for h := range hosts {
		raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", h, "proxy/stats/summary").DoRaw(ctx)
		if err != nil {
			return nil, fmt.Errorf("the kubelet summary of %s: %w", h, err)
		}
		var sum struct {
			Pods []struct {
				PodRef struct{ Name, Namespace string }
				CPU    struct {
					UsageNanoCores uint64 `json:"usageNanoCores"`
				} `json:"cpu"`
				Memory struct {
					WorkingSetBytes uint64 `json:"workingSetBytes"`
				} `json:"memory"`
			} `json:"pods"`
		}
		if err := json.Unmarshal(raw, &sum); err != nil {
			return nil, fmt.Errorf("the kubelet summary of %s: %w", h, err)
		}
		for _, p := range sum.Pods {
			if p.PodRef.Namespace == ns && want[p.PodRef.Name] {
				use = append(use, podUse{name: p.PodRef.Name, cores: float64(p.CPU.UsageNanoCores) / 1e9, mib: float64(p.Memory.WorkingSetBytes) / (1 << 20)})
			}
		}
	}
	if len(use) != len(want) {
		return nil, fmt.Errorf("the kubelets report %d of the cluster's %d node Pods (%s)", len(use), len(want), strings.Join(keys(want), ", "))
	}
	return use, nil
}

func keys(m map[string]bool) []string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	return s
}

// kubeProbes times 50 probes (a bash script with no stdin, as a check runs
// one) through a node's probe channel, then 50 as execs (the target
// closed), one after another.
func kubeProbes(ctx context.Context, b *kube.Backend, name string, out io.Writer) error {
	const n = 50
	t := b.Target(name)
	timeRun := func() (time.Duration, error) {
		t0 := time.Now()
		for i := 0; i < n; i++ {
			code, err := t.Exec(ctx, "node01", []string{"bash", "-c", "exit 3"}, nil, nil, nil)
			if err != nil || code != 3 {
				return 0, fmt.Errorf("probe %d: code %d, %v", i, code, err)
			}
		}
		return time.Since(t0) / n, nil
	}
	channel, err := timeRun()
	if err != nil {
		return err
	}
	t.Close()
	exec, err := timeRun()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "a probe on node01, %d in a row: %s through the probe channel, %s as an exec through the host's API server\n", n, channel.Round(time.Millisecond), exec.Round(time.Millisecond))
	return nil
}
