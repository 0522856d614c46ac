package server

import (
	"time"

	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/progress"
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
	DurationMS int64     `json:"durationMs"`
	FinishedAt time.Time `json:"finishedAt"`
	Takeaways  []string  `json:"takeaways"`
	// FinishHTML is the lab's finish text rendered (a Killercoda
	// scenario's), shown above the takeaways.
	FinishHTML string       `json:"finishHtml,omitempty"`
	Next       *NextLabView `json:"next,omitempty"`
}

// NextLabView is the lab after this one in the track.
type NextLabView struct {
	ID      string `json:"id"`
	Order   int    `json:"order"`
	Title   string `json:"title"`
	Summary string `json:"summary"`
	// Challenge: it starts in challenge mode only.
	Challenge bool `json:"challenge,omitempty"`
}

// labSummary shows the end of lab l (progress.Summarize) for a session
// started at started with these steps, or nil while a step is still to do
// or failed. catalog is every lab the server offers, for the next one.
func labSummary(l *labs.Lab, catalog []*labs.Lab, steps progress.Steps, started time.Time, lg string) *SummaryView {
	sum := progress.Summarize(l, steps, started)
	if sum == nil {
		return nil
	}
	v := &SummaryView{Passed: stepBases(sum.Passed, lg), Skipped: stepBases(sum.Skipped, lg), FinishedAt: sum.FinishedAt,
		DurationMS: sum.Duration.Milliseconds(), Takeaways: l.Takeaways.Lines(lg)}
	if v.Takeaways == nil {
		v.Takeaways = []string{}
	}
	if next := progress.Next(l, catalog); next != nil {
		v.Next = nextLabView(next, lg)
	}
	return v
}

func stepBases(steps []*labs.Step, lg string) []StepBase {
	out := make([]StepBase, 0, len(steps))
	for _, st := range steps {
		out = append(out, StepBase{ID: st.ID, Title: st.Title.In(lg), Layers: st.Layers})
	}
	return out
}

func nextLabView(l *labs.Lab, lg string) *NextLabView {
	return &NextLabView{ID: l.ID, Order: l.Order, Title: l.Title.In(lg), Summary: l.Summary.In(lg), Challenge: l.Challenge}
}
