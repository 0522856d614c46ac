package progress

import (
	"time"

	"github.com/google/uuid"

	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/store"
)

// Statuses of a lab or an assignment.
const (
	NotStarted = "not_started"
	InProgress = "in_progress"
	Completed  = "completed"
)

// Lab is a user's progress on one lab over all their sessions of it.
type Lab struct {
	ID     string
	Status string
	// CurrentStep is the first step not done in the latest session, while
	// in progress.
	CurrentStep string
	StartedAt   *time.Time
	CompletedAt *time.Time
	// TimeSpent runs from the start of the session that completed the lab
	// to its last step.
	TimeSpent time.Duration
	// Attempts counts checks over every session of the lab; Skips the
	// steps podpath solved in the completing (else the latest) session.
	Attempts int
	Skips    int
}

// Labs folds lab records (oldest first, as store.LabRecords lists them)
// into each user's progress per lab: user id → lab id → progress. Steps
// count as FromRecord reads them. A session ended before any check is no
// start; a lab is completed by the first session that finished it; a lab
// find does not know (no longer offered) is left out. attempts are
// store.LabAttempts' counts (over all sessions, carried ones once).
func Labs(recs []*store.LabRecord, attempts map[int64]map[string]int, find func(id string) *labs.Lab) map[int64]map[string]*Lab {
	out := map[int64]map[string]*Lab{}
	for _, r := range recs {
		l := find(r.LabID)
		if l == nil || (!r.Active && len(r.Steps) == 0) {
			continue
		}
		byLab := out[r.UserID]
		if byLab == nil {
			byLab = map[string]*Lab{}
			out[r.UserID] = byLab
		}
		p := byLab[l.ID]
		if p == nil {
			started := r.StartedAt
			p = &Lab{ID: l.ID, Status: InProgress, StartedAt: &started, Attempts: attempts[r.UserID][l.ID]}
			byLab[l.ID] = p
		}
		if p.Status == Completed {
			continue // the first completion counts
		}
		steps := FromRecord(r)
		p.Skips, p.CurrentStep = skips(l, steps), ""
		if cur := Current(l, steps); cur != nil {
			p.CurrentStep = cur.ID
		}
		if finished, ok := Finished(l, steps); ok {
			p.Status = Completed
			p.CompletedAt = &finished
			if d := finished.Sub(r.StartedAt); d > 0 {
				p.TimeSpent = d
			}
		}
	}
	return out
}

func skips(l *labs.Lab, s Steps) int {
	n := 0
	for _, st := range l.Steps {
		if s[st.ID].Status == store.StepSkipped {
			n++
		}
	}
	return n
}

// Assignment is a user's progress on the labs of an assignment (or a
// track).
type Assignment struct {
	Status string
	// Overdue: past the due date and not completed.
	Overdue     bool
	LabsDone    int
	LabsTotal   int
	NextLab     string
	CompletedAt *time.Time
	// TimeSpent, Attempts and Skips add up the labs'.
	TimeSpent time.Duration
	Attempts  int
	Skips     int
	// Labs are in the order of labIDs, a lab not started as NotStarted.
	Labs []*Lab
}

// OfAssignment is the progress on labIDs, due at due, from a user's
// progress by lab (Labs). Nothing to do (no labs: a removed lab or track)
// is neither completed nor overdue.
func OfAssignment(labIDs []string, due, now time.Time, byLab map[string]*Lab) *Assignment {
	a := &Assignment{LabsTotal: len(labIDs), Labs: []*Lab{}}
	started := false
	var last time.Time
	for _, id := range labIDs {
		lp := byLab[id]
		if lp == nil {
			lp = &Lab{ID: id, Status: NotStarted}
		}
		a.Labs = append(a.Labs, lp)
		a.Attempts += lp.Attempts
		a.Skips += lp.Skips
		a.TimeSpent += lp.TimeSpent
		if lp.Status != NotStarted {
			started = true
		}
		if lp.Status == Completed {
			a.LabsDone++
			if lp.CompletedAt.After(last) {
				last = *lp.CompletedAt
			}
		} else if a.NextLab == "" {
			a.NextLab = id
		}
	}
	switch {
	case a.LabsTotal > 0 && a.LabsDone == a.LabsTotal:
		a.Status = Completed
		a.CompletedAt = &last
	case started:
		a.Status = InProgress
	default:
		a.Status = NotStarted
	}
	a.Overdue = a.Status != Completed && a.LabsTotal > 0 && now.After(due)
	return a
}

// Entry is one lab session of a history.
type Entry struct {
	Session   uuid.UUID
	Lab       string
	Active    bool
	StartedAt time.Time
	EndedAt   *time.Time
	// Steps is how many steps the lab has (0 for a lab find does not
	// know); StepsDone, Attempts and Skips count among them, as
	// FromRecord reads them.
	StepsDone, Steps, Attempts, Skips int
	Completed                         bool
}

// History lists the sessions of lab records (oldest first, as
// store.LabRecords lists them), newest first.
func History(recs []*store.LabRecord, find func(id string) *labs.Lab) []Entry {
	out := make([]Entry, 0, len(recs))
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		e := Entry{Session: r.SessionID, Lab: r.LabID, Active: r.Active, StartedAt: r.StartedAt, EndedAt: r.EndedAt}
		if l := find(r.LabID); l != nil {
			steps := FromRecord(r)
			e.Steps = len(l.Steps)
			for _, st := range l.Steps {
				ss := steps[st.ID]
				e.Attempts += ss.Attempts
				if Done(ss) {
					e.StepsDone++
				}
			}
			e.Skips = skips(l, steps)
			_, e.Completed = Finished(l, steps)
		}
		out = append(out, e)
	}
	return out
}
