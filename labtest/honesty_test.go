package labtest

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/podpath/podpath/grader"
	"github.com/podpath/podpath/labs"
)

// node01 is a node whose `test -e /done` exits with done's value; it
// counts the commands it runs.
type node01 struct {
	done  int
	execs atomic.Int32
}

func (n *node01) Exec(ctx context.Context, node string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	n.execs.Add(1)
	if node != "node01" || !strings.HasSuffix(cmd[len(cmd)-1], "test -e /done") {
		return -1, errors.New("unknown command")
	}
	return n.done, nil
}

func (*node01) RESTConfig(context.Context) (*rest.Config, error) {
	return nil, errors.New("no API server")
}

// While a check that reads no answer fails, no guess can pass the step:
// honesty says so and sends none (each guess was a round of probes on the
// nodes). Once it passes, every guess is sent, and one the text shows is
// caught.
func TestHonestySendsNoGuessWhileAnotherCheckFails(t *testing.T) {
	eq := func(s string) *string { return &s }
	step := &labs.Step{ID: "s",
		Body: labs.Text{"en": "Count them: there are `42`, or 7, or 8, or 9."},
		Checks: []labs.Check{
			{Name: labs.Text{"en": "done"}, Probe: labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: "test -e /done", Output: "exitCode"}}, Expect: labs.Matcher{Equals: eq("0")}},
			{Name: labs.Text{"en": "count"}, Probe: labs.Probe{Answer: &labs.AnswerProbe{}}, Expect: labs.Matcher{Equals: eq("42")}},
		},
	}
	lab := &labs.Lab{ID: "l", Steps: []labs.Step{*step}}
	target := &node01{done: 1}
	g := grader.New(target, lab)
	tried, fooled := honesty(context.Background(), g, target, step, lab, nil, nil, time.Now())
	if len(fooled) != 0 || len(tried) != 1 || !strings.Contains(tried[0], `"done", which reads none, fails before the solve`) {
		t.Errorf("with the work not done: tried %q, fooled %q", tried, fooled)
	}
	if n := target.execs.Load(); n != 1 {
		t.Errorf("%d commands ran on the node, want 1 (the check that reads no answer, once)", n)
	}

	target.done = 0
	tried, fooled = honesty(context.Background(), g, target, step, lab, nil, nil, time.Now())
	if len(tried) < 4 || len(fooled) != 1 || !strings.Contains(fooled[0], `"42"`) {
		t.Errorf("with the other check passing: tried %q, fooled %q; want every guess tried and 42 caught", tried, fooled)
	}
}

// recorder is a control plane that runs every command with exit 0 and
// keeps each script it was sent.
type recorder struct{ scripts []string }

func (r *recorder) Exec(ctx context.Context, node string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	r.scripts = append(r.scripts, node+": "+cmd[len(cmd)-1])
	return 0, nil
}

func (*recorder) RESTConfig(context.Context) (*rest.Config, error) {
	return nil, errors.New("no API server")
}

// A step nothing verifies (a Killercoda step with no verify script) is not
// proven by a check that always passes: labs test reports it as not
// testable, still runs its commands (later steps build on them), and does
// not run its check before or after.
func TestUnverifiedStepIsNotTestable(t *testing.T) {
	lab := &labs.Lab{ID: "kc", Steps: []labs.Step{{ID: "step1", Unverified: true,
		Checks: []labs.Check{{Name: labs.Text{"en": "no verify"}, Probe: labs.Probe{Script: &labs.ScriptProbe{Node: "controlplane", Script: "exit 0 # the check"}}}},
		Solve:  []labs.Action{{Run: "touch /root/solved", Node: "controlplane"}}}}}
	target := &recorder{}
	var out strings.Builder
	res := runLab(context.Background(), target, lab, LabResult{Lab: "kc"}, Options{StrictHonesty: true}, func(f string, a ...any) { out.WriteString(f + "\n") })
	if len(res.Steps) != 1 || res.Steps[0].NotTestable != "no verify script" || !res.OK() {
		t.Fatalf("result %+v", res)
	}
	ran := strings.Join(target.scripts, "\n")
	if !strings.Contains(ran, "touch /root/solved") || strings.Contains(ran, "the check") {
		t.Errorf("the solve runs and the check does not; ran:\n%s", ran)
	}
	var table strings.Builder
	printTable(&table, []LabResult{res})
	if !strings.Contains(table.String(), "not testable (no verify script)") {
		t.Errorf("the table:\n%s", table.String())
	}
}
