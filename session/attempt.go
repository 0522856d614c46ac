package session

import (
	"context"
	"encoding/json"
	"time"

	"github.com/podpath/podpath/grader"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/progress"
	"github.com/podpath/podpath/store"
)

// Attempt checks a step (skip=false) or runs its solve and then checks it
// (skip=true), records the attempt, and returns it. When the attempt
// cannot be recorded (with what the OnAttempted hooks write) nothing is,
// and the error is of kind ErrUnavailable and ErrNotSaved.
func (e *Engine) Attempt(ctx context.Context, sess *store.LabSession, stepID, answer string, skip bool) (*store.Attempt, error) {
	if err := e.ready(); err != nil {
		return nil, err
	}
	if sess.State != store.SessionActive {
		return nil, errEnded()
	}
	lab := e.SessionLab(sess)
	if lab == nil {
		return nil, errLabGone(sess.LabID)
	}
	step := lab.Step(stepID)
	if step == nil {
		return nil, errNoStep(lab.ID, stepID)
	}
	if skip && step.NoSkip {
		return nil, errNoSkip()
	}
	l, err := e.lifeOf(ctx, sess)
	if err != nil {
		return nil, err
	}
	l.touched.Store(time.Now().UnixNano())
	if err := e.wake(ctx, l); err != nil {
		return nil, err
	}
	l.mu.Lock()
	ph := l.phase
	l.mu.Unlock()
	if ph != phaseReady {
		return nil, errNotReady(ph.sandboxState())
	}
	l.waitSettled(ctx)
	l.mu.Lock()
	ph = l.phase
	l.mu.Unlock()
	if ph != phaseReady {
		return nil, errNotReady(ph.sandboxState())
	}
	l.attemptMu.Lock()
	defer l.attemptMu.Unlock()
	l.busy.Add(1)
	defer func() {
		l.busy.Add(-1)
		l.touched.Store(time.Now().UnixNano())
	}()

	statuses, err := e.store.StepStatuses(ctx, sess.ID)
	if err != nil {
		return nil, err
	}
	g := e.grader(l)
	start := time.Now()
	a := &store.Attempt{LabSessionID: sess.ID, StepID: stepID, Kind: store.AttemptCheck}
	if skip {
		a.Kind = store.AttemptSkip
		if err := g.Run(ctx, step.Solve, &answer); err != nil {
			msg := "the step's solve failed: " + err.Error()
			a.Error = &msg
		}
	}
	if answer != "" {
		a.Answer = &answer
	}
	var results []grader.Result
	if a.Error == nil {
		results = g.CheckStep(ctx, step, grader.Options{Answer: answer, Attempt: statuses[stepID].Attempts + 1, Since: progress.Began(lab, stepID, progress.FromStatuses(statuses), sess.CreatedAt)})
		a.Passed = grader.Passed(results)
	}
	a.Duration = time.Since(start)
	for _, r := range results {
		name, _ := json.Marshal(r.Name)
		var fb json.RawMessage
		if len(r.Feedback) > 0 {
			fb, _ = json.Marshal(r.Feedback)
		}
		var words json.RawMessage
		if len(r.Words) > 0 {
			words, _ = json.Marshal(r.Words)
		}
		a.Results = append(a.Results, store.CheckResult{Index: r.Index, Name: name, Passed: r.Passed, Observed: r.Observed, ObservedWords: words,
			Feedback: fb, ProbeError: r.ProbeError, Duration: r.Duration})
		e.metrics.checkSeconds.Observe(r.Duration.Seconds())
	}
	// The attempt and what it announces (the OnAttempted hooks: webhook
	// events) are written together or not at all.
	_, attempted := e.hooks()
	err = e.store.InTx(ctx, func(ctx context.Context) error {
		if err := e.store.RecordAttempt(ctx, a); err != nil {
			return err
		}
		for _, fn := range attempted {
			if err := fn(ctx, sess, a); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		e.log.Error("record an attempt: nothing was stored", "session", sess.ID, "step", stepID, "err", err)
		return nil, notSaved("errattemptnotsaved", "this attempt could not be saved, so it does not count yet; try again in a moment")
	}
	e.publish(sess.ID, EventAttempt, a)
	if a.Passed {
		// The next step begins now: what it runs as it begins (a
		// Killercoda step's background script) starts. A failure here is
		// the lab's, not the attempt's: it is logged.
		if next := nextStep(lab.Steps, stepID); next != nil && len(next.Start) > 0 {
			if err := g.Run(ctx, next.Start, nil); err != nil {
				e.log.Error("start a step", "session", sess.ID, "step", next.ID, "err", err)
			}
		}
	}
	return a, nil
}

// nextStep is the step after id in the lab's order, or nil.
func nextStep(steps []labs.Step, id string) *labs.Step {
	for i := range steps {
		if steps[i].ID == id && i+1 < len(steps) {
			return &steps[i+1]
		}
	}
	return nil
}
