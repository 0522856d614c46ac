package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/podpath/podpath/internal/dockercli"
	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/server"
	"github.com/podpath/podpath/session"
)

// SeatsOptions tune `podpath bench seats`.
type SeatsOptions struct {
	Out io.Writer
	// Workers is the shape of the cluster measured (the built-in labs
	// use 1; 0 is a control plane alone).
	Workers int
	// Settle is how long the cluster idles after Ready before sampling.
	Settle time.Duration
	// Samples of docker stats are taken, Interval apart, running and then
	// hibernated.
	Samples  int
	Interval time.Duration
}

// Seats measures what one learner cluster costs this host, running and
// hibernated, and how many seats the host therefore holds: the figures
// docs/WORKSHOPS.md sizes a class with.
func Seats(ctx context.Context, o SeatsOptions) error {
	if o.Samples <= 0 {
		o.Samples = 10
	}
	if o.Interval <= 0 {
		o.Interval = 3 * time.Second
	}
	out := o.Out
	fmt.Fprintf(out, "machine: %s\n\n", Machine())
	m := sandbox.NewManager()
	name := fmt.Sprintf("bench-seats-%d", time.Now().Unix()%100000)
	start := time.Now()
	fmt.Fprintf(out, "creating a %d-worker cluster %s...\n", o.Workers, name)
	info, err := m.Create(ctx, sandbox.Spec{Name: name, Workers: o.Workers}, nil)
	if err != nil {
		return err
	}
	defer func() { _ = m.Delete(context.WithoutCancel(ctx), name) }()
	fmt.Fprintf(out, "ready in %s; letting it settle for %s...\n", time.Since(start).Round(100*time.Millisecond), o.Settle)
	select {
	case <-time.After(o.Settle):
	case <-ctx.Done():
		return ctx.Err()
	}
	var containers []string
	for _, n := range info.Nodes {
		containers = append(containers, n.Container)
	}
	cpu, mem, err := sampleStats(ctx, containers, o.Samples, o.Interval)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "running, idle (mean of %d docker stats samples %s apart): %.3f cores, %.0f MiB\n", o.Samples, o.Interval, cpu, mem)

	t := time.Now()
	if err := m.Hibernate(ctx, name); err != nil {
		return err
	}
	fmt.Fprintf(out, "hibernated in %s\n", time.Since(t).Round(10*time.Millisecond))
	hcpu, hmem, err := sampleStats(ctx, containers, max(3, o.Samples/3), o.Interval)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "hibernated: %.3f cores, %.0f MiB\n", hcpu, hmem)
	t = time.Now()
	if err := m.Resume(ctx, name); err != nil {
		return err
	}
	if err := m.WaitAPI(ctx, name, 2*time.Minute); err != nil {
		return err
	}
	fmt.Fprintf(out, "woken (API server answering) in %s\n\n", time.Since(t).Round(10*time.Millisecond))

	def := server.DefaultConfig()
	model := session.ClusterCost(o.Workers)
	fmt.Fprintf(out, "the capacity model's cost of this shape (session.ClusterCost): %.2f cores running, %d MiB running or hibernated\n", model.CPU, model.Memory)
	fmt.Fprintf(out, "this host's default capacity (PODPATH_CAPACITY_CPU, PODPATH_CAPACITY_MEMORY): %.1f cores, %d MiB\n", def.CapacityCPU, def.CapacityMemory)
	running := func(cores, mib float64) int {
		return int(math.Min(math.Floor(def.CapacityCPU/cores), math.Floor(float64(def.CapacityMemory)/mib)))
	}
	fmt.Fprintf(out, "seats with every cluster running: %d by the capacity model, %d by the measured idle cost\n",
		running(model.CPU, float64(model.Memory)), running(math.Max(cpu, 0.001), mem))
	fmt.Fprintf(out, "clusters hibernated at once (memory only): %d by the capacity model, %d by the measured cost\n",
		def.CapacityMemory/model.Memory, int(float64(def.CapacityMemory)/math.Max(hmem, 1)))
	return nil
}

// sampleStats sums CPU (in cores) and memory (MiB) over the containers,
// averaged over n docker stats samples.
func sampleStats(ctx context.Context, containers []string, n int, every time.Duration) (cores, mib float64, err error) {
	args := append([]string{"stats", "--no-stream", "--format", "{{.MemUsage}} {{.CPUPerc}}"}, containers...)
	for i := 0; i < n; i++ {
		if i > 0 {
			select {
			case <-time.After(every):
			case <-ctx.Done():
				return 0, 0, ctx.Err()
			}
		}
		stats, err := dockercli.Output(ctx, args...)
		if err != nil {
			return 0, 0, err
		}
		for _, line := range strings.Split(stats, "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			mib += parseMiB(f[0])
			pct, _ := strconv.ParseFloat(strings.TrimSuffix(f[len(f)-1], "%"), 64)
			cores += pct / 100
		}
	}
	return cores / float64(n), mib / float64(n), nil
}
