package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/bus"
	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/progress"
	"github.com/podpath/podpath/store"
	"github.com/podpath/podpath/workshops"
)

// The instructor's live board: its rows, one learner's row and the event
// stream that keeps it live.

// BoardView is the instructor's live board.
type BoardView struct {
	Workshop      *WorkshopView `json:"workshop"`
	Steps         []BoardStep   `json:"steps"`
	StuckAttempts int           `json:"stuckAttempts"`
	StuckMinutes  int           `json:"stuckMinutes"`
	Learners      []*LearnerRow `json:"learners"`
}

// BoardStep is a column of the board.
type BoardStep struct {
	Key      string `json:"key"`
	Lab      string `json:"lab"`
	LabTitle string `json:"labTitle"`
	Step     string `json:"step"`
	Title    string `json:"title"`
}

// LearnerRow is a learner's row of the board.
type LearnerRow struct {
	ID          int64                `json:"id"`
	Name        string               `json:"name"`
	Guest       bool                 `json:"guest"`
	JoinedAt    time.Time            `json:"joinedAt"`
	SessionID   string               `json:"sessionId"`
	Lab         string               `json:"lab"`
	Cluster     string               `json:"cluster"`
	CurrentStep string               `json:"currentStep"`
	StepSince   *time.Time           `json:"stepSince"`
	IdleSeconds int                  `json:"idleSeconds"`
	Hand        bool                 `json:"hand"`
	HandAt      *time.Time           `json:"handAt"`
	Stuck       bool                 `json:"stuck"`
	StuckWhy    string               `json:"stuckWhy,omitempty"`
	Passed      int                  `json:"passed"`
	Total       int                  `json:"total"`
	Takeover    *TakeoverRef         `json:"takeover"`
	Cells       map[string]*CellView `json:"cells"`
	Nodes       []string             `json:"nodes,omitempty"`
}

// TakeoverRef is an open take-over as pages show it.
type TakeoverRef struct {
	Instructor string    `json:"instructor"`
	Since      time.Time `json:"since"`
}

// CellView is a learner's state on one step.
type CellView struct {
	Status   string     `json:"status"`
	Attempts int        `json:"attempts"`
	Failed   int        `json:"failed"`
	Hints    int        `json:"hints"`
	Check    string     `json:"check,omitempty"`
	Observed string     `json:"observed,omitempty"`
	At       *time.Time `json:"at,omitempty"`
	// TimeToPassSeconds is from the previous step's pass (or the lab's
	// start) to this step's first pass.
	TimeToPassSeconds *int `json:"timeToPassSeconds,omitempty"`
}

// boardData is what rows are computed from, read once per board.
func (s *Server) boardSteps(c echo.Context, w *store.Workshop) []BoardStep {
	lg := lang(c)
	var out []BoardStep
	for _, id := range w.LabIDs {
		l := labs.Find(s.labs, id)
		if l == nil {
			continue
		}
		for _, st := range l.Steps {
			out = append(out, BoardStep{Key: l.ID + "/" + st.ID, Lab: l.ID, LabTitle: l.Title.In(lg), Step: st.ID, Title: st.Title.In(lg)})
		}
	}
	return out
}

// learnerRow computes a learner's row: per lab, the latest session of the
// lab counts (a reset copies the progress it keeps into the new one).
func (s *Server) learnerRow(c echo.Context, d *workshops.Data, ln *store.Learner) *LearnerRow {
	lg := lang(c)
	now := time.Now()
	row := &LearnerRow{ID: ln.UserID, Name: ln.Name, Guest: ln.Guest, JoinedAt: ln.JoinedAt, Hand: ln.HandAt != nil, HandAt: ln.HandAt,
		Cells: map[string]*CellView{}}
	latest := map[string]*store.LabSession{}
	var active *store.LabSession
	for _, sess := range d.Sessions[ln.UserID] {
		latest[sess.LabID] = sess
		if sess.State == store.SessionActive {
			active = sess
		}
	}
	for _, id := range d.W.LabIDs {
		l := labs.Find(s.labs, id)
		if l == nil {
			continue
		}
		sess := latest[id]
		var stats map[string]*store.StepStat
		var prev *time.Time
		if sess != nil {
			stats = d.Stats[sess.ID]
			start := sess.CreatedAt
			if first := d.Sessions[ln.UserID]; len(first) > 0 {
				for _, x := range first {
					if x.LabID == id {
						start = x.CreatedAt // the lab's first session
						break
					}
				}
			}
			prev = &start
		}
		for _, st := range l.Steps {
			row.Total++
			cell := &CellView{Status: store.StepPending}
			if stat := stats[st.ID]; stat != nil {
				cell.Status, cell.Attempts, cell.Failed, cell.Hints = stat.Status, stat.Attempts, stat.Failed, stat.Hints
				at := stat.UpdatedAt
				cell.At = &at
				if stat.Status == store.StepFailed && stat.LastFailedCheck != nil {
					var name labs.Text
					if json.Unmarshal(stat.LastFailedCheck, &name) == nil {
						cell.Check = name.In(lg)
					}
					cell.Observed = observedWords(stat.ObservedWords, stat.Observed, lg)
				}
				if stat.PassedAt != nil && prev != nil && stat.Status == store.StepPassed {
					secs := max(0, int(stat.PassedAt.Sub(*prev).Seconds()))
					cell.TimeToPassSeconds = &secs
				}
				if stat.PassedAt != nil {
					prev = stat.PassedAt
				}
			}
			if cell.Status == store.StepPassed || cell.Status == store.StepSkipped {
				row.Passed++
			}
			row.Cells[l.ID+"/"+st.ID] = cell
		}
	}
	if active != nil {
		row.SessionID, row.Lab = active.ID.String(), active.LabID
		row.IdleSeconds = max(0, int(now.Sub(active.LastActivityAt).Seconds()))
		if st, ok := s.engine.State(active.ID); ok {
			row.Cluster = st
		} else if sb, err := s.store.SandboxOf(c.Request().Context(), active.ID); err == nil {
			row.Cluster = sb.State
		}
		if l := s.engine.SessionLab(active); l != nil {
			steps := progress.FromStats(d.Stats[active.ID])
			if st := progress.Current(l, steps); st != nil {
				since := progress.Began(l, st.ID, steps, active.CreatedAt)
				row.CurrentStep = l.ID + "/" + st.ID
				row.StepSince = &since
				switch why, n := workshops.Stuck(steps[st.ID].Failed, since, now); why {
				case workshops.ByFails:
					row.Stuck, row.StuckWhy = true, plural(lg, "wsstuckfails", n, "step", st.Title.In(lg))
				case workshops.ByMinutes:
					row.Stuck, row.StuckWhy = true, plural(lg, "wsstuckminutes", n, "step", st.Title.In(lg))
				}
			}
		}
		if t := d.Takeovers[active.ID]; t != nil {
			row.Takeover = &TakeoverRef{Instructor: t.Instructor, Since: t.StartedAt}
		}
	}
	return row
}

func (s *Server) board(c echo.Context, w *store.Workshop) (*BoardView, error) {
	ctx := c.Request().Context()
	learners, err := s.store.WorkshopLearners(ctx, w.ID)
	if err != nil {
		return nil, err
	}
	d, err := workshops.Load(ctx, s.store, w)
	if err != nil {
		return nil, err
	}
	b := &BoardView{Workshop: s.workshopView(c, w, true), Steps: s.boardSteps(c, w), StuckAttempts: workshops.StuckAttempts, StuckMinutes: workshops.StuckMinutes,
		Learners: []*LearnerRow{}}
	for _, ln := range learners {
		b.Learners = append(b.Learners, s.learnerRow(c, d, ln))
	}
	return b, nil
}

func (s *Server) oneLearnerRow(c echo.Context, w *store.Workshop, userID int64) (*LearnerRow, error) {
	ctx := c.Request().Context()
	ln, err := s.store.WorkshopLearner(ctx, w.ID, userID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errs.E(errs.NotFound, translate("errnolearner", lang(c)))
	}
	if err != nil {
		return nil, err
	}
	d, err := workshops.Load(ctx, s.store, w)
	if err != nil {
		return nil, err
	}
	return s.learnerRow(c, d, ln), nil
}

func (s *Server) apiBoard(c echo.Context) error {
	w, err := s.staffWorkshop(c)
	if err != nil {
		return err
	}
	b, err := s.board(c, w)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, b)
}

func (s *Server) apiWorkshopLearner(c echo.Context) error {
	w, id, err := s.staffLearner(c)
	if err != nil {
		return err
	}
	row, err := s.oneLearnerRow(c, w, id)
	if err != nil {
		return err
	}
	row.Nodes = []string{}
	if row.SessionID != "" {
		if sb, err := s.store.SandboxOf(c.Request().Context(), uuid.MustParse(row.SessionID)); err == nil {
			for _, n := range nodeViews(sb.Nodes) {
				row.Nodes = append(row.Nodes, n.Alias)
			}
		}
	}
	return c.JSON(http.StatusOK, row)
}

// apiWorkshopEvents streams the board: the whole board first and every
// 5 s, a learner's row when it changes, the workshop when it changes.
func (s *Server) apiWorkshopEvents(c echo.Context) error {
	w, err := s.staffWorkshop(c)
	if err != nil {
		return err
	}
	release, err := s.streams.acquire(currentUser(c).ID)
	if err != nil {
		return err
	}
	defer release()
	deadline := streamDeadlines(c)
	events, cancel := s.wsHub.subscribe(w.ID)
	defer cancel()
	b, err := s.board(c, w)
	if err != nil {
		return err
	}
	write := eventStream(c, deadline)
	if write("board", b) != nil {
		return nil
	}
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	ctx := c.Request().Context()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.closing:
			return nil
		case e, ok := <-events:
			if !ok {
				return nil // the server is shutting down
			}
			switch e.Type {
			case "learner":
				var user int64
				if e.Decode(&user) != nil {
					continue
				}
				row, err := s.oneLearnerRow(c, w, user)
				if err != nil {
					continue
				}
				if write("learner", row) != nil {
					return nil
				}
				// A join or a reset changes the seats taken and the
				// clusters handed out, too.
				if nw, err := s.store.WorkshopByID(ctx, w.ID); err == nil {
					w = nw
					if write("workshop", s.workshopView(c, w, true)) != nil {
						return nil
					}
				}
			case "ended":
				_ = write("ended", e.Data)
				return nil
			case "workshop":
				// Changed on some replica: read it again, in this page's
				// language.
				if nw, err := s.store.WorkshopByID(ctx, w.ID); err == nil {
					w = nw
					if write("workshop", s.workshopView(c, w, true)) != nil {
						return nil
					}
				}
			case bus.TypeResync:
				// Events may have been lost between replicas: the whole
				// board again.
				if b, err := s.board(c, w); err == nil && write("board", b) != nil {
					return nil
				}
			}
		case <-tick.C:
			nw, err := s.store.WorkshopByID(ctx, w.ID)
			if err != nil {
				continue
			}
			w = nw
			b, err := s.board(c, w)
			if err != nil {
				continue
			}
			if write("board", b) != nil {
				return nil
			}
		}
	}
}
