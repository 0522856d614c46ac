package server

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/bus"
	"github.com/podpath/podpath/labs"
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

func boardSteps(cols []workshops.Column, lg string) []BoardStep {
	out := make([]BoardStep, len(cols))
	for i, col := range cols {
		out[i] = BoardStep{Key: col.Key(), Lab: col.Lab.ID, LabTitle: col.Lab.Title.In(lg), Step: col.Step.ID, Title: col.Step.Title.In(lg)}
	}
	return out
}

// learnerRow is a board row (workshops.Row) in the words of lg.
func learnerRow(r *workshops.Row, lg string, now time.Time) *LearnerRow {
	ln := r.Learner
	row := &LearnerRow{ID: ln.UserID, Name: ln.Name, Guest: ln.Guest, JoinedAt: ln.JoinedAt, Hand: ln.HandAt != nil, HandAt: ln.HandAt,
		Passed: r.Passed, Total: r.Total, Cells: make(map[string]*CellView, len(r.Cells))}
	for key, cell := range r.Cells {
		v := &CellView{Status: cell.Status}
		if st := cell.Stat; st != nil {
			v.Attempts, v.Failed, v.Hints = st.Attempts, st.Failed, st.Hints
			at := st.UpdatedAt
			v.At = &at
			if st.Status == store.StepFailed && st.LastFailedCheck != nil {
				var name labs.Text
				if json.Unmarshal(st.LastFailedCheck, &name) == nil {
					v.Check = name.In(lg)
				}
				v.Observed = observedWords(st.ObservedWords, st.Observed, lg)
			}
		}
		if cell.TimeToPass != nil {
			secs := int(cell.TimeToPass.Seconds())
			v.TimeToPassSeconds = &secs
		}
		row.Cells[key] = v
	}
	if a := r.Active; a != nil {
		row.SessionID, row.Lab, row.Cluster = a.ID.String(), a.LabID, r.Cluster
		row.IdleSeconds = max(0, int(now.Sub(a.LastActivityAt).Seconds()))
		if r.Current != nil {
			since := r.StepSince
			row.CurrentStep, row.StepSince = r.Lab.ID+"/"+r.Current.ID, &since
			switch r.StuckBy {
			case workshops.ByFails:
				row.Stuck, row.StuckWhy = true, plural(lg, "wsstuckfails", r.StuckN, "step", r.Current.Title.In(lg))
			case workshops.ByMinutes:
				row.Stuck, row.StuckWhy = true, plural(lg, "wsstuckminutes", r.StuckN, "step", r.Current.Title.In(lg))
			}
		}
		if t := r.Takeover; t != nil {
			row.Takeover = &TakeoverRef{Instructor: t.Instructor, Since: t.StartedAt}
		}
	}
	return row
}

func (s *Server) board(c echo.Context, w *store.Workshop) (*BoardView, error) {
	now := time.Now()
	rows, err := s.class.Board(c.Request().Context(), w, now)
	if err != nil {
		return nil, err
	}
	lg := lang(c)
	b := &BoardView{Workshop: s.workshopView(c, w, true), Steps: boardSteps(s.class.Columns(w), lg), StuckAttempts: workshops.StuckAttempts, StuckMinutes: workshops.StuckMinutes,
		Learners: make([]*LearnerRow, 0, len(rows))}
	for _, r := range rows {
		b.Learners = append(b.Learners, learnerRow(r, lg, now))
	}
	return b, nil
}

func (s *Server) oneLearnerRow(c echo.Context, w *store.Workshop, userID int64) (*LearnerRow, error) {
	now := time.Now()
	r, err := s.class.LearnerRow(c.Request().Context(), w, userID, now)
	if err != nil {
		return nil, err
	}
	return learnerRow(r, lang(c), now), nil
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
