package server

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/store"
)

// Progress of a user on labs, tracks and assignments, computed from their
// lab sessions: what team reports, "Assigned to you" and a member's history
// show.

// Lab and assignment statuses.
const (
	progressNotStarted = "not_started"
	progressInProgress = "in_progress"
	progressCompleted  = "completed"
)

// LabProgress is a user's progress on one lab over all their sessions of it.
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

// loadProgress reads the users' lab sessions and folds them into each
// user's progress per lab: user id → lab id → progress. It returns the
// records too, for a history.
func (s *Server) loadProgress(ctx context.Context, userIDs []int64, lg string) (map[int64]map[string]*LabProgress, []*store.LabRecord, error) {
	records, err := s.store.LabRecords(ctx, userIDs)
	if err != nil {
		return nil, nil, err
	}
	attempts, err := s.store.LabAttempts(ctx, userIDs)
	if err != nil {
		return nil, nil, err
	}
	return s.progressOf(records, attempts, lg), records, nil
}

// progressOf folds lab records (oldest first) into each user's progress
// per lab. A session ended before any check is no start. A lab is
// completed by the first session in which every step was passed or
// skipped, at the last of those first passes; attempts come from
// LabAttempts (over all sessions, carried ones once).
func (s *Server) progressOf(records []*store.LabRecord, attempts map[int64]map[string]int, lg string) map[int64]map[string]*LabProgress {
	out := map[int64]map[string]*LabProgress{}
	for _, r := range records {
		l, err := s.findLab(r.LabID)
		if err != nil || (!r.Active && len(r.Steps) == 0) {
			continue // a lab no longer offered; a session ended untouched
		}
		byLab := out[r.UserID]
		if byLab == nil {
			byLab = map[string]*LabProgress{}
			out[r.UserID] = byLab
		}
		p := byLab[l.ID]
		if p == nil {
			started := r.StartedAt
			p = &LabProgress{Lab: l.ID, Title: l.Title.In(lg), Status: progressInProgress, StartedAt: &started, Attempts: attempts[r.UserID][l.ID]}
			byLab[l.ID] = p
		}
		if p.Status == progressCompleted {
			continue // the first completion counts
		}
		skips, current := 0, ""
		var finished time.Time
		for _, st := range l.Steps {
			sr, ok := r.Steps[st.ID]
			if !ok || sr.PassedAt == nil {
				if current == "" {
					current = st.ID
				}
				continue
			}
			if sr.Skipped {
				skips++
			}
			if sr.PassedAt.After(finished) {
				finished = *sr.PassedAt
			}
		}
		p.Skips, p.CurrentStep = skips, current
		if current == "" && len(l.Steps) > 0 {
			p.Status, p.CurrentStep = progressCompleted, ""
			p.CompletedAt = &finished
			if d := finished.Sub(r.StartedAt); d > 0 {
				p.TimeSpentSeconds = int64(d / time.Second)
			}
		}
	}
	return out
}

// AssignmentView is an assignment with what it covers.
type AssignmentView struct {
	*store.Assignment
	Title string   `json:"title"`
	Labs  []string `json:"labs"`
}

func (s *Server) assignmentView(a *store.Assignment, lg string) *AssignmentView {
	v := &AssignmentView{Assignment: a, Title: a.Ref, Labs: []string{}}
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

func (s *Server) assignmentProgress(a *AssignmentView, byLab map[string]*LabProgress, now time.Time, lg string) *AssignmentProgress {
	p := &AssignmentProgress{AssignmentID: a.ID, LabsTotal: len(a.Labs), Labs: []*LabProgress{}}
	started := false
	var last time.Time
	for _, id := range a.Labs {
		lp := byLab[id]
		if lp == nil {
			lp = &LabProgress{Lab: id, Status: progressNotStarted, Title: id}
			if l, err := s.findLab(id); err == nil {
				lp.Title = l.Title.In(lg)
			}
		}
		p.Labs = append(p.Labs, lp)
		p.Attempts += lp.Attempts
		p.Skips += lp.Skips
		p.TimeSpentSeconds += lp.TimeSpentSeconds
		if lp.Status != progressNotStarted {
			started = true
		}
		if lp.Status == progressCompleted {
			p.LabsDone++
			if lp.CompletedAt.After(last) {
				last = *lp.CompletedAt
			}
		} else if p.NextLab == "" {
			p.NextLab = id
		}
	}
	switch {
	case p.LabsTotal > 0 && p.LabsDone == p.LabsTotal:
		p.Status = progressCompleted
		p.CompletedAt = &last
	case started:
		p.Status = progressInProgress
	default:
		p.Status = progressNotStarted
	}
	// Work this server no longer offers (a removed lab or track) is not
	// overdue, and has nothing to start.
	p.Overdue = p.Status != progressCompleted && p.LabsTotal > 0 && now.After(a.DueAt)
	return p
}

// ReportMember is a member's row of a team report.
type ReportMember struct {
	*store.TeamMemberRow
	Assignments []*AssignmentProgress `json:"assignments"`
}

// TeamReport is GET /api/teams/{id}/report.
type TeamReport struct {
	Team        *store.Team       `json:"team"`
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
	prog, _, err := s.loadProgress(ctx, ids, lg)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	r := &TeamReport{Team: t, GeneratedAt: now.UTC(), Assignments: []*AssignmentView{}, Members: []*ReportMember{}}
	for _, a := range as {
		r.Assignments = append(r.Assignments, s.assignmentView(a, lg))
	}
	for _, m := range members {
		rm := &ReportMember{TeamMemberRow: m, Assignments: []*AssignmentProgress{}}
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
	all, _, err := s.loadProgress(ctx, []int64{u.ID}, lg)
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
	all, records, err := s.loadProgress(c.Request().Context(), []int64{u.ID}, lg)
	if err != nil {
		return nil, err
	}
	h := &History{Sessions: []*HistoryEntry{}, Labs: []*LabProgress{}}
	for i := len(records) - 1; i >= 0; i-- {
		r := records[i]
		e := &HistoryEntry{Session: r.SessionID.String(), Lab: r.LabID, Title: r.LabID, Active: r.Active, StartedAt: r.StartedAt, EndedAt: r.EndedAt}
		if l, err := s.findLab(r.LabID); err == nil {
			e.Title, e.Steps = l.Title.In(lg), len(l.Steps)
			for _, st := range l.Steps {
				if sr, ok := r.Steps[st.ID]; ok {
					e.Attempts += sr.Attempts
					if sr.PassedAt != nil {
						e.StepsDone++
					}
					if sr.Skipped {
						e.Skips++
					}
				}
			}
			e.Completed = e.Steps > 0 && e.StepsDone == e.Steps
		}
		h.Sessions = append(h.Sessions, e)
	}
	prog := all[u.ID]
	for _, l := range s.labs {
		if p := prog[l.ID]; p != nil {
			h.Labs = append(h.Labs, p)
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
