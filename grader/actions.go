package grader

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/podpath/podpath/internal/names"
	"github.com/podpath/podpath/labs"
)

// Run performs actions in order (a lab's setup or cleanup, or a step's
// solve) and stops at the first that fails. answer, if not nil, receives the
// value of answer actions.
func (g *Grader) Run(ctx context.Context, actions []labs.Action, answer *string) error {
	for i := range actions {
		a := &actions[i]
		if err := g.runAction(ctx, a, answer); err != nil {
			return fmt.Errorf("action %d (%s): %w", i+1, a.Kind(), err)
		}
	}
	return nil
}

func (g *Grader) runAction(ctx context.Context, a *labs.Action, answer *string) error {
	switch a.Kind() {
	case "apply", "delete":
		file := a.Apply + a.Delete
		manifest, err := g.lab.Files(file)
		if err != nil {
			return err
		}
		cmd := "kubectl apply -f -"
		if a.Delete != "" {
			cmd = "kubectl delete --ignore-not-found --wait=false -f -"
		}
		out, errOut, code, err := g.nodeShell(ctx, names.ControlPlane, cmd, bytes.NewReader(manifest))
		if err != nil {
			return err
		}
		if code != 0 {
			return fmt.Errorf("kubectl %s %s: %s%s", a.Kind(), file, strings.TrimSpace(errOut), strings.TrimSpace(out))
		}
	case "copy":
		content, err := g.lab.Files(a.Copy)
		if err != nil {
			return err
		}
		node := a.Node
		if node == "" {
			node = names.ControlPlane
		}
		_, errOut, code, err := g.nodeShell(ctx, node, "mkdir -p \"$(dirname "+labs.ShellQuote(a.To)+")\" && cat > "+labs.ShellQuote(a.To), bytes.NewReader(content))
		if err != nil {
			return err
		}
		if code != 0 {
			return fmt.Errorf("copy %s to %s:%s: %s", a.Copy, node, a.To, strings.TrimSpace(errOut))
		}
	case "run":
		node := a.Node
		if node == "" {
			node = names.ControlPlane
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		out, errOut, code, err := g.nodeShell(ctx, node, a.Run, nil)
		if err != nil {
			return err
		}
		if code != 0 && !a.AllowFail {
			return fmt.Errorf("`%s` on %s exited %d: %s", a.Run, node, code, lastLines(strings.TrimSpace(out+"\n"+errOut), 10))
		}
	case "wait":
		c := labs.Check{Probe: a.Wait.Probe, Expect: a.Wait.Expect, Within: a.Wait.Timeout}
		o := g.overTime(ctx, &c, 0, func() outcome { return g.judge(ctx, &c, "") }, nil)
		if !o.passed {
			return fmt.Errorf("waited %s: %s", a.Wait.Timeout.D(), o.obs.Raw())
		}
	case "answer":
		v, err := g.read(ctx, a.Answer, "")
		if err != nil {
			return err
		}
		if v.missing {
			return fmt.Errorf("nothing to answer with: %s", v.obs.Raw())
		}
		if answer != nil {
			*answer = v.s
		}
	default:
		return fmt.Errorf("an action needs exactly one of apply, delete, copy, run, wait, answer")
	}
	return nil
}
