package workshops

import (
	"context"
	"errors"
	"time"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/progress"
	"github.com/podpath/podpath/store"
)

// The board: one row per learner, one column per step of the workshop's
// labs. This is what it says, in no language; the server words it.

// A Column is a step of one of the workshop's labs.
type Column struct {
	Lab  *labs.Lab
	Step *labs.Step
}

// Key names the column: "lab/step".
func (c Column) Key() string { return c.Lab.ID + "/" + c.Step.ID }

// Columns are the steps of the workshop's labs installed here, in order.
func (c *Class) Columns(w *store.Workshop) []Column {
	var out []Column
	for _, id := range w.LabIDs {
		l := labs.Find(c.Labs, id)
		if l == nil {
			continue
		}
		for i := range l.Steps {
			out = append(out, Column{Lab: l, Step: &l.Steps[i]})
		}
	}
	return out
}

// A Row is a learner's row of the board.
type Row struct {
	Learner *store.Learner
	// Cells are the learner's state on each column, by Column.Key: of
	// the lab's latest session (a reset copies what it keeps into the
	// new one).
	Cells map[string]*Cell
	// Passed counts the cells passed or skipped, of Total.
	Passed, Total int

	// Active is the learner's active session, nil if none; the rest is
	// about it.
	Active *store.LabSession
	// Cluster is its cluster's state (session.Phase words).
	Cluster string
	// Current is the step the learner is on (nil when every step is
	// done), since StepSince; Lab is its lab.
	Lab       *labs.Lab
	Current   *labs.Step
	StepSince time.Time
	// StuckBy says why the learner is stuck on Current (ByFails or
	// ByMinutes, "" when not), with its count.
	StuckBy string
	StuckN  int
	// Takeover is an instructor's open take-over of the active session.
	Takeover *store.Takeover
}

// A Cell is a learner's state on one step.
type Cell struct {
	Status string
	// Stat is what the step's attempts add up to; nil for a step never
	// tried.
	Stat *store.StepStat
	// TimeToPass is from the previous step's pass (or the lab's first
	// session's start) to this step's first pass, for a passed step.
	TimeToPass *time.Duration
}

// Done says the cell counts as done: passed or skipped.
func (c *Cell) Done() bool { return c.Status == store.StepPassed || c.Status == store.StepSkipped }

// Board is every learner's row of workshop w, at now.
func (c *Class) Board(ctx context.Context, w *store.Workshop, now time.Time) ([]*Row, error) {
	learners, err := c.Store.WorkshopLearners(ctx, w.ID)
	if err != nil {
		return nil, err
	}
	d, err := Load(ctx, c.Store, w)
	if err != nil {
		return nil, err
	}
	rows := make([]*Row, 0, len(learners))
	for _, ln := range learners {
		rows = append(rows, c.row(ctx, d, ln, now))
	}
	return rows, nil
}

// LearnerRow is one learner's row of workshop w, at now.
func (c *Class) LearnerRow(ctx context.Context, w *store.Workshop, userID int64, now time.Time) (*Row, error) {
	ln, err := c.Store.WorkshopLearner(ctx, w.ID, userID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errs.Keyed(errs.NotFound, "errnolearner", "no such learner in this workshop")
	}
	if err != nil {
		return nil, err
	}
	d, err := Load(ctx, c.Store, w)
	if err != nil {
		return nil, err
	}
	return c.row(ctx, d, ln, now), nil
}

func (c *Class) row(ctx context.Context, d *Data, ln *store.Learner, now time.Time) *Row {
	row := &Row{Learner: ln, Cells: map[string]*Cell{}}
	latest := map[string]*store.LabSession{}
	first := map[string]time.Time{} // each lab's first session's start
	for _, sess := range d.Sessions[ln.UserID] {
		latest[sess.LabID] = sess
		if _, ok := first[sess.LabID]; !ok {
			first[sess.LabID] = sess.CreatedAt
		}
		if sess.State == store.SessionActive {
			row.Active = sess
		}
	}
	for _, col := range c.Columns(d.W) {
		row.Total++
		cell := &Cell{Status: store.StepPending}
		row.Cells[col.Key()] = cell
		sess := latest[col.Lab.ID]
		if sess == nil {
			continue
		}
		stat := d.Stats[sess.ID][col.Step.ID]
		if stat == nil {
			continue
		}
		cell.Status, cell.Stat = stat.Status, stat
		if cell.Done() {
			row.Passed++
		}
		if stat.Status == store.StepPassed && stat.PassedAt != nil {
			// From the latest pass of an earlier step of the lab.
			since := first[col.Lab.ID]
			for _, st := range col.Lab.Steps {
				if st.ID == col.Step.ID {
					break
				}
				if p := d.Stats[sess.ID][st.ID]; p != nil && p.PassedAt != nil {
					since = *p.PassedAt
				}
			}
			ttp := max(0, stat.PassedAt.Sub(since))
			cell.TimeToPass = &ttp
		}
	}
	if a := row.Active; a != nil {
		if st, ok := c.Engine.State(a.ID); ok {
			row.Cluster = st
		} else if sb, err := c.Store.SandboxOf(ctx, a.ID); err == nil {
			row.Cluster = sb.State
		}
		if l := c.Engine.SessionLab(a); l != nil {
			steps := progress.FromStats(d.Stats[a.ID])
			if st := progress.Current(l, steps); st != nil {
				row.Lab, row.Current = l, st
				row.StepSince = progress.Began(l, st.ID, steps, a.CreatedAt)
				row.StuckBy, row.StuckN = Stuck(steps[st.ID].Failed, row.StepSince, now)
			}
		}
		row.Takeover = d.Takeovers[a.ID]
	}
	return row
}
