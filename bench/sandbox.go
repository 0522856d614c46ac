// Package bench measures podpath on the machine it runs on: node image
// builds, cluster lifecycles, terminal latency and throughput, check
// latency. `podpath bench sandbox` and `podpath bench server` print the
// figures recorded in docs/PERFORMANCE.md.
package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/podpath/podpath/internal/dockercli"
	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/sandbox/nodeimage"
)

// SandboxOptions tune `podpath bench sandbox`.
type SandboxOptions struct {
	Out io.Writer
	// Cold also measures a node image build from an empty podpath cache
	// (the Go module and build caches stay warm); it takes many minutes.
	Cold bool
	// Runs is how many clusters to create for the median.
	Runs int
	// Settle is how long a cluster idles before its memory is read.
	Settle time.Duration
	// NoPeer skips the kind CLI comparison.
	NoPeer bool
}

// Sandbox measures node image builds and the life of 2-node clusters.
func Sandbox(ctx context.Context, o SandboxOptions) error {
	if o.Runs == 0 {
		o.Runs = 3
	}
	out := o.Out
	fmt.Fprintf(out, "machine: %s\n\n", Machine())
	if o.Cold {
		tmp, err := os.MkdirTemp("", "podpath-bench-cache-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		start := time.Now()
		res, err := nodeimage.Build(ctx, nodeimage.Options{CacheDir: tmp, Force: true, NoDefaultTag: true, Progress: io.Discard})
		if err != nil {
			return fmt.Errorf("cold build: %w", err)
		}
		fmt.Fprintf(out, "node image build, cold (empty podpath cache; Go build cache as GOCACHE has it): %s  (%s)\n", time.Since(start).Round(time.Second), res.Image)
	}
	start := time.Now()
	res, err := nodeimage.Build(ctx, nodeimage.Options{Progress: io.Discard})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "node image build, cached: %s  (cached=%v, %s)\n", time.Since(start).Round(time.Millisecond), res.Cached, res.Image)
	if size, err := dockercli.Output(ctx, "image", "inspect", "-f", "{{.Size}}", res.Image); err == nil {
		n, _ := strconv.ParseInt(size, 10, 64)
		fmt.Fprintf(out, "node image size: %.0f MB\n", float64(n)/1e6)
	}

	m := sandbox.NewManager()
	var kind string
	if !o.NoPeer {
		fmt.Fprintf(out, "building kind's CLI %s for the comparison (go install, once)...\n", nodeimage.KindVersion)
		if kind, err = kindCLI(ctx); err != nil {
			return err
		}
	}
	var creates, deletes, peerCLI, peerReady []time.Duration
	var stages stageTimes
	for i := 0; i < o.Runs; i++ {
		name := fmt.Sprintf("bench-%d", i)
		_ = m.Delete(ctx, name)
		t0 := time.Now()
		_, err := m.Create(ctx, sandbox.Spec{Name: name, Workers: 1}, stages.record)
		if err != nil {
			return fmt.Errorf("create %s: %w", name, err)
		}
		creates = append(creates, time.Since(t0))
		fmt.Fprintf(out, "create 2-node cluster #%d until Ready (nodes Ready, CoreDNS up, Pod-to-Pod checked): %s\n", i+1, creates[i].Round(100*time.Millisecond))
		if i == o.Runs-1 {
			if err := memory(ctx, m, name, o.Settle, out); err != nil {
				return err
			}
		}
		t0 = time.Now()
		if err := m.Delete(ctx, name); err != nil {
			return err
		}
		deletes = append(deletes, time.Since(t0))
		if kind != "" {
			peer := fmt.Sprintf("podpath-bench-peer-%d", i)
			peerDelete(ctx, kind, peer)
			cli, ready, err := peerCreate(ctx, kind, res.Image, peer)
			peerDelete(ctx, kind, peer)
			if err != nil {
				return err
			}
			peerCLI, peerReady = append(peerCLI, cli), append(peerReady, ready)
			fmt.Fprintf(out, "kind CLI create 2-node cluster #%d: returned after %s, every node and CoreDNS Ready after %s\n", i+1, cli.Round(100*time.Millisecond), ready.Round(100*time.Millisecond))
		}
	}
	fmt.Fprintf(out, "\ncreate 2-node cluster until Ready: median %s (of %d: %s)\n", median(creates).Round(100*time.Millisecond), len(creates), list(creates))
	fmt.Fprintf(out, "delete 2-node cluster: median %s (of %d: %s)\n", median(deletes).Round(100*time.Millisecond), len(deletes), list(deletes))
	if len(peerReady) > 0 {
		fmt.Fprintf(out, "kind CLI, same image, until every node and CoreDNS Ready: median %s (of %d: %s); the CLI itself returned after a median %s\n",
			median(peerReady).Round(100*time.Millisecond), len(peerReady), list(peerReady), median(peerCLI).Round(100*time.Millisecond))
		fmt.Fprintf(out, "ratio podpath / kind CLI (medians): %.2f %s\n", float64(median(creates))/float64(median(peerReady)), peerNote)
	}
	fmt.Fprintf(out, "\nwhere the time goes (median time from the start of create to the end of each stage):\n")
	stages.print(out)
	return nil
}

// stageTimes collects, per run, the time from the start of a create to the
// end of each of its stages, in the order the stages first finish.
type stageTimes struct {
	done  map[string][]time.Duration
	order []string
}

// record is a create's progress callback.
func (s *stageTimes) record(e sandbox.Event) {
	if !e.Done || e.Failed {
		return
	}
	if s.done == nil {
		s.done = map[string][]time.Duration{}
	}
	if _, seen := s.done[e.Stage]; !seen {
		s.order = append(s.order, e.Stage)
	}
	s.done[e.Stage] = append(s.done[e.Stage], e.Elapsed)
}

// print writes each stage's median, one a line.
func (s *stageTimes) print(out io.Writer) {
	for _, st := range s.order {
		fmt.Fprintf(out, "  %-40s %s\n", sandbox.StageTitles[st], median(s.done[st]).Round(100*time.Millisecond))
	}
}

// memory reads a settled cluster's memory from docker stats.
func memory(ctx context.Context, m *sandbox.Manager, name string, settle time.Duration, out io.Writer) error {
	if settle == 0 {
		settle = 90 * time.Second
	}
	fmt.Fprintf(out, "letting the cluster settle for %s...\n", settle)
	select {
	case <-time.After(settle):
	case <-ctx.Done():
		return ctx.Err()
	}
	info, err := m.Get(ctx, name)
	if err != nil {
		return err
	}
	args := []string{"stats", "--no-stream", "--format", "{{.Name}} {{.MemUsage}} {{.CPUPerc}}"}
	for _, n := range info.Nodes {
		args = append(args, n.Container)
	}
	stats, err := dockercli.Output(ctx, args...)
	if err != nil {
		return err
	}
	var total float64
	for _, line := range strings.Split(stats, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		mib := parseMiB(f[1])
		total += mib
		fmt.Fprintf(out, "  %s: %.0f MiB, CPU %s\n", f[0], mib, f[len(f)-1])
	}
	fmt.Fprintf(out, "memory of a settled 2-node cluster: %.0f MiB\n", total)
	return nil
}

func parseMiB(s string) float64 {
	units := []struct {
		suffix string
		mul    float64
	}{{"GiB", 1024}, {"MiB", 1}, {"KiB", 1.0 / 1024}, {"B", 1.0 / 1024 / 1024}}
	for _, u := range units {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f * u.mul
		}
	}
	return 0
}

func median(ds []time.Duration) time.Duration {
	return percentile(ds, 50)
}

// percentile returns the p-th percentile (nearest rank) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(float64(len(s))*p/100+0.999999) - 1
	if rank < 0 {
		rank = 0
	}
	if rank >= len(s) {
		rank = len(s) - 1
	}
	return s[rank]
}

func list(ds []time.Duration) string {
	var s []string
	for _, d := range ds {
		s = append(s, d.Round(100*time.Millisecond).String())
	}
	return strings.Join(s, ", ")
}

// Machine describes this machine in one line.
func Machine() string {
	model := "unknown CPU"
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	mem := ""
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.Atoi(f[1])
				mem = fmt.Sprintf("%.0f GiB", float64(kb)/1024/1024)
			}
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return fmt.Sprintf("%d cores (%s), %s RAM, kernel %s, %s", runtime.NumCPU(), model, mem, strings.TrimSpace(string(kernel)), runtime.Version())
}
