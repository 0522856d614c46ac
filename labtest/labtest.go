// Package labtest proves labs against real clusters: for each lab a
// cluster, its setup, then for every step its checks must fail, its solve
// runs, and its checks must pass. It is what `podpath labs test` runs.
package labtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/podpath/podpath/grader"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/sandbox"
)

// Options tune a run.
type Options struct {
	// Out receives progress lines and the result table.
	Out io.Writer
	// Keep leaves the clusters running afterwards.
	Keep bool
	// Prefix starts the name of every cluster the run makes.
	Prefix string
}

// StepResult is the outcome of one step.
type StepResult struct {
	Lab, Step string
	// Before lists checks that passed before the solve (each must fail).
	Before []string
	// SolveErr is the solve's error, if it failed.
	SolveErr error
	// After lists checks that failed after the solve (each must pass).
	After    []string
	Duration time.Duration
}

// OK reports whether the step behaved.
func (r StepResult) OK() bool { return len(r.Before) == 0 && r.SolveErr == nil && len(r.After) == 0 }

// LabResult is the outcome of one lab.
type LabResult struct {
	Lab      string
	Cluster  string
	SetupErr error
	Steps    []StepResult
	CleanErr error
	Duration time.Duration
}

// OK reports whether the lab and all its steps behaved.
func (r LabResult) OK() bool {
	if r.SetupErr != nil || r.CleanErr != nil {
		return false
	}
	for _, s := range r.Steps {
		if !s.OK() {
			return false
		}
	}
	return true
}

// Run tests labs on clusters made by m. Labs that declare cluster.shared
// run one after another on one cluster per shape; the others get a cluster
// each.
func Run(ctx context.Context, m *sandbox.Manager, all []*labs.Lab, opts Options) ([]LabResult, error) {
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Prefix == "" {
		opts.Prefix = "lt"
	}
	logf := func(format string, args ...any) { fmt.Fprintf(opts.Out, format+"\n", args...) }
	var results []LabResult
	made := map[string]bool{}
	defer func() {
		if opts.Keep {
			return
		}
		for name := range made {
			if err := m.Delete(context.WithoutCancel(ctx), name); err != nil {
				logf("could not delete cluster %s: %v", name, err)
			}
		}
	}()
	for _, lab := range all {
		name := clusterName(opts.Prefix, lab)
		start := time.Now()
		res := LabResult{Lab: lab.ID, Cluster: name}
		if !made[name] || !lab.Cluster.Shared {
			if made[name] {
				_ = m.Delete(ctx, name)
			}
			logf("== %s: creating cluster %s (%d workers)", lab.ID, name, lab.Cluster.Workers)
			if _, err := m.Create(ctx, sandbox.Spec{Name: name, Workers: lab.Cluster.Workers}, nil); err != nil {
				res.SetupErr = fmt.Errorf("create cluster: %w", err)
				results = append(results, res)
				logf("   cluster failed: %v", err)
				continue
			}
			made[name] = true
		} else {
			logf("== %s: reusing cluster %s", lab.ID, name)
		}
		res = runLab(ctx, m.Target(name), lab, res, logf)
		res.Duration = time.Since(start)
		results = append(results, res)
		if !lab.Cluster.Shared {
			if err := m.Delete(ctx, name); err != nil {
				logf("could not delete cluster %s: %v", name, err)
			}
			delete(made, name)
		}
		if ctx.Err() != nil {
			return results, ctx.Err()
		}
	}
	printTable(opts.Out, results)
	return results, nil
}

func runLab(ctx context.Context, target grader.Target, lab *labs.Lab, res LabResult, logf func(string, ...any)) LabResult {
	g := grader.New(target, lab)
	if err := g.Run(ctx, lab.Setup, nil); err != nil {
		res.SetupErr = fmt.Errorf("setup: %w", err)
		logf("   setup failed: %v", err)
		return res
	}
	for i := range lab.Steps {
		step := &lab.Steps[i]
		start := time.Now()
		sr := StepResult{Lab: lab.ID, Step: step.ID}
		for _, r := range g.CheckStep(ctx, step, grader.Options{NoWait: true, Attempt: 1}) {
			if r.Passed {
				sr.Before = append(sr.Before, fmt.Sprintf("%q passed before the solve (observed %s)", r.Name.In("en"), r.Observed))
			}
		}
		var answer string
		if err := g.Run(ctx, step.Solve, &answer); err != nil {
			sr.SolveErr = err
		} else {
			for _, r := range g.CheckStep(ctx, step, grader.Options{Answer: answer, Attempt: 1}) {
				if !r.Passed {
					sr.After = append(sr.After, fmt.Sprintf("%q failed after the solve (observed %s; %s)", r.Name.In("en"), r.Observed, r.Feedback.In("en")))
				}
			}
		}
		sr.Duration = time.Since(start)
		status := "ok"
		if !sr.OK() {
			status = "FAILED"
		}
		logf("   step %-28s %-6s %s", step.ID, status, sr.Duration.Round(100*time.Millisecond))
		for _, s := range append(append(sr.Before, sr.After...), errString(sr.SolveErr)...) {
			logf("      %s", s)
		}
		res.Steps = append(res.Steps, sr)
		if sr.SolveErr != nil {
			break // later steps build on this one
		}
	}
	if len(lab.Cleanup) > 0 {
		if err := g.Run(ctx, lab.Cleanup, nil); err != nil {
			res.CleanErr = fmt.Errorf("cleanup: %w", err)
			logf("   cleanup failed: %v", err)
		}
	}
	return res
}

func errString(err error) []string {
	if err == nil {
		return nil
	}
	return []string{"solve failed: " + err.Error()}
}

// clusterName names the cluster a lab runs on: one per shape for shared
// labs, one per lab otherwise, within sandbox name limits.
func clusterName(prefix string, lab *labs.Lab) string {
	if lab.Cluster.Shared {
		return fmt.Sprintf("%s-shared-%dw", prefix, lab.Cluster.Workers)
	}
	id := lab.ID
	if len(prefix)+1+len(id) > 40 {
		sum := sha256.Sum256([]byte(id))
		id = id[:40-len(prefix)-1-7] + "-" + hex.EncodeToString(sum[:])[:6]
	}
	return prefix + "-" + strings.TrimRight(id, "-")
}

func printTable(w io.Writer, results []LabResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nLAB\tSTEP\tBEFORE SOLVE\tSOLVE\tAFTER SOLVE\tTIME")
	for _, r := range results {
		if r.SetupErr != nil {
			fmt.Fprintf(tw, "%s\t(setup)\t-\tFAILED\t-\t%s\n", r.Lab, r.Duration.Round(time.Second))
		}
		for _, s := range r.Steps {
			before, solve, after := "fails ✓", "ok", "passes ✓"
			if len(s.Before) > 0 {
				before = fmt.Sprintf("%d passed ✗", len(s.Before))
			}
			if s.SolveErr != nil {
				solve, after = "FAILED", "-"
			} else if len(s.After) > 0 {
				after = fmt.Sprintf("%d failed ✗", len(s.After))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Lab, s.Step, before, solve, after, s.Duration.Round(100*time.Millisecond))
		}
		if r.CleanErr != nil {
			fmt.Fprintf(tw, "%s\t(cleanup)\t-\tFAILED\t-\t\n", r.Lab)
		}
	}
	tw.Flush()
}
