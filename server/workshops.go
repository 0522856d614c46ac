package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/bus"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/progress"
	"github.com/podpath/podpath/session"
	"github.com/podpath/podpath/store"
	"github.com/podpath/podpath/workshops"
)

// Workshops: an instructor's class. See docs/WORKSHOPS.md for what an
// instructor does and sees, docs/API.md for the endpoints.

// --- views ---

// WorkshopView is a workshop as the API shows it.
type WorkshopView struct {
	ID                 int64          `json:"id"`
	Title              string         `json:"title"`
	Code               string         `json:"code,omitempty"`
	JoinURL            string         `json:"joinUrl,omitempty"`
	Labs               []WorkshopLab  `json:"labs"`
	Seats              int            `json:"seats"`
	Learners           int            `json:"learners"`
	StartsAt           time.Time      `json:"startsAt"`
	EndsAt             time.Time      `json:"endsAt"`
	Guests             bool           `json:"guests"`
	Prepare            int            `json:"prepare"`
	PrepareLeadMinutes int            `json:"prepareLeadMinutes"`
	PrepareAt          time.Time      `json:"prepareAt"`
	State              string         `json:"state"`
	Instructor         *InstructorRef `json:"instructor,omitempty"`
	Broadcast          *BroadcastView `json:"broadcast"`
	Clusters           *ClustersView  `json:"clusters,omitempty"`
}

// WorkshopLab is a lab of a workshop.
type WorkshopLab struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// InstructorRef names an instructor.
type InstructorRef struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// BroadcastView is the message every learner of a workshop sees.
type BroadcastView struct {
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// ClustersView is how far a workshop's prepared clusters are, and whether
// the host can hold the class.
type ClustersView struct {
	Target            int    `json:"target"`
	Ready             int    `json:"ready"`
	Creating          int    `json:"creating"`
	Claimed           int    `json:"claimed"`
	ETASeconds        int    `json:"etaSeconds"`
	MeanCreateSeconds int    `json:"meanCreateSeconds"`
	Fits              bool   `json:"fits"`
	CapacityNote      string `json:"capacityNote"`
}

func broadcastView(w *store.Workshop) *BroadcastView {
	if w.Broadcast == nil || w.BroadcastAt == nil {
		return nil
	}
	return &BroadcastView{Message: *w.Broadcast, At: *w.BroadcastAt}
}

func (s *Server) joinURL(c echo.Context, code string) string {
	base := s.cfg.PublicURL
	if base == "" {
		scheme := "http"
		if s.secure(c) {
			scheme = "https"
		}
		base = scheme + "://" + c.Request().Host
	}
	return strings.TrimRight(base, "/") + "/join/" + code
}

// workshopView shows a workshop; staff (its instructor, admins) see the
// code and the clusters.
func (s *Server) workshopView(c echo.Context, w *store.Workshop, staff bool) *WorkshopView {
	lg := lang(c)
	now := time.Now()
	v := &WorkshopView{
		ID: w.ID, Title: w.Title, Seats: w.Seats, Learners: w.Learners, StartsAt: w.StartsAt, EndsAt: w.EndsAt,
		Guests: w.Guests, Prepare: w.Prepare, PrepareLeadMinutes: int(w.PrepareLead.Minutes()), PrepareAt: w.PrepareAt(),
		State: w.State(now), Broadcast: broadcastView(w), Labs: []WorkshopLab{},
	}
	for _, id := range w.LabIDs {
		title := id
		if l := labs.Find(s.labs, id); l != nil {
			title = l.Title.In(lg)
		}
		v.Labs = append(v.Labs, WorkshopLab{ID: id, Title: title})
	}
	if u, err := s.store.UserByID(c.Request().Context(), w.InstructorID); err == nil {
		v.Instructor = &InstructorRef{ID: u.ID, Name: u.Name}
	}
	if !staff {
		return v
	}
	if w.Code != "" { // an ended workshop's code is retired
		v.Code, v.JoinURL = workshops.DisplayCode(w.Code), s.joinURL(c, workshops.DisplayCode(w.Code))
	}
	v.Clusters = s.clustersView(c.Request().Context(), w, lg)
	return v
}

func (s *Server) clustersView(ctx context.Context, w *store.Workshop, lg string) *ClustersView {
	if w.Ended(time.Now()) {
		// Its clusters were deleted: nothing is being made, nothing held.
		return &ClustersView{Target: w.Prepare, Fits: true}
	}
	p := s.engine.Prepared(w.ID)
	cv := &ClustersView{Target: w.Prepare, Ready: p.Ready, Creating: p.Creating,
		MeanCreateSeconds: int(p.MeanCreate.Seconds()), ETASeconds: int(p.ETA.Seconds())}
	if sessions, err := s.store.WorkshopSessions(ctx, w.ID); err == nil {
		for _, sess := range sessions {
			if sess.State == store.SessionActive {
				cv.Claimed++
			}
		}
	}
	if left := w.Prepare - cv.Claimed - cv.Ready; left > 0 && p.MeanCreate > 0 {
		cv.ETASeconds = int((time.Duration(left) * p.MeanCreate).Seconds())
	} else {
		cv.ETASeconds = 0
	}
	cv.Fits, cv.CapacityNote = s.capacityNote(w, lg)
	return cv
}

// capacityNote says, from the capacity model's numbers and in an
// instructor's words, whether this host holds the class with every
// learner's cluster running. (The operator's settings behind it,
// PODPATH_CAPACITY_CPU and PODPATH_CAPACITY_MEMORY, are in the docs.)
func (s *Server) capacityNote(w *store.Workshop, lg string) (bool, string) {
	cost := session.ClusterCost(s.class.Workers(w))
	u := s.engine.Usage()
	most := s.class.RunnableSeats(w)
	each := []any{"cpu", strconv.FormatFloat(cost.CPU, 'f', -1, 64), "mem", cost.Memory, "seats", plural(lg, "seatcount", w.Seats)}
	if w.Seats > most {
		return false, plural(lg, "wscapshort", most, each...)
	}
	return true, plural(lg, "wscapfits", most, each...) + " " + msg(lg, "wscapnow",
		"cpuused", strconv.FormatFloat(u.CPU, 'f', 1, 64), "cpulimit", strconv.FormatFloat(u.CPULimit, 'f', 1, 64),
		"memused", u.Memory, "memlimit", u.MemLimit, "running", u.Running, "asleep", u.Hibernated)
}

// --- access ---

func isStaffRole(u *store.User) bool {
	return u != nil && (u.Role == store.RoleInstructor || u.Role == store.RoleAdmin)
}

func (s *Server) requireInstructor(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !isStaffRole(currentUser(c)) {
			return apiError(http.StatusForbidden, translate("errinstructoronly", lang(c)))
		}
		return next(c)
	}
}

func workshopID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, apiError(http.StatusBadRequest, msg(lang(c), "errworkshopid", "id", fmt.Sprintf("%.40q", c.Param("id"))))
	}
	return id, nil
}

// staffWorkshop loads the workshop in the path for its instructor or an
// admin; anyone else is told there is no such workshop.
func (s *Server) staffWorkshop(c echo.Context) (*store.Workshop, error) {
	id, err := workshopID(c)
	if err != nil {
		return nil, err
	}
	w, err := s.store.WorkshopByID(c.Request().Context(), id)
	u := currentUser(c)
	if errors.Is(err, store.ErrNotFound) || (err == nil && u.Role != store.RoleAdmin && w.InstructorID != u.ID) {
		return nil, apiError(http.StatusNotFound, translate("errnoworkshop", lang(c)))
	}
	return w, err
}

func learnerID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("learner"), 10, 64)
	if err != nil || id <= 0 {
		return 0, apiError(http.StatusBadRequest, msg(lang(c), "errlearnerid", "id", fmt.Sprintf("%.40q", c.Param("learner"))))
	}
	return id, nil
}

// staffLearner is staffWorkshop with the learner id in the path.
func (s *Server) staffLearner(c echo.Context) (*store.Workshop, int64, error) {
	w, err := s.staffWorkshop(c)
	if err != nil {
		return nil, 0, err
	}
	id, err := learnerID(c)
	return w, id, err
}

// --- create, list, show ---

type workshopRequest struct {
	Title              string    `json:"title"`
	Labs               []string  `json:"labs"`
	Seats              int       `json:"seats"`
	StartsAt           time.Time `json:"startsAt"`
	EndsAt             time.Time `json:"endsAt"`
	Guests             bool      `json:"guests"`
	Prepare            *int      `json:"prepare,omitempty"`
	PrepareLeadMinutes *int      `json:"prepareLeadMinutes,omitempty"`
}

// maxSeats bounds a workshop; a host holds far fewer.
const maxSeats = 500

func (s *Server) checkWorkshopRequest(r *workshopRequest, lg string) (*store.Workshop, error) {
	bad := func(key string, kv ...any) error { return apiError(http.StatusBadRequest, msg(lg, key, kv...)) }
	title := strings.TrimSpace(r.Title)
	switch {
	case title == "":
		return nil, bad("errwstitle")
	case utf8.RuneCountInString(title) > 200:
		return nil, bad("errwstitlelong")
	case len(r.Labs) == 0:
		return nil, bad("errwslabs")
	case len(r.Labs) > 50:
		return nil, bad("errwslabsmax")
	case r.Seats < 1 || r.Seats > maxSeats:
		return nil, bad("errwsseats", "max", maxSeats)
	case r.StartsAt.IsZero() || r.EndsAt.IsZero():
		return nil, bad("errwstimes")
	case !r.EndsAt.After(r.StartsAt):
		return nil, bad("errwsorder")
	case r.EndsAt.Sub(r.StartsAt) > 14*24*time.Hour:
		return nil, bad("errwslong")
	case !r.EndsAt.After(time.Now()):
		return nil, bad("errwspast")
	}
	seen := map[string]bool{}
	for _, id := range r.Labs {
		if labs.Find(s.labs, id) == nil {
			return nil, bad("errwsnolab", "lab", fmt.Sprintf("%.60q", id))
		}
		if seen[id] {
			return nil, bad("errwslabtwice", "lab", fmt.Sprintf("%q", id))
		}
		seen[id] = true
	}
	prepare := int(math.Ceil(0.7 * float64(r.Seats)))
	if r.Prepare != nil {
		prepare = *r.Prepare
	}
	if prepare < 0 || prepare > r.Seats {
		return nil, bad("errwsprepare", "seats", r.Seats)
	}
	lead := 30
	if r.PrepareLeadMinutes != nil {
		lead = *r.PrepareLeadMinutes
	}
	if lead < 0 || lead > 24*60 {
		return nil, bad("errwslead")
	}
	return &store.Workshop{Title: title, LabIDs: r.Labs, Seats: r.Seats, StartsAt: r.StartsAt, EndsAt: r.EndsAt,
		Guests: r.Guests, Prepare: prepare, PrepareLead: time.Duration(lead) * time.Minute}, nil
}

func (s *Server) apiCreateWorkshop(c echo.Context) error {
	var req workshopRequest
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	w, err := s.checkWorkshopRequest(&req, lang(c))
	if err != nil {
		return err
	}
	w.InstructorID = currentUser(c).ID
	for range 10 {
		w.Code = workshops.NewCode()
		out, err := s.store.CreateWorkshop(c.Request().Context(), w)
		if errors.Is(err, store.ErrCodeTaken) {
			continue
		}
		if err != nil {
			return err
		}
		s.log.Info("workshop created", "workshop", out.ID, "instructor", w.InstructorID, "seats", w.Seats, "prepare", w.Prepare)
		s.class.Tick(c.Request().Context())
		return c.JSON(http.StatusCreated, s.workshopView(c, out, true))
	}
	return errors.New("no free join code after 10 tries")
}

func (s *Server) apiWorkshops(c echo.Context) error {
	u := currentUser(c)
	mine := u.ID
	if u.Role == store.RoleAdmin {
		mine = 0
	}
	list, err := s.store.Workshops(c.Request().Context(), mine)
	if err != nil {
		return err
	}
	out := make([]*WorkshopView, 0, len(list))
	for _, w := range list {
		out = append(out, s.workshopView(c, w, true))
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) apiWorkshop(c echo.Context) error {
	w, err := s.staffWorkshop(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.workshopView(c, w, true))
}

func (s *Server) apiRotateCode(c echo.Context) error {
	w, err := s.staffWorkshop(c)
	if err != nil {
		return err
	}
	for range 10 {
		code := workshops.NewCode()
		err := s.store.SetWorkshopCode(c.Request().Context(), w.ID, code)
		if errors.Is(err, store.ErrCodeTaken) {
			continue
		}
		if errors.Is(err, store.ErrWorkshopOver) {
			return apiError(http.StatusGone, translate("errcodeended", lang(c)))
		}
		if err != nil {
			return err
		}
		w.Code = code
		s.log.Info("workshop code rotated", "workshop", w.ID)
		v := s.workshopView(c, w, true)
		s.wsHub.publish(w.ID, "workshop", nil)
		return c.JSON(http.StatusOK, v)
	}
	return errors.New("no free join code after 10 tries")
}

// --- the board ---

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
		return nil, apiError(http.StatusNotFound, translate("errnolearner", lang(c)))
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

// --- joining ---

type joinRequest struct {
	Code string `json:"code"`
	Name string `json:"name"`
}

// JoinView is what POST /api/join answers.
type JoinView struct {
	Workshop  *WorkshopView `json:"workshop"`
	Session   *SessionView  `json:"session"`
	Guest     bool          `json:"guest"`
	CSRFToken string        `json:"csrfToken"`
	Token     string        `json:"token,omitempty"`
}

// workshopForJoin finds an open workshop by code (workshops.Class.Open:
// a wrong code counts against the browser and the address).
func (s *Server) workshopForJoin(c echo.Context, code string) (*store.Workshop, error) {
	return s.class.Open(c.Request().Context(), code, clientIP(c), joinBrowser(c))
}

// joinBrowser names the browser a join comes from, for its own budget of
// wrong codes: its pre-session cookie, or else the signed-in account; ""
// when neither (a script without cookies counts against its address only).
func joinBrowser(c echo.Context) string {
	if ck, err := c.Cookie(preSessionCookie); err == nil && len(ck.Value) == 32 {
		return "c:" + ck.Value
	}
	if u := currentUser(c); u != nil {
		return "u:" + strconv.FormatInt(u.ID, 10)
	}
	return ""
}

// join seats the current user (or a new guest) in the workshop of the
// code and starts their session (workshops.Class.Join). A learner seated
// without a session gets both the join and the error.
func (s *Server) join(c echo.Context, code, name string) (*workshops.Joined, error) {
	seed := ""
	if ck, err := c.Cookie(preSessionCookie); err == nil && len(ck.Value) == 32 {
		seed = ck.Value
	}
	j, err := s.class.Join(c.Request().Context(), workshops.JoinRequest{
		Code: code, Name: name, User: currentUser(c),
		IP: clientIP(c), Browser: joinBrowser(c), GuestSeed: seed,
	})
	return j, s.classErr(lang(c), err)
}

// classErr says the errors of workshops.Class that need the server's
// words in lg: an active session outside the workshop (named, with its
// lab's title), a workshop with no lab installed here.
func (s *Server) classErr(lg string, err error) error {
	var ae *workshops.ActiveElsewhereError
	switch {
	case errors.As(err, &ae):
		return &apiErr{Status: http.StatusConflict,
			Message: msg(lg, "errjoinactive", "lab", s.labTitle(ae.Session.LabID, lg), "title", ae.Workshop.Title, "id", ae.Session.ID),
			Extra:   map[string]any{"activeSession": map[string]string{"id": ae.Session.ID.String(), "labId": ae.Session.LabID}}}
	case errors.Is(err, workshops.ErrNoLabs):
		return apiError(http.StatusGone, translate("errwsnolabs", lg))
	}
	return err
}

// workshopNext is the workshop's lab after l, or nil after its last.
func (s *Server) workshopNext(w *SessionWorkshop, l *labs.Lab) *labs.Lab {
	for i, id := range w.Labs {
		if id == l.ID && i+1 < len(w.Labs) {
			return labs.Find(s.labs, w.Labs[i+1])
		}
	}
	return nil
}

// workshopStartOptions makes a start of lab part of a workshop the user has
// a seat in and that is open and has the lab; a guest may start only their
// workshop's labs.
func (s *Server) workshopStartOptions(ctx context.Context, u *store.User, l *labs.Lab, lg string) ([]session.StartOption, error) {
	ws, err := s.store.UserWorkshops(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var closed *store.Workshop
	for _, w := range ws {
		for _, id := range w.LabIDs {
			if id != l.ID {
				continue
			}
			if w.State(now) == store.WorkshopOpen {
				return workshops.InWorkshop(w), nil
			}
			closed = w
		}
	}
	switch {
	case u.GuestWorkshop != 0 && closed != nil && closed.Ended(now):
		return nil, apiError(http.StatusGone, msg(lg, "errguestended", "title", closed.Title))
	case u.GuestWorkshop != 0 && closed != nil:
		return nil, apiError(http.StatusConflict, msg(lg, "errguestnotyet", "title", closed.Title))
	case u.GuestWorkshop != 0:
		return nil, apiError(http.StatusForbidden, msg(lg, "errguestotherlab", "lab", l.Title.In(lg)))
	}
	return nil, nil
}

func (s *Server) apiJoin(c echo.Context) error {
	if err := checkAPICSRF(c); err != nil {
		return err
	}
	var req joinRequest
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	j, err := s.join(c, req.Code, req.Name)
	if j == nil {
		return err
	}
	out := JoinView{Workshop: s.workshopView(c, j.Workshop, false), Guest: j.Guest}
	if j.Guest {
		token, terr := s.startWebSession(c, j.User)
		if terr != nil {
			return terr
		}
		ws, terr := s.store.WebSessionByToken(c.Request().Context(), hashToken(token))
		if terr != nil {
			return terr
		}
		out.Token, out.CSRFToken = token, ws.CSRFToken
	} else if ws := currentWebSession(c); ws != nil {
		out.CSRFToken = ws.CSRFToken
	}
	if err != nil {
		return err // seated, but no session (an active one elsewhere)
	}
	v, err := s.sessionView(c, j.Session)
	if err != nil {
		return err
	}
	out.Session = v
	return c.JSON(http.StatusOK, out)
}

// --- learner side ---

// SessionWorkshop is what a workshop session's page shows of its workshop.
type SessionWorkshop struct {
	ID    int64  `json:"id"`
	Title string `json:"title"`
	// State is the workshop's: scheduled, preparing, open or ended. An
	// ended one ended every session of it.
	State     string         `json:"state"`
	Broadcast *BroadcastView `json:"broadcast"`
	Hand      bool           `json:"hand"`
	Takeover  *TakeoverRef   `json:"takeover"`
	// Labs are the workshop's labs in order (the lab's end offers the next).
	Labs []string `json:"labs"`
}

func (s *Server) sessionWorkshop(ctx context.Context, sess *store.LabSession) *SessionWorkshop {
	if sess.WorkshopID == nil {
		return nil
	}
	w, err := s.store.WorkshopByID(ctx, *sess.WorkshopID)
	if err != nil {
		return nil
	}
	out := &SessionWorkshop{ID: w.ID, Title: w.Title, State: w.State(time.Now()), Broadcast: broadcastView(w), Labs: w.LabIDs}
	// A hand is raised for help in a running session; once it ended
	// there is nothing to help with.
	if ln, err := s.store.WorkshopLearner(ctx, w.ID, sess.UserID); err == nil && sess.State == store.SessionActive {
		out.Hand = ln.HandAt != nil
	}
	if t := s.wsHub.takeover(ctx, sess.ID); t != nil {
		out.Takeover = &TakeoverRef{Instructor: t.Instructor, Since: t.StartedAt}
	}
	return out
}

type handRequest struct {
	Raised bool `json:"raised"`
}

func (s *Server) apiHand(c echo.Context) error {
	sess, err := s.activeSession(c)
	if err != nil {
		return err
	}
	if sess.WorkshopID == nil {
		return apiError(http.StatusConflict, translate("errhandnows", lang(c)))
	}
	var req handRequest
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	if err := s.store.SetHand(c.Request().Context(), *sess.WorkshopID, sess.UserID, req.Raised); err != nil {
		return err
	}
	s.engine.Publish(sess.ID, "hand", map[string]bool{"raised": req.Raised})
	s.class.LearnerChanged(*sess.WorkshopID, sess.UserID)
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) apiEndTakeover(c echo.Context) error {
	sess, err := s.activeSession(c)
	if err != nil {
		return err
	}
	if !s.wsHub.endTakeovers(sess.ID, "learner") {
		return apiError(http.StatusConflict, translate("errnotakeover", lang(c)))
	}
	return c.NoContent(http.StatusNoContent)
}

// --- for the whole class ---

type broadcastRequest struct {
	Message string `json:"message"`
}

func (s *Server) apiBroadcast(c echo.Context) error {
	w, err := s.staffWorkshop(c)
	if err != nil {
		return err
	}
	var req broadcastRequest
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	msg := strings.TrimSpace(req.Message)
	if utf8.RuneCountInString(msg) > 1000 {
		return apiError(http.StatusBadRequest, translate("errbroadcastlong", lang(c)))
	}
	ctx := c.Request().Context()
	if err := s.store.SetBroadcast(ctx, w.ID, msg); err != nil {
		return err
	}
	w, err = s.store.WorkshopByID(ctx, w.ID)
	if err != nil {
		return err
	}
	sessions, err := s.store.WorkshopSessions(ctx, w.ID)
	if err != nil {
		return err
	}
	data := map[string]any{"message": msg, "at": time.Now()}
	for _, sess := range sessions {
		if sess.State == store.SessionActive {
			s.engine.Publish(sess.ID, "broadcast", data)
		}
	}
	s.wsHub.publish(w.ID, "workshop", nil)
	return c.NoContent(http.StatusNoContent)
}

type extendRequest struct {
	Minutes int `json:"minutes"`
}

func (s *Server) apiExtendWorkshop(c echo.Context) error {
	w, err := s.staffWorkshop(c)
	if err != nil {
		return err
	}
	req := extendRequest{Minutes: 15}
	if c.Request().ContentLength != 0 {
		if err := bindJSON(c, &req); err != nil {
			return err
		}
	}
	if req.Minutes < 1 || req.Minutes > 24*60 {
		return apiError(http.StatusBadRequest, translate("errextendminutes", lang(c)))
	}
	n, err := s.store.ExtendWorkshopSessions(c.Request().Context(), w.ID, time.Duration(req.Minutes)*time.Minute)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]int64{"extended": n})
}

type resetRequest struct {
	FromStep string `json:"fromStep"`
}

// apiResetLearner gives a learner a fresh cluster of the lab they are on
// (or were on last); the progress on steps before fromStep is kept.
func (s *Server) apiResetLearner(c echo.Context) error {
	w, id, err := s.staffLearner(c)
	if err != nil {
		return err
	}
	var req resetRequest
	if c.Request().ContentLength != 0 {
		if err := bindJSON(c, &req); err != nil {
			return err
		}
	}
	if _, err := s.class.Reset(c.Request().Context(), w, id, req.FromStep); err != nil {
		return err
	}
	row, err := s.oneLearnerRow(c, w, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, row)
}

func (s *Server) apiEndWorkshop(c echo.Context) error {
	w, err := s.staffWorkshop(c)
	if err != nil {
		return err
	}
	if err := s.class.End(c.Request().Context(), w, "the instructor ended the workshop"); errors.Is(err, workshops.ErrNotEnded) {
		s.log.Error("end workshop: nothing was stored", "workshop", w.ID, "err", err)
		return apiError(http.StatusServiceUnavailable, translate("errendfailed", lang(c)))
	} else if err != nil {
		return err
	}
	w, err = s.store.WorkshopByID(c.Request().Context(), w.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.workshopView(c, w, true))
}

// --- results ---

// ResultRow is one learner's result on one step.
type ResultRow struct {
	Learner           string     `json:"learner"`
	LearnerID         int64      `json:"learnerId"`
	Guest             bool       `json:"guest"`
	Lab               string     `json:"lab"`
	Step              string     `json:"step"`
	StepTitle         string     `json:"stepTitle"`
	Status            string     `json:"status"`
	Passed            bool       `json:"passed"`
	Attempts          int        `json:"attempts"`
	FailedAttempts    int        `json:"failedAttempts"`
	TimeToPassSeconds *int       `json:"timeToPassSeconds"`
	Skipped           bool       `json:"skipped"`
	Hints             int        `json:"hints"`
	At                *time.Time `json:"at"`
}

func (s *Server) results(c echo.Context) (*store.Workshop, []ResultRow, error) {
	w, err := s.staffWorkshop(c)
	if err != nil {
		return nil, nil, err
	}
	b, err := s.board(c, w)
	if err != nil {
		return nil, nil, err
	}
	var out []ResultRow
	for _, ln := range b.Learners {
		for _, st := range b.Steps {
			cell := ln.Cells[st.Key]
			if cell == nil {
				continue
			}
			out = append(out, ResultRow{Learner: ln.Name, LearnerID: ln.ID, Guest: ln.Guest, Lab: st.Lab, Step: st.Step, StepTitle: st.Title,
				Status: cell.Status, Passed: cell.Status == store.StepPassed, Attempts: cell.Attempts, FailedAttempts: cell.Failed,
				TimeToPassSeconds: cell.TimeToPassSeconds, Skipped: cell.Status == store.StepSkipped, Hints: cell.Hints, At: cell.At})
		}
	}
	return w, out, nil
}

func (s *Server) apiResultsJSON(c echo.Context) error {
	w, rows, err := s.results(c)
	if err != nil {
		return err
	}
	if rows == nil {
		rows = []ResultRow{}
	}
	c.Response().Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="workshop-%d-results.json"`, w.ID))
	return c.JSON(http.StatusOK, map[string]any{"workshop": map[string]any{"id": w.ID, "title": w.Title}, "results": rows})
}
