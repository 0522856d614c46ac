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
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/podpath/podpath/grader"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/session"
)

// Options tune a run.
type Options struct {
	// Out receives progress lines and the result table.
	Out io.Writer
	// Keep leaves the clusters running afterwards.
	Keep bool
	// Prefix starts the name of every cluster the run makes.
	Prefix string
	// Parallel is how many clusters are used at once.
	Parallel int
	// StrictHonesty fails a step that passes with a guess (see honesty);
	// without it a guess that passes is a warning.
	StrictHonesty bool
	// BeforeWait caps how long each check is polled before the solve
	// (a check's within, where longer); 0 waits every within in full.
	BeforeWait time.Duration
}

// StepResult is the outcome of one step.
type StepResult struct {
	Lab, Step string
	// Before lists checks that passed before the solve (each must fail).
	Before []string
	// SolveErr is the solve's error, if it failed.
	SolveErr error
	// After lists checks that failed after the solve (each must pass).
	After []string
	// Guesses is what was tried before the solve besides the empty answer,
	// and Fooled the guesses the step passed with (each is a way to pass
	// it without doing the work).
	Guesses []string
	Fooled  []string
	// NotTestable says why the step cannot be proven: nothing verifies it
	// (a Killercoda step with no verify script), or it has nothing to run
	// as a solve. Such a step is not counted as passed or failed.
	NotTestable string
	strict      bool
	Duration    time.Duration
}

// OK reports whether the step behaved.
func (r StepResult) OK() bool {
	return len(r.Before) == 0 && r.SolveErr == nil && len(r.After) == 0 && (!r.strict || len(r.Fooled) == 0)
}

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

// Run tests labs on clusters made by m, either backend (session.Manager
// or session.Kube adapts one). Labs that declare cluster.shared run one
// after another on one cluster per shape; the others get a cluster each.
// Up to opts.Parallel of these jobs run at once.
func Run(ctx context.Context, m session.Sandboxes, all []*labs.Lab, opts Options) ([]LabResult, error) {
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Prefix == "" {
		opts.Prefix = "lt"
	}
	if opts.Parallel < 1 {
		opts.Parallel = 1
	}
	var outMu sync.Mutex
	logf := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(opts.Out, format+"\n", args...)
	}

	jobs := planJobs(opts.Prefix, all, opts.Parallel, opts.BeforeWait)
	results := make(map[string]LabResult)
	var resMu sync.Mutex
	work := make(chan *job)
	var wg sync.WaitGroup
	for w := 0; w < opts.Parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				for _, r := range runJob(ctx, m, j.cluster, j.labs, opts, logf) {
					resMu.Lock()
					results[r.Lab] = r
					resMu.Unlock()
				}
			}
		}()
	}
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		work <- j
	}
	close(work)
	wg.Wait()
	var ordered []LabResult
	for _, lab := range all {
		if r, ok := results[lab.ID]; ok {
			ordered = append(ordered, r)
		}
	}
	printTable(opts.Out, ordered)
	return ordered, ctx.Err()
}

// runJob creates a cluster, runs labs on it one after another, and deletes it.
func runJob(ctx context.Context, m session.Sandboxes, cluster string, list []*labs.Lab, opts Options, logf func(string, ...any)) []LabResult {
	var results []LabResult
	start := time.Now()
	logf("== %s: creating cluster %s (%d workers) for %s", list[0].ID, cluster, list[0].Cluster.Workers, labIDs(list))
	_ = m.Delete(ctx, cluster)
	shape := session.ShapeOf(list[0])
	if _, err := m.Create(ctx, sandbox.Spec{Name: cluster, Workers: shape.Workers, Worker: shape.Worker}, nil); err != nil {
		logf("== %s: cluster failed: %v", cluster, err)
		for _, lab := range list {
			results = append(results, LabResult{Lab: lab.ID, Cluster: cluster, SetupErr: fmt.Errorf("create cluster: %w", err)})
		}
		return results
	}
	logf("== %s: cluster ready in %s", cluster, time.Since(start).Round(time.Second))
	if !opts.Keep {
		defer func() {
			if err := m.Delete(context.WithoutCancel(ctx), cluster); err != nil {
				logf("could not delete cluster %s: %v", cluster, err)
			}
		}()
	}
	target := m.Target(cluster)
	defer target.Close() // its probe channels, before the cluster goes
	for _, lab := range list {
		t0 := time.Now()
		labLog := func(format string, args ...any) { logf("[%s] "+format, append([]any{lab.ID}, args...)...) }
		r := runLab(ctx, target, lab, LabResult{Lab: lab.ID, Cluster: cluster}, opts, labLog)
		r.Duration = time.Since(t0)
		results = append(results, r)
		if ctx.Err() != nil {
			break
		}
	}
	return results
}

func labIDs(list []*labs.Lab) string {
	var ids []string
	for _, l := range list {
		ids = append(ids, l.ID)
	}
	return strings.Join(ids, ", ")
}

func runLab(ctx context.Context, target grader.Target, lab *labs.Lab, res LabResult, opts Options, logf func(string, ...any)) LabResult {
	strict := opts.StrictHonesty
	// A session of the lab: its values drawn as Start draws them, and
	// another session's, whose answers must not pass on this one.
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	mine, theirs := lab.Draw(r), labs.Values(nil)
	if len(lab.Values) > 0 {
		theirs = lab.DrawOther(r, mine)
		logf("   values: %s; another session's: %s", valuesString(mine), valuesString(theirs))
	}
	other, err := lab.For(theirs)
	if err == nil {
		lab, err = lab.For(mine)
	}
	if err != nil {
		res.SetupErr = fmt.Errorf("values: %w", err)
		logf("   values failed: %v", err)
		return res
	}
	g := grader.New(target, lab)
	setup := lab.Setup
	if lab.Killercoda {
		// No server here: the traffic address names the cluster, and
		// opens nothing; the file is there as on Killercoda.
		setup = append([]labs.Action{labs.KillercodaHost("http://labtest-" + res.Cluster + "-PORT.localhost/")}, setup...)
	}
	if err := g.Run(ctx, setup, nil); err != nil {
		res.SetupErr = fmt.Errorf("setup: %w", err)
		logf("   setup failed: %v", err)
		return res
	}
	for i := range lab.Steps {
		step := &lab.Steps[i]
		start := time.Now()
		sr := StepResult{Lab: lab.ID, Step: step.ID}
		// The step begins, as it does when the one before is passed.
		if err := g.Run(ctx, step.Start, nil); err != nil {
			sr.SolveErr = fmt.Errorf("the step's start: %w", err)
			logf("   step %-28s FAILED: %v", step.ID, sr.SolveErr)
			res.Steps = append(res.Steps, sr)
			break
		}
		if step.Unverified || len(step.Solve) == 0 {
			sr.NotTestable = "nothing to run as a solve"
			if step.Unverified {
				sr.NotTestable = "no verify script"
			}
			// Its commands still run, since later steps build on them.
			if err := g.Run(ctx, step.Solve, nil); err != nil {
				sr.SolveErr = err
			}
			sr.Duration = time.Since(start)
			status := "not testable: " + sr.NotTestable
			if sr.SolveErr != nil {
				status = "FAILED"
			}
			logf("   step %-28s %s %s", step.ID, status, sr.Duration.Round(100*time.Millisecond))
			for _, e := range errString(sr.SolveErr) {
				logf("      %s", e)
			}
			res.Steps = append(res.Steps, sr)
			if sr.SolveErr != nil {
				break
			}
			continue
		}
		// Before the solve: every check must fail, waiting each one's
		// within (up to BeforeWait), with the empty answer ...
		for _, r := range g.CheckStep(ctx, step, grader.Options{Attempt: 1, Since: start, MaxWithin: opts.BeforeWait}) {
			if r.Passed {
				sr.Before = append(sr.Before, fmt.Sprintf("%q passed before the solve (observed %s)", r.Name.In("en"), r.Observed))
			}
		}
		// ... and the step must not pass with what a learner could take
		// without working: the solve's commands typed as comments and
		// echoed, and every value the texts show as the answer.
		sr.Guesses, sr.Fooled = honesty(ctx, g, target, step, lab, &other.Steps[i], other, start)
		sr.strict = strict
		var answer string
		if err := g.Run(ctx, step.Solve, &answer); err != nil {
			sr.SolveErr = err
		} else {
			for _, r := range g.CheckStep(ctx, step, grader.Options{Answer: answer, Attempt: 1, Since: start}) {
				if !r.Passed {
					sr.After = append(sr.After, fmt.Sprintf("%q failed after the solve (observed %s; %s)", r.Name.In("en"), r.Observed, r.Feedback.In("en")))
				}
			}
			// With the work done and no answer typed, what the page shows
			// (every check's observed text, every hint) must not hand
			// over the answer.
			if step.NeedsAnswer() && answer != "" {
				sr.Fooled = append(sr.Fooled, leaks(g.CheckStep(ctx, step, grader.Options{Attempt: 99, NoWait: true, Since: start}), answer)...)
			}
		}
		sr.Duration = time.Since(start)
		status := "ok"
		if !sr.OK() {
			status = "FAILED"
		}
		logf("   step %-28s %-6s %s", step.ID, status, sr.Duration.Round(100*time.Millisecond))
		if len(sr.Guesses) > 0 {
			shown := sr.Guesses
			if len(shown) > 12 {
				shown = append(shown[:12:12], fmt.Sprintf("... %d more", len(sr.Guesses)-12))
			}
			logf("      before the solve, also tried: %s", strings.Join(shown, ", "))
		}
		for _, f := range sr.Fooled {
			word := "NOT HONEST"
			if !strict {
				word = "not honest (warning; --strict-honesty fails on it)"
			}
			logf("      %s: %s", word, f)
		}
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

func valuesString(v labs.Values) string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b []string
	for _, k := range keys {
		b = append(b, k+"="+v[k])
	}
	return strings.Join(b, " ")
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
		// One cluster per shape: labs asking for other worker sizes
		// never share one.
		name := fmt.Sprintf("%s-shared-%dw", prefix, lab.Cluster.Workers)
		if w := session.ShapeOf(lab).Worker; w != (sandbox.Size{}) {
			name += fmt.Sprintf("-%dm-%dmi", w.MilliCPU, w.MemoryMiB)
		}
		return name
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
			if s.NotTestable != "" {
				before, after = "-", "not testable ("+s.NotTestable+")"
			}
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
