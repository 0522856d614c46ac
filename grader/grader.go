// Package grader judges a lab step against a running cluster: each check's
// probe reads real state (Kubernetes objects, node files, crictl, systemd,
// shell history), its matcher judges the value, and a failed check carries
// a hint. It also runs a lab's setup, solve and cleanup actions. It knows a
// sandbox only through Target, and nothing of HTTP or Postgres.
package grader

import (
	"context"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/podpath/podpath/labs"
)

// Target is what the grader needs of a sandbox: run a command in a node,
// and reach its API server.
type Target interface {
	Exec(ctx context.Context, node string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error)
	RESTConfig(ctx context.Context) (*rest.Config, error)
}

// Grader judges steps of one lab on one target.
type Grader struct {
	target Target
	lab    *labs.Lab

	mu      sync.Mutex
	clients *clients
	// PollInterval is how often within and holds re-read a probe.
	PollInterval time.Duration
}

type clients struct {
	core    kubernetes.Interface
	dynamic dynamic.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
}

// New returns a Grader for lab on target.
func New(target Target, lab *labs.Lab) *Grader {
	return &Grader{target: target, lab: lab, PollInterval: 2 * time.Second}
}

func (g *Grader) kube(ctx context.Context) (*clients, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.clients != nil {
		return g.clients, nil
	}
	cfg, err := g.target.RESTConfig(ctx)
	if err != nil {
		return nil, failed(NoteNoAPI, "detail", err.Error())
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 15 * time.Second
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, failed(NoteNoAPI, "detail", err.Error())
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, failed(NoteNoAPI, "detail", err.Error())
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, failed(NoteNoAPI, "detail", err.Error())
	}
	g.clients = &clients{core: core, dynamic: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
	return g.clients, nil
}

// Result is the outcome of one check.
type Result struct {
	// Index of the check in its step.
	Index int       `json:"index"`
	Name  labs.Text `json:"name"`
	// Passed is true only when the probe read a value and the matcher
	// accepted it.
	Passed bool `json:"passed"`
	// Observed is what the probe read (shortened), or why it read nothing,
	// with the grader's notes, in its English: kept with the attempt for
	// instructors and debugging.
	Observed string `json:"observed"`
	// Words are Observed as a learner reads it, in each language: the
	// lab's readings of the values read, and podpath's words for the rest.
	// They are what the lab page and the workshop board show.
	Words labs.Text `json:"words,omitempty"`
	// Observation is Observed as data (what Observed and Words say).
	Observation Observation `json:"-"`
	// Feedback is the hint for a failed check, a script's FAIL: lines, or
	// what went wrong reading the probe.
	Feedback labs.Text `json:"feedback,omitempty"`
	// ProbeError is set when the probe itself could not read (node gone,
	// API server down); such a check does not pass.
	ProbeError bool          `json:"probeError,omitempty"`
	Duration   time.Duration `json:"duration"`
}

// Options tune a step check.
type Options struct {
	// Answer is the learner's typed answer, read by answer probes.
	Answer string
	// Attempt is the 1-based number of this attempt at the step; later
	// attempts show more hints.
	Attempt int
	// NoWait judges each check once, ignoring within and holds (used by
	// labs test to prove checks fail before the solve).
	NoWait bool
	// MaxWithin caps each check's within (0: the lab's own). labs test
	// uses it before the solve, where only a quick pass would be news.
	MaxWithin time.Duration
	// Since is when the step began for the learner: history probes count
	// only commands run from then on (zero: every command in the history).
	Since time.Time
}

type sinceKey struct{}

// stepSince is the Since of the check being judged.
func stepSince(ctx context.Context) time.Time {
	t, _ := ctx.Value(sinceKey{}).(time.Time)
	return t
}

// CheckStep judges every check of step, in parallel, and returns their
// results in order.
//
// When a check that does not wait fails, the step has failed, so checks
// still waiting (within, holds) stop at once instead of making the learner
// wait for a verdict that is already known.
func (g *Grader) CheckStep(ctx context.Context, step *labs.Step, opts Options) []Result {
	if !opts.Since.IsZero() {
		ctx = context.WithValue(ctx, sinceKey{}, opts.Since)
	}
	results := make([]Result, len(step.Checks))
	giveUp := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for i := range step.Checks {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := &step.Checks[i]
			results[i] = g.check(ctx, i, c, opts, giveUp)
			if !results[i].Passed && c.Within == 0 && c.Holds == 0 {
				once.Do(func() { close(giveUp) })
			}
		}(i)
	}
	wg.Wait()
	return results
}

// Passed reports whether every result passed.
func Passed(results []Result) bool {
	for _, r := range results {
		if !r.Passed {
			return false
		}
	}
	return len(results) > 0
}

func (g *Grader) check(ctx context.Context, i int, c *labs.Check, opts Options, giveUp <-chan struct{}) Result {
	start := time.Now()
	res := Result{Index: i, Name: c.Name}
	once := func() outcome { return g.judge(ctx, c, opts.Answer) }
	var o outcome
	switch {
	case opts.NoWait || (c.Within == 0 && c.Holds == 0):
		o = once()
	default:
		o = g.overTime(ctx, c, opts.MaxWithin, once, giveUp)
	}
	res.Passed, res.Observed, res.ProbeError = o.passed, shorten(o.obs.Raw()), o.probeErr
	res.Words, res.Observation = o.obs.Text(), o.obs
	res.Duration = time.Since(start)
	switch {
	case o.passed:
	case len(o.feedback) > 0:
		res.Feedback = o.feedback
	case o.probeErr:
		res.Feedback = o.obs.Text()
	default:
		res.Feedback = hintFor(c.Hints, opts.Attempt)
	}
	return res
}

// hintFor returns the hint for the attempt-th failure: one more per attempt.
func hintFor(hints []labs.Text, attempt int) labs.Text {
	if len(hints) == 0 {
		return nil
	}
	i := attempt - 1
	if i < 0 {
		i = 0
	}
	if i >= len(hints) {
		i = len(hints) - 1
	}
	return hints[i]
}

// overTime applies within (poll until the check passes) and then holds
// (the check must keep passing for that long).
func (g *Grader) overTime(ctx context.Context, c *labs.Check, maxWithin time.Duration, once func() outcome, giveUp <-chan struct{}) outcome {
	o := once()
	within := c.Within.D()
	if maxWithin > 0 && within > maxWithin {
		within = maxWithin
	}
	if within > 0 && !o.passed {
		deadline := time.Now().Add(within)
		for !o.passed && time.Now().Before(deadline) {
			switch sleep(ctx, g.PollInterval, giveUp) {
			case sleptCancelled:
				return o
			case sleptGaveUp:
				o.obs = about(NoteNotWaited, o.obs)
				return o
			}
			o = once()
		}
		if !o.passed {
			o.obs = about(NoteStillAfter, o.obs, "after", within.String())
			return o
		}
	}
	if c.Holds > 0 && o.passed {
		deadline := time.Now().Add(c.Holds.D())
		for time.Now().Before(deadline) {
			switch sleep(ctx, g.PollInterval, giveUp) {
			case sleptCancelled:
				return outcome{obs: note(NoteCancelled), probeErr: true}
			case sleptGaveUp:
				o.passed = false
				o.obs = about(NoteNotWaited, o.obs)
				return o
			}
			if o = once(); !o.passed {
				o.obs = about(NoteDidNotHold, o.obs, "for", c.Holds.D().String())
				return o
			}
		}
	}
	return o
}

type slept int

const (
	sleptFull slept = iota
	sleptCancelled
	sleptGaveUp
)

func sleep(ctx context.Context, d time.Duration, giveUp <-chan struct{}) slept {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return sleptCancelled
	case <-giveUp:
		return sleptGaveUp
	case <-t.C:
		return sleptFull
	}
}

// outcome is one judgement of a check, or of a part of one.
type outcome struct {
	passed bool
	obs    Observation
	// feedback is a script's FAIL: lines by language.
	feedback labs.Text
	probeErr bool
	// undecided says the matcher had nothing to judge (see verdict), so a
	// not of this does not pass either.
	undecided bool
}

// judge judges a check once; its timeout bounds every probe it reads.
func (g *Grader) judge(ctx context.Context, c *labs.Check, answer string) outcome {
	timeout := c.Timeout.D()
	if timeout == 0 {
		timeout = labs.DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return g.judgeCondition(ctx, c.Condition(), answer)
}

// value is what a probe read.
type value struct {
	s string
	// missing says there was nothing to read (object not found, no such
	// file): the value is empty, and obs says why.
	missing bool
	// obs is what the probe observed: the value, or why there was none.
	obs Observation
}

// readValue is a value a probe read, observed as note n says.
func readValue(n Note, s string, args ...string) value {
	o := note(n, args...)
	o.Value = s
	return value{s: s, obs: o}
}

// nothing is a probe that found nothing to read, for the reason n says.
func nothing(n Note, args ...string) value {
	return value{missing: true, obs: note(n, args...)}
}

// shorten cuts s to about 600 bytes, on a rune boundary.
func shorten(s string) string {
	const max = 600
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + " …"
}

// MaxOutput bounds what one probe command may print (stdout and stderr
// each): a learner's `ln -sf /dev/zero ~/.bash_history` must not make the
// server buffer gigabytes.
const MaxOutput = 1 << 20

// boundedBuffer keeps at most max bytes and calls over once when more come.
type boundedBuffer struct {
	max  int
	buf  []byte
	over bool
	stop func()
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if b.over {
		return len(p), nil
	}
	if len(b.buf)+len(p) > b.max {
		b.buf = append(b.buf, p[:b.max-len(b.buf)]...)
		b.over = true
		b.stop() // ends the command: nobody reads the rest
		return len(p), nil
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// String is the output as text: cut on a rune boundary, invalid UTF-8
// replaced and NUL bytes removed (Postgres refuses both in text).
func (b *boundedBuffer) String() string {
	buf := b.buf
	if b.over {
		for i := len(buf) - 1; i >= 0 && i >= len(buf)-utf8.UTFMax; i-- {
			if utf8.RuneStart(buf[i]) {
				if !utf8.FullRune(buf[i:]) {
					buf = buf[:i]
				}
				break
			}
		}
	}
	return strings.ReplaceAll(strings.ToValidUTF8(string(buf), "\uFFFD"), "\x00", "")
}

// nodeShell runs a bash script on a node. On a node with the admin
// kubeconfig (the control plane), kubectl in the script uses it. Output
// past MaxOutput ends the command and the probe with a clear error.
func (g *Grader) nodeShell(ctx context.Context, node, script string, stdin io.Reader) (stdout, stderr string, code int, err error) {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := &boundedBuffer{max: MaxOutput, stop: cancel}
	errb := &boundedBuffer{max: MaxOutput, stop: cancel}
	full := "[ -r /etc/kubernetes/admin.conf ] && export KUBECONFIG=/etc/kubernetes/admin.conf\n" + script
	code, err = g.target.Exec(runCtx, node, []string{"bash", "-c", full}, stdin, out, errb)
	if out.over || errb.over {
		return out.String(), errb.String(), -1, failed(NoteOutputTooLarge, "node", node, "mib", strconv.Itoa(MaxOutput>>20))
	}
	if err != nil {
		return "", "", -1, failed(NoteExecFailed, "node", node, "detail", err.Error())
	}
	if ctx.Err() != nil {
		return out.String(), errb.String(), code, failed(NoteTimedOut, "node", node)
	}
	return out.String(), errb.String(), code, nil
}
