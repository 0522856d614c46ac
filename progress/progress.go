// Package progress says where a learner is in a lab and what they have
// done, from the states of its steps: the step they are on, when a step
// began, whether and when the lab finished, the end-of-lab summary, a lab's
// progress over many sessions, an assignment's progress and a history.
//
// It is pure: it reads no database and knows nothing of HTTP. Callers load
// step states from the store and turn them into Steps with one of the From
// functions; which source they read decides what "done" means (see them).
package progress

import (
	"time"

	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/store"
)

// Step is what a session did on one step. The zero Step is a step never
// checked.
type Step struct {
	// Status is store.StepPassed, StepSkipped or StepFailed; "" (or
	// StepPending) for a step never checked.
	Status string
	// Attempts counts what the source counts (see the From functions).
	Attempts int
	// Failed counts failed checks; Hints the different hints shown.
	Failed, Hints int
	// UpdatedAt is when Status was set.
	UpdatedAt time.Time
	// PassedAt is the step's first pass (a check or a skip), if any.
	PassedAt *time.Time
}

// Steps are a session's steps by id; a step missing is one never checked.
type Steps map[string]Step

// FromStatuses reads a session's step statuses as they are now: a step is
// done while its last attempt passed or skipped it (a failed check of a
// passed step undoes it), and its time is that last attempt's. What the lab
// page, the board, the end-of-lab summary and grading go by. Attempts counts
// checks and skips.
func FromStatuses(in map[string]store.StepStatus) Steps {
	out := make(Steps, len(in))
	for id, st := range in {
		out[id] = Step{Status: st.Status, Attempts: st.Attempts, UpdatedAt: st.UpdatedAt}
	}
	return out
}

// FromStats reads a workshop board's step statistics: done as FromStatuses,
// with failed checks, hints and the first pass. Attempts counts checks only.
func FromStats(in map[string]*store.StepStat) Steps {
	out := make(Steps, len(in))
	for id, st := range in {
		if st == nil {
			continue
		}
		out[id] = Step{Status: st.Status, Attempts: st.Attempts, Failed: st.Failed, Hints: st.Hints,
			UpdatedAt: st.UpdatedAt, PassedAt: st.PassedAt}
	}
	return out
}

// FromRecord reads a session's record as reports count it: a step passed
// once stays done, at its first pass, skipped if that pass was a skip,
// whatever later checks said. Attempts counts checks and skips.
func FromRecord(r *store.LabRecord) Steps {
	out := make(Steps, len(r.Steps))
	for id, sr := range r.Steps {
		st := Step{Attempts: sr.Attempts}
		if sr.PassedAt != nil {
			st.Status, st.UpdatedAt, st.PassedAt = store.StepPassed, *sr.PassedAt, sr.PassedAt
			if sr.Skipped {
				st.Status = store.StepSkipped
			}
		}
		out[id] = st
	}
	return out
}

// Done says whether the step is passed or skipped.
func Done(s Step) bool {
	return s.Status == store.StepPassed || s.Status == store.StepSkipped
}

// Current is the step the learner is on: the first of the lab's steps not
// done, or nil once every step is.
func Current(l *labs.Lab, s Steps) *labs.Step {
	for i := range l.Steps {
		if !Done(s[l.Steps[i].ID]) {
			return &l.Steps[i]
		}
	}
	return nil
}

// Began is when the learner could first see the step: the latest time a
// step before it was done, or start (the session's) if none was. History
// probes count only commands run since (issue 9: a command typed during an
// earlier step does not pass this one); the board's "on this step since"
// and its stuck rule start there too.
func Began(l *labs.Lab, step string, s Steps, start time.Time) time.Time {
	began := start
	for _, st := range l.Steps {
		if st.ID == step {
			break
		}
		if ss := s[st.ID]; Done(ss) && ss.UpdatedAt.After(began) {
			began = ss.UpdatedAt
		}
	}
	return began
}

// Finished says whether every step of the lab is done, and when the last of
// them was. A lab without steps never finishes.
func Finished(l *labs.Lab, s Steps) (time.Time, bool) {
	if len(l.Steps) == 0 {
		return time.Time{}, false
	}
	var last time.Time
	for _, st := range l.Steps {
		ss := s[st.ID]
		if !Done(ss) {
			return time.Time{}, false
		}
		if ss.UpdatedAt.After(last) {
			last = ss.UpdatedAt
		}
	}
	return last, true
}

// Summary is the end of a lab: the steps the learner passed and those
// podpath did for them (skipped), in the lab's order, and how long it took.
type Summary struct {
	Passed, Skipped []*labs.Step
	// FinishedAt is when the last step was done; Duration runs from the
	// start to it (0 if the clock says otherwise).
	FinishedAt time.Time
	Duration   time.Duration
	// Attempts adds up the lab's steps' attempts.
	Attempts int
}

// Summarize is the end of lab l for a session started at start, or nil
// while a step is still to do.
func Summarize(l *labs.Lab, s Steps, start time.Time) *Summary {
	finished, ok := Finished(l, s)
	if !ok {
		return nil
	}
	sum := &Summary{Passed: []*labs.Step{}, Skipped: []*labs.Step{}, FinishedAt: finished}
	for i := range l.Steps {
		st := &l.Steps[i]
		ss := s[st.ID]
		if ss.Status == store.StepSkipped {
			sum.Skipped = append(sum.Skipped, st)
		} else {
			sum.Passed = append(sum.Passed, st)
		}
		sum.Attempts += ss.Attempts
	}
	if d := finished.Sub(start); d > 0 {
		sum.Duration = d
	}
	return sum
}

// Next is the lab with the next order after l's in the catalog (the lowest
// order above it, the first id among equals), or nil after the last.
func Next(l *labs.Lab, catalog []*labs.Lab) *labs.Lab {
	var next *labs.Lab
	for _, c := range catalog {
		if c.Order <= l.Order {
			continue
		}
		if next == nil || c.Order < next.Order || (c.Order == next.Order && c.ID < next.ID) {
			next = c
		}
	}
	return next
}
