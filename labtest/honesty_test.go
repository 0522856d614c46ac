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
