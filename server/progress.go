package server

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/progress"
	"github.com/podpath/podpath/store"
)

// Progress of a user on labs, tracks and assignments, computed from their
// lab sessions: what team reports, "Assigned to you" and a member's history
// show.

// LabProgress is a user's progress on one lab over all their sessions of
// it (progress.Lab).
type LabProgress struct {
	Lab    string `json:"lab"`
	Title  string `json:"title"`
	Status string `json:"status"`
	// CurrentStep is the first step not passed or skipped in the latest
	// session, while in progress.
	CurrentStep string     `json:"currentStep,omitempty"`
	StartedAt   *time.Time `json:"startedAt,omitempty"`
	CompletedAt *time.Time `json:"completedAt,omitempty"`
	// TimeSpentSeconds runs from the start of the session that completed
	// the lab to its last step.
	TimeSpentSeconds int64 `json:"timeSpentSeconds,omitempty"`
	// Attempts counts checks over every session of the lab; Skips the
	// steps podpath solved in the completing (else the latest) session.
	Attempts int `json:"attempts"`
	Skips    int `json:"skips"`
}

func (s *Server) labProgressView(p *progress.Lab, lg string) *LabProgress {
	return &LabProgress{Lab: p.ID, Title: s.labTitle(p.ID, lg), Status: p.Status, CurrentStep: p.CurrentStep,
		StartedAt: p.StartedAt, CompletedAt: p.CompletedAt, TimeSpentSeconds: int64(p.TimeSpent / time.Second),
		Attempts: p.Attempts, Skips: p.Skips}
}

// loadProgress reads the users' lab sessions and folds them into each
// user's progress per lab (progress.Labs): user id → lab id → progress.
// It returns the records too, for a history.
func (s *Server) loadProgress(ctx context.Context, userIDs []int64) (map[int64]map[string]*progress.Lab, []*store.LabRecord, error) {
	records, err := s.store.LabRecords(ctx, userIDs)
	if err != nil {
		return nil, nil, err
	}
	attempts, err := s.store.LabAttempts(ctx, userIDs)
	if err != nil {
		return nil, nil, err
	}
	return progress.Labs(records, attempts, s.offered), records, nil
}

// offered is the lab of this id the server offers, or nil.
func (s *Server) offered(id string) *labs.Lab { return labs.Find(s.labs, id) }

// AssignmentView is an assignment with what it covers.
type AssignmentView struct {
	ID        int64     `json:"id"`
	TeamID    int64     `json:"teamId"`
	TeamName  string    `json:"teamName"`
	Kind      string    `json:"kind"`
	Ref       string    `json:"ref"`
	DueAt     time.Time `json:"dueAt"`
	CreatedAt time.Time `json:"createdAt"`
	Title     string    `json:"title"`
	Labs      []string  `json:"labs"`
}

func (s *Server) assignmentView(a *store.Assignment, lg string) *AssignmentView {
	v := &AssignmentView{ID: a.ID, TeamID: a.TeamID, TeamName: a.TeamName, Kind: a.Kind, Ref: a.Ref, DueAt: a.DueAt, CreatedAt: a.CreatedAt,
		Title: a.Ref, Labs: []string{}}
	if a.Kind == store.AssignLab {
		if l, err := s.findLab(a.Ref); err == nil {
			v.Labs, v.Title = []string{a.Ref}, l.Title.In(lg)
		}
		return v
	}
	if t, ok := s.trackLabs(a.Ref); ok {
		v.Labs, v.Title = t.labs, t.title(lg)
	}
	return v
}

// AssignmentProgress is one user's progress on one assignment.
type AssignmentProgress struct {
	AssignmentID int64  `json:"assignmentId"`
	Status       string `json:"status"`
	// Overdue: past the due date and not completed.
	Overdue     bool       `json:"overdue"`
	LabsDone    int        `json:"labsDone"`
	LabsTotal   int        `json:"labsTotal"`
	NextLab     string     `json:"nextLab,omitempty"`
	CompletedAt *time.Time `json:"completedAt,omitempty"`
	// TimeSpentSeconds, Attempts and Skips add up the assignment's labs.
	TimeSpentSeconds int64          `json:"timeSpentSeconds"`
	Attempts         int            `json:"attempts"`
	Skips            int            `json:"skips"`
	Labs             []*LabProgress `json:"labs"`
}

// assignmentProgress is a user's progress on the assignment a, from their
// progress by lab.
func (s *Server) assignmentProgress(a *AssignmentView, byLab map[string]*progress.Lab, now time.Time, lg string) *AssignmentProgress {
	ap := progress.OfAssignment(a.Labs, a.DueAt, now, byLab)
	v := &AssignmentProgress{AssignmentID: a.ID, Status: ap.Status, Overdue: ap.Overdue, LabsDone: ap.LabsDone, LabsTotal: ap.LabsTotal,
		NextLab: ap.NextLab, CompletedAt: ap.CompletedAt, Attempts: ap.Attempts, Skips: ap.Skips, Labs: []*LabProgress{}}
	for _, lp := range ap.Labs {
		lv := s.labProgressView(lp, lg)
		v.Labs = append(v.Labs, lv)
		v.TimeSpentSeconds += lv.TimeSpentSeconds // whole seconds of each lab, as the labs show them
	}
	return v
}

// ReportMember is a member's row of a team report.
type ReportMember struct {
	MemberView
	Assignments []*AssignmentProgress `json:"assignments"`
}

// TeamReport is GET /api/teams/{id}/report.
type TeamReport struct {
	Team        *TeamBase         `json:"team"`
	GeneratedAt time.Time         `json:"generatedAt"`
	Assignments []*AssignmentView `json:"assignments"`
	Members     []*ReportMember   `json:"members"`
}

func (s *Server) teamReport(c echo.Context) (*TeamReport, error) {
	t, err := s.teamFor(c)
	if err != nil {
		return nil, err
	}
	ctx := c.Request().Context()
	lg := lang(c)
	members, err := s.store.TeamMembers(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	as, err := s.store.TeamAssignments(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, 0, len(members))
	for _, m := range members {
		ids = append(ids, m.UserID)
	}
	prog, _, err := s.loadProgress(ctx, ids)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	r := &TeamReport{Team: teamView(t), GeneratedAt: now.UTC(), Assignments: []*AssignmentView{}, Members: []*ReportMember{}}
	for _, a := range as {
		r.Assignments = append(r.Assignments, s.assignmentView(a, lg))
	}
	for _, m := range members {
		rm := &ReportMember{MemberView: memberView(m), Assignments: []*AssignmentProgress{}}
		for _, a := range r.Assignments {
			rm.Assignments = append(rm.Assignments, s.assignmentProgress(a, prog[m.UserID], now, lg))
		}
		r.Members = append(r.Members, rm)
	}
	return r, nil
}

func (s *Server) apiTeamReport(c echo.Context) error {
	r, err := s.teamReport(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}

func timeCell(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// apiTeamReportCSV is the report with one row per member, assignment and
// lab of it.
func (s *Server) apiTeamReportCSV(c echo.Context) error {
	r, err := s.teamReport(c)
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	h.Set(echo.HeaderContentDisposition, `attachment; filename="team-`+strconv.FormatInt(r.Team.ID, 10)+`-report.csv"`)
	c.Response().WriteHeader(http.StatusOK)
	cw := newCSVWriter(c.Response())
	_ = cw.Write([]string{"team", "member", "email", "role", "assignment", "kind", "due_at", "assignment_status", "overdue",
		"lab", "lab_status", "current_step", "started_at", "completed_at", "time_spent_seconds", "attempts", "skips"})
	for _, m := range r.Members {
		for i, ap := range m.Assignments {
			a := r.Assignments[i]
			for _, lp := range ap.Labs {
				_ = cw.Write([]string{csvSafe(r.Team.Name), csvSafe(m.Name), csvSafe(m.Email), m.Role, a.Ref, a.Kind, a.DueAt.UTC().Format(time.RFC3339),
					ap.Status, strconv.FormatBool(ap.Overdue), lp.Lab, lp.Status, lp.CurrentStep, timeCell(lp.StartedAt), timeCell(lp.CompletedAt),
					strconv.FormatInt(lp.TimeSpentSeconds, 10), strconv.Itoa(lp.Attempts), strconv.Itoa(lp.Skips)})
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// MyAssignment is one of "Assigned to you".
type MyAssignment struct {
	*AssignmentView
	Progress *AssignmentProgress `json:"progress"`
}

// myAssignments is what the user's teams assigned, with their progress.
func (s *Server) myAssignments(c echo.Context, u *store.User) ([]*MyAssignment, error) {
	ctx := c.Request().Context()
	lg := lang(c)
	as, err := s.store.UserAssignments(ctx, u.ID)
	if err != nil || len(as) == 0 {
		return []*MyAssignment{}, err
	}
	all, _, err := s.loadProgress(ctx, []int64{u.ID})
	if err != nil {
		return nil, err
	}
	prog := all[u.ID]
	now := time.Now()
	out := []*MyAssignment{}
	for _, a := range as {
		v := s.assignmentView(a, lg)
		out = append(out, &MyAssignment{AssignmentView: v, Progress: s.assignmentProgress(v, prog, now, lg)})
	}
	return out, nil
}

func (s *Server) apiMyAssignments(c echo.Context) error {
	out, err := s.myAssignments(c, currentUser(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// HistoryEntry is one lab session of the user's history.
type HistoryEntry struct {
	Session   string     `json:"session"`
	Lab       string     `json:"lab"`
	Title     string     `json:"title"`
	Active    bool       `json:"active"`
	StartedAt time.Time  `json:"startedAt"`
	EndedAt   *time.Time `json:"endedAt,omitempty"`
	StepsDone int        `json:"stepsDone"`
	Steps     int        `json:"steps"`
	Attempts  int        `json:"attempts"`
	Skips     int        `json:"skips"`
	Completed bool       `json:"completed"`
}

// History is a member's own record: every lab session, newest first, and
// each lab's progress.
type History struct {
	Sessions []*HistoryEntry `json:"sessions"`
	Labs     []*LabProgress  `json:"labs"`
}

func (s *Server) history(c echo.Context, u *store.User) (*History, error) {
	lg := lang(c)
	all, records, err := s.loadProgress(c.Request().Context(), []int64{u.ID})
	if err != nil {
		return nil, err
	}
	h := &History{Sessions: []*HistoryEntry{}, Labs: []*LabProgress{}}
	for _, e := range progress.History(records, s.offered) {
		h.Sessions = append(h.Sessions, &HistoryEntry{Session: e.Session.String(), Lab: e.Lab, Title: s.labTitle(e.Lab, lg), Active: e.Active,
			StartedAt: e.StartedAt, EndedAt: e.EndedAt, StepsDone: e.StepsDone, Steps: e.Steps, Attempts: e.Attempts, Skips: e.Skips,
			Completed: e.Completed})
	}
	prog := all[u.ID]
	for _, l := range s.labs {
		if p := prog[l.ID]; p != nil {
			h.Labs = append(h.Labs, s.labProgressView(p, lg))
		}
	}
	return h, nil
}

func (s *Server) apiMyHistory(c echo.Context) error {
	h, err := s.history(c, currentUser(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, h)
}

// trackInfo is what assignments need of a track.
type trackInfo struct {
	labs  []string
	title func(lg string) string
}

// trackLabs finds a track by id.
func (s *Server) trackLabs(id string) (trackInfo, bool) {
	t := labs.FindTrack(s.tracks, id)
	if t == nil {
		return trackInfo{}, false
	}
	info := trackInfo{title: t.Title.In}
	for _, id := range t.Labs {
		if labs.Find(s.labs, id) != nil { // as the track's own view: labs this server lacks are left out
			info.labs = append(info.labs, id)
		}
	}
	return info, true
}
