package workshops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/session"
	"github.com/podpath/podpath/store"
)

// Reset gives a learner a fresh cluster of the lab they are on (or were on
// last). fromStep ("lab/step", or "" for none) is the first step whose
// progress goes; the progress on the steps before it is kept.
//
// It is one transaction: the old session ended, the new one stored, the
// progress kept copied (and lab.started). If it fails, the learner goes on
// in the old session with all its progress; clusters are touched only once
// it has committed (the old one deleted, then the new one made). Ending
// the old session ends its take-overs.
func (c *Class) Reset(ctx context.Context, w *store.Workshop, learner int64, fromStep string) (*store.LabSession, error) {
	if w.Ended(time.Now()) {
		return nil, errs.Keyed(errs.Gone, "wsended", "this workshop has ended")
	}
	if _, err := c.Store.WorkshopLearner(ctx, w.ID, learner); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, errs.Keyed(errs.NotFound, "errnolearner", "no such learner in this workshop")
		}
		return nil, err
	}
	sessions, err := c.Store.WorkshopSessions(ctx, w.ID)
	if err != nil {
		return nil, err
	}
	var last *store.LabSession
	for _, sess := range sessions {
		if sess.UserID == learner {
			last = sess
		}
	}
	if last == nil {
		return nil, errs.Keyed(errs.Conflict, "errresetnosession", "this learner has no session yet: nothing to reset")
	}
	l := labs.Find(c.Labs, last.LabID)
	if l == nil {
		return nil, errs.Keyed(errs.NotFound, "errnolab", "no lab "+last.LabID+" on this server", "lab", fmt.Sprintf("%q", last.LabID))
	}
	var keep []string
	if fromStep != "" {
		labID, stepID, _ := strings.Cut(fromStep, "/")
		if labID != l.ID || l.Step(stepID) == nil {
			var keys []string
			for _, st := range l.Steps {
				keys = append(keys, l.ID+"/"+st.ID)
			}
			step := fmt.Sprintf("%.80q", fromStep)
			return nil, errs.Keyed(errs.Invalid, "errresetstep", "fromStep "+step+" is not a step of lab "+l.ID,
				"step", step, "lab", l.ID, "steps", strings.Join(keys, ", "))
		}
		for _, st := range l.Steps {
			if st.ID == stepID {
				break
			}
			keep = append(keep, st.ID)
		}
	}
	opts := []session.StartOption{session.WithProgressFrom(last.ID, keep)}
	if last.State == store.SessionActive {
		opts = append(opts, session.Replacing(last, "reset by the instructor"))
	}
	fresh, err := c.StartIn(ctx, w, learner, l, opts...)
	if errors.Is(err, session.ErrNotSaved) {
		return nil, errs.Keyed(errs.Unavailable, "errresetfailed", "the reset could not be saved, so nothing changed; try again in a moment")
	}
	if err != nil {
		return nil, err
	}
	c.Log.Info("learner reset", "workshop", w.ID, "learner", learner, "from", fromStep, "session", fresh.ID)
	return fresh, nil
}
