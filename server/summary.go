package server

import (
	"time"

	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/store"
)

// SummaryView is the end of a lab, in a session whose every step is passed
// or skipped: which steps the learner passed and which podpath did for them,
// how long it took, what to take away, and the lab to take next. The
// takeaways come only with it: they name some of the lab's answers.
type SummaryView struct {
	Passed  []StepBase `json:"passed"`
	Skipped []StepBase `json:"skipped"`
	// DurationMS runs from the session's start to the last step's last
	// attempt (FinishedAt).
	DurationMS int64        `json:"durationMs"`
	FinishedAt time.Time    `json:"finishedAt"`
	Takeaways  []string     `json:"takeaways"`
	Next       *NextLabView `json:"next,omitempty"`
}

// NextLabView is the lab after this one in the track.
type NextLabView struct {
	ID      string `json:"id"`
	Order   int    `json:"order"`
	Title   string `json:"title"`
	Summary string `json:"summary"`
}

// labSummary is the end of lab l for a session started at started with
// these step statuses, or nil while a step is still to do or failed.
// catalog is every lab the server offers, for the next one.
func labSummary(l *labs.Lab, catalog []*labs.Lab, statuses map[string]store.StepStatus, started time.Time, lg string) *SummaryView {
	if len(l.Steps) == 0 {
		return nil
	}
	sum := &SummaryView{Passed: []StepBase{}, Skipped: []StepBase{}, Takeaways: l.Takeaways.Lines(lg)}
	if sum.Takeaways == nil {
		sum.Takeaways = []string{}
	}
	for _, st := range l.Steps {
		status, ok := statuses[st.ID]
		if !ok {
			return nil
		}
		base := StepBase{ID: st.ID, Title: st.Title.In(lg), Layers: st.Layers}
		switch status.Status {
		case store.StepPassed:
			sum.Passed = append(sum.Passed, base)
		case store.StepSkipped:
			sum.Skipped = append(sum.Skipped, base)
		default:
			return nil
		}
		if status.UpdatedAt.After(sum.FinishedAt) {
			sum.FinishedAt = status.UpdatedAt
		}
	}
	if d := sum.FinishedAt.Sub(started); d > 0 {
		sum.DurationMS = d.Milliseconds()
	}
	if next := nextLab(l, catalog); next != nil {
		sum.Next = &NextLabView{ID: next.ID, Order: next.Order, Title: next.Title.In(lg), Summary: next.Summary.In(lg)}
	}
	return sum
}

// nextLab is the lab with the next order after l's (the lowest order above
// it, the first id among equals), or nil after the track's last lab.
func nextLab(l *labs.Lab, catalog []*labs.Lab) *labs.Lab {
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
