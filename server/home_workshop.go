package server

import (
	"time"

	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/store"
)

// The home page of a workshop's learner: their workshop, what they passed
// in it, and what they can do now. A guest (an account bound to one
// workshop) can take that workshop's labs while it is open and none after;
// a learner with an account of their own takes every lab, in or out of a
// workshop, and sees their latest workshop here until a day after its end.

// homeWorkshopAfter is how long after its end a learner with an account
// still sees a workshop on their home page.
const homeWorkshopAfter = 24 * time.Hour

// homeWorkshop is a learner's workshop on the home page.
type homeWorkshop struct {
	ID    int64
	Title string
	State string
	Ended bool
	// Guest: the user is this workshop's guest.
	Guest bool
	// Labs are the workshop's labs, by id.
	Labs map[string]bool
	// Results are the learner's, one a lab of the workshop in its order.
	Results []homeResult
	// Active is the learner's active session in the workshop, if any.
	Active *store.LabSession
}

// homeResult is a learner's progress on one lab of a workshop.
type homeResult struct {
	Lab, Title  string
	Done, Total int
	// Status is notstarted, inprogress or completed (message keys).
	Status string
}

// homeWorkshop finds the workshop the home page shows the user: a guest's
// own, or a learner's open one, or the latest that ended less than a day
// ago; nil when there is none.
func (s *Server) homeWorkshop(c echo.Context, u *store.User, active *store.LabSession) *homeWorkshop {
	if u == nil {
		return nil
	}
	ctx := c.Request().Context()
	list, err := s.store.UserWorkshops(ctx, u.ID)
	if err != nil {
		s.log.Warn("home: the learner's workshops", "user", u.ID, "err", err)
		return nil
	}
	now := time.Now()
	var w *store.Workshop
	for _, x := range list {
		if u.GuestWorkshop != 0 {
			if x.ID == u.GuestWorkshop {
				w = x
				break
			}
			continue
		}
		if x.State(now) == store.WorkshopOpen {
			w = x // an open one comes first
			break
		}
		if w == nil && x.Ended(now) && now.Sub(workshopEnd(x)) < homeWorkshopAfter {
			w = x
		}
	}
	if w == nil {
		return nil
	}
	hw := &homeWorkshop{ID: w.ID, Title: w.Title, State: w.State(now), Ended: w.Ended(now), Guest: u.GuestWorkshop == w.ID,
		Labs: map[string]bool{}}
	for _, id := range w.LabIDs {
		hw.Labs[id] = true
	}
	if active != nil && active.WorkshopID != nil && *active.WorkshopID == w.ID {
		hw.Active = active
	}
	row, err := s.class.LearnerRow(ctx, w, u.ID, now)
	if errs.KindOf(err) == errs.NotFound {
		return hw
	}
	if err != nil {
		s.log.Warn("home: the learner's results", "workshop", w.ID, "err", err)
		return hw
	}
	activeLab := ""
	if row.Active != nil {
		activeLab = row.Active.LabID
	}
	lg := lang(c)
	for _, id := range w.LabIDs {
		l := labs.Find(s.labs, id)
		if l == nil {
			continue
		}
		r := homeResult{Lab: l.ID, Title: l.Title.In(lg), Total: len(l.Steps), Status: "notstarted"}
		tried := false
		for _, st := range l.Steps {
			cell := row.Cells[l.ID+"/"+st.ID]
			if cell == nil {
				continue
			}
			if cell.Done() {
				r.Done++
			}
			if cell.Status != store.StepPending {
				tried = true
			}
		}
		switch {
		case r.Done == r.Total:
			r.Status = "completed"
		case tried || activeLab == l.ID:
			r.Status = "inprogress"
		}
		hw.Results = append(hw.Results, r)
	}
	return hw
}

// workshopEnd is when a workshop ended: by hand, or at its end time.
func workshopEnd(w *store.Workshop) time.Time {
	if w.EndedAt != nil && w.EndedAt.Before(w.EndsAt) {
		return *w.EndedAt
	}
	return w.EndsAt
}
