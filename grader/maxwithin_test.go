package grader

import (
	"context"
	"testing"
	"time"

	"github.com/podpath/podpath/labs"
)

// labs test polls a check before its solve for at most MaxWithin: a check
// that waits a minute for what never comes gives up at the cap, and says
// for how long it waited.
func TestMaxWithinCapsTheWait(t *testing.T) {
	g := New(nodes{"node01 echo Pending": {out: "Pending\n"}}, &labs.Lab{})
	g.PollInterval = 50 * time.Millisecond
	step := &labs.Step{Checks: []labs.Check{{
		Name:   labs.Text{"en": "running"},
		Within: labs.Duration(time.Minute),
		Probe:  labs.Probe{Command: &labs.CommandProbe{Node: "node01", Run: "echo Pending"}},
		Expect: is("Running"),
	}}}
	start := time.Now()
	res := g.CheckStep(context.Background(), step, Options{Attempt: 1, MaxWithin: 300 * time.Millisecond})
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("waited %s with a 300 ms cap", took)
	}
	if r := res[0]; r.Passed || r.Words["en"] != "Pending (still, after 300 ms)" {
		t.Errorf("capped: %+v", r)
	}
	// A cap longer than the check's within changes nothing.
	step.Checks[0].Within = labs.Duration(200 * time.Millisecond)
	res = g.CheckStep(context.Background(), step, Options{Attempt: 1, MaxWithin: time.Minute})
	if r := res[0]; r.Passed || r.Words["en"] != "Pending (still, after 200 ms)" {
		t.Errorf("cap above within: %+v", r)
	}
}
