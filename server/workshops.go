package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
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
)

// Workshops: an instructor's class. See docs/WORKSHOPS.md for what an
// instructor does and sees, docs/API.md for the endpoints.

// Stuck flags: a learner is stuck after stuckAttempts failed checks on the
// step they are on, or stuckMinutes on it.
const (
	stuckAttempts = 3
	stuckMinutes  = 10
)

// codeAlphabet is what join codes are made of: readable aloud, without
// 0/O, 1/l/I.
const codeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

// codeLength is a new join code's length: 31^10, about 2^49.5 codes, so a
// guesser within the limits of limiter.go needs years per hit (the sums
// are in docs/SECURITY.md). Codes of 6 made before keep working until
// their workshop ends.
const codeLength = 10

func newJoinCode() string {
	b := make([]byte, codeLength)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(codeAlphabet))))
		if err != nil {
			panic(err)
		}
		b[i] = codeAlphabet[n.Int64()]
	}
	return string(b)
}

// displayCode groups a code for reading and typing: ABCDE-FGHJK. Older
// six-character codes are shown as they are.
func displayCode(code string) string {
	if len(code) == codeLength {
		return code[:codeLength/2] + "-" + code[codeLength/2:]
	}
	return code
}

// normalizeCode reads a code as people type or say it: any case, with
// spaces or dashes.
func normalizeCode(s string) string {
	s = strings.ToUpper(s)
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' || r == '\t' {
			return -1
		}
		return r
	}, s)
}

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

// workshopWorkers is the shape prepared for a workshop: its first lab's.
func (s *Server) workshopWorkers(w *store.Workshop) int {
	if len(w.LabIDs) > 0 {
		if l := labs.Find(s.labs, w.LabIDs[0]); l != nil {
			return l.Cluster.Workers
		}
	}
	return 1
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
		v.Code, v.JoinURL = displayCode(w.Code), s.joinURL(c, displayCode(w.Code))
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
	cost := session.ClusterCost(s.workshopWorkers(w))
	u := s.engine.Usage()
	most := s.runnableSeats(w)
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
		w.Code = newJoinCode()
		out, err := s.store.CreateWorkshop(c.Request().Context(), w)
		if errors.Is(err, store.ErrCodeTaken) {
			continue
		}
		if err != nil {
			return err
		}
		s.log.Info("workshop created", "workshop", out.ID, "instructor", w.InstructorID, "seats", w.Seats, "prepare", w.Prepare)
		s.tickWorkshops(c.Request().Context())
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
		code := newJoinCode()
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
type boardData struct {
	w        *store.Workshop
	sessions map[int64][]*store.LabSession // by learner, oldest first
	stats    map[uuid.UUID]map[string]*store.StepStat
	// takeovers are the open take-overs of the workshop, by session.
	takeovers map[uuid.UUID]*store.Takeover
}

func (s *Server) loadBoardData(ctx context.Context, w *store.Workshop) (*boardData, error) {
	sessions, err := s.store.WorkshopSessions(ctx, w.ID)
	if err != nil {
		return nil, err
	}
	stats, err := s.store.WorkshopStepStats(ctx, w.ID)
	if err != nil {
		return nil, err
	}
	open, err := s.store.OpenTakeovers(ctx, w.ID)
	if err != nil {
		return nil, err
	}
	d := &boardData{w: w, sessions: map[int64][]*store.LabSession{}, stats: stats, takeovers: open}
	for _, sess := range sessions {
		d.sessions[sess.UserID] = append(d.sessions[sess.UserID], sess)
	}
	return d, nil
}

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
func (s *Server) learnerRow(c echo.Context, d *boardData, ln *store.Learner) *LearnerRow {
	lg := lang(c)
	now := time.Now()
	row := &LearnerRow{ID: ln.UserID, Name: ln.Name, Guest: ln.Guest, JoinedAt: ln.JoinedAt, Hand: ln.HandAt != nil, HandAt: ln.HandAt,
		Cells: map[string]*CellView{}}
	latest := map[string]*store.LabSession{}
	var active *store.LabSession
	for _, sess := range d.sessions[ln.UserID] {
		latest[sess.LabID] = sess
		if sess.State == store.SessionActive {
			active = sess
		}
	}
	for _, id := range d.w.LabIDs {
		l := labs.Find(s.labs, id)
		if l == nil {
			continue
		}
		sess := latest[id]
		var stats map[string]*store.StepStat
		var prev *time.Time
		if sess != nil {
			stats = d.stats[sess.ID]
			start := sess.CreatedAt
			if first := d.sessions[ln.UserID]; len(first) > 0 {
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
			steps := progress.FromStats(d.stats[active.ID])
			if st := progress.Current(l, steps); st != nil {
				since := progress.Began(l, st.ID, steps, active.CreatedAt)
				row.CurrentStep = l.ID + "/" + st.ID
				row.StepSince = &since
				switch failed := steps[st.ID].Failed; {
				case failed >= stuckAttempts:
					row.Stuck, row.StuckWhy = true, plural(lg, "wsstuckfails", failed, "step", st.Title.In(lg))
				case now.Sub(since) >= stuckMinutes*time.Minute:
					row.Stuck, row.StuckWhy = true, plural(lg, "wsstuckminutes", int(now.Sub(since).Minutes()), "step", st.Title.In(lg))
				}
			}
		}
		if t := d.takeovers[active.ID]; t != nil {
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
	d, err := s.loadBoardData(ctx, w)
	if err != nil {
		return nil, err
	}
	b := &BoardView{Workshop: s.workshopView(c, w, true), Steps: s.boardSteps(c, w), StuckAttempts: stuckAttempts, StuckMinutes: stuckMinutes,
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
	d, err := s.loadBoardData(ctx, w)
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

// learnerChanged tells the workshop's boards that a learner's row changed.
func (s *Server) learnerChanged(workshop, userID int64) {
	s.wsHub.publish(workshop, "learner", userID)
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

// joinErr is why a join was refused (a message of the catalog, in the
// asker's language); nothing was written.
func joinErr(c echo.Context, status int, key string, kv ...any) error {
	return apiError(status, msg(lang(c), key, kv...))
}

// workshopForJoin finds an open workshop by code, or says why it cannot be
// joined. A code that opens no workshop now — unknown, retired, or of a
// workshop not yet started or already ended — is a miss, answered the
// same way whatever it was (it names no workshop) and counted against the
// browser and the client address (limiter.go); past a limit every code is
// refused, the right one too, so the answers tell a guesser nothing.
func (s *Server) workshopForJoin(c echo.Context, code string) (*store.Workshop, error) {
	ctx := c.Request().Context()
	code = normalizeCode(code)
	if code == "" {
		return nil, joinErr(c, http.StatusBadRequest, "errjoinnocode")
	}
	keys := joinMissKeys(clientIP(c), joinBrowser(c))
	if out, err := s.limiter.exhausted(ctx, keys...); err != nil {
		return nil, err
	} else if out {
		return nil, joinErr(c, http.StatusTooManyRequests, "errjointoomany")
	}
	var w *store.Workshop
	err := store.ErrNotFound
	if len(code) <= 20 {
		w, err = s.store.WorkshopByCode(ctx, code)
	}
	if err == nil && w.State(time.Now()) != store.WorkshopOpen {
		err = store.ErrNotFound
	}
	if errors.Is(err, store.ErrNotFound) {
		if err := s.limiter.charge(ctx, keys...); err != nil {
			return nil, err
		}
		s.joinMisses.miss(s.log)
		return nil, joinErr(c, http.StatusNotFound, "errjoinnone", "code", fmt.Sprintf("%.20s", displayCode(code)))
	}
	if err != nil {
		return nil, err
	}
	return w, nil
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

// join seats the current user (or a new guest) in the workshop and starts
// their session of its first lab not done yet. It returns the user, the
// session, and whether a guest was created (the caller signs them in).
func (s *Server) join(c echo.Context, code, name string) (*store.Workshop, *store.User, *store.LabSession, bool, error) {
	ctx := c.Request().Context()
	w, err := s.workshopForJoin(c, code)
	if err != nil {
		return nil, nil, nil, false, err
	}
	u := currentUser(c)
	name = strings.TrimSpace(name)
	if utf8.RuneCountInString(name) > 60 {
		return nil, nil, nil, false, joinErr(c, http.StatusBadRequest, "errjoinnamelong")
	}
	var guest *store.Guest
	switch {
	case u == nil && !w.Guests:
		return nil, nil, nil, false, joinErr(c, http.StatusUnauthorized, "errjoinaccount", "title", w.Title)
	case u == nil:
		if name == "" {
			return nil, nil, nil, false, joinErr(c, http.StatusBadRequest, "errjoinname")
		}
		guest = &store.Guest{Email: s.guestEmail(c, w), Name: name}
	case u.GuestWorkshop != 0 && u.GuestWorkshop != w.ID:
		return nil, nil, nil, false, joinErr(c, http.StatusForbidden, "errjoinotherguest")
	default:
		if name == "" {
			name = u.Name
		}
		// Refused before a seat is taken: a session outside the workshop.
		if active, err := s.store.ActiveLabSession(ctx, u.ID); err == nil && (active.WorkshopID == nil || *active.WorkshopID != w.ID) {
			return nil, nil, nil, false, &apiErr{Status: http.StatusConflict,
				Message: msg(lang(c), "errjoinactive", "lab", s.labTitle(active.LabID, lang(c)), "title", w.Title, "id", active.ID),
				Extra:   map[string]any{"activeSession": map[string]string{"id": active.ID.String(), "labId": active.LabID}}}
		}
	}
	var uid int64
	if u != nil {
		uid = u.ID
	}
	ln, gu, joined, err := s.store.JoinWorkshop(ctx, w.ID, uid, name, guest)
	if errors.Is(err, store.ErrGuestTaken) {
		prev, perr := s.store.UserByEmail(ctx, guest.Email)
		switch {
		case perr != nil || prev.GuestWorkshop != w.ID:
			return nil, nil, nil, false, joinErr(c, http.StatusConflict, "errjoinreload")
		case time.Since(prev.CreatedAt) < guestDoubleJoin:
			// The same browser joined a moment ago (a double click): that
			// guest, and its seat, are this one.
			ln, _, joined, err = s.store.JoinWorkshop(ctx, w.ID, prev.ID, name, nil)
			gu = prev
		default:
			// The browser's earlier guest is someone else at the same
			// computer, whose sign-in is gone: a guest of one's own.
			guest.Email = s.randomGuestEmail()
			ln, gu, joined, err = s.store.JoinWorkshop(ctx, w.ID, 0, name, guest)
		}
	}
	switch {
	case errors.Is(err, store.ErrWorkshopFull):
		return nil, nil, nil, false, joinErr(c, http.StatusConflict, "errjoinfull", "title", w.Title, "seats", w.Seats)
	case errors.Is(err, store.ErrWorkshopOver):
		return nil, nil, nil, false, joinErr(c, http.StatusGone, "errjoinended", "title", w.Title)
	case err != nil:
		return nil, nil, nil, false, err
	}
	if gu != nil {
		u = gu
	}
	if joined {
		s.log.Info("learner joined a workshop", "workshop", w.ID, "user", ln.UserID, "guest", gu != nil)
	}
	sess, err := s.workshopSession(ctx, w, u, lang(c))
	s.learnerChanged(w.ID, u.ID)
	return w, u, sess, gu != nil, err
}

// guestEmail names a guest's account: from the browser's pre-session
// cookie when it has one, so that the same browser joining twice at once
// (a double click) makes one guest, not two; random otherwise.
func (s *Server) guestEmail(c echo.Context, w *store.Workshop) string {
	if ck, err := c.Cookie(preSessionCookie); err == nil && len(ck.Value) == 32 {
		sum := sha256.Sum256([]byte(fmt.Sprintf("podpath guest %d %s", w.ID, ck.Value)))
		return "guest-" + hex.EncodeToString(sum[:10]) + "@guests.podpath.invalid"
	}
	return s.randomGuestEmail()
}

func (s *Server) randomGuestEmail() string {
	return "guest-" + strings.ToLower(randomToken(9)) + "@guests.podpath.invalid"
}

// guestDoubleJoin is how long after a guest joined a join from the same
// browser is taken for the same person (a double click, a reload of the
// form's answer); later, it is someone else at the same computer.
const guestDoubleJoin = 2 * time.Minute

// workshopSession returns the learner's active session of the workshop, or
// starts one of the first of its labs they have not finished (with the
// progress of their last session of it).
func (s *Server) workshopSession(ctx context.Context, w *store.Workshop, u *store.User, lg string) (*store.LabSession, error) {
	active := func() (*store.LabSession, error) {
		a, err := s.store.ActiveLabSession(ctx, u.ID)
		if err != nil {
			return nil, err
		}
		if a.WorkshopID != nil && *a.WorkshopID == w.ID {
			return a, nil
		}
		return nil, &apiErr{Status: http.StatusConflict,
			Message: msg(lg, "errjoinactive", "lab", s.labTitle(a.LabID, lg), "title", w.Title, "id", a.ID),
			Extra:   map[string]any{"activeSession": map[string]string{"id": a.ID.String(), "labId": a.LabID}}}
	}
	if a, err := active(); !errors.Is(err, store.ErrNotFound) {
		return a, err
	}
	d, err := s.loadBoardData(ctx, w)
	if err != nil {
		return nil, err
	}
	var l *labs.Lab
	for _, id := range w.LabIDs {
		lab := labs.Find(s.labs, id)
		if lab == nil {
			continue // no longer installed here
		}
		if l == nil {
			l = lab // all done: the first lab again, its progress kept
		}
		if !d.finished(u.ID, lab) {
			l = lab
			break
		}
	}
	if l == nil {
		return nil, apiError(http.StatusGone, translate("errwsnolabs", lg))
	}
	sess, err := s.startInWorkshop(ctx, w, u.ID, l)
	if errors.Is(err, store.ErrActiveSession) {
		return active() // a second join at the same moment started it
	}
	if err != nil {
		return nil, err
	}
	if err := s.carryProgress(ctx, sess); err != nil {
		s.log.Warn("carry progress", "session", sess.ID, "err", err)
	}
	return sess, nil
}

// startedInWorkshop follows a learner's own start of a workshop's lab: the
// progress of their last session of it carries over, and the board hears.
func (s *Server) startedInWorkshop(ctx context.Context, sess *store.LabSession) {
	if err := s.carryProgress(ctx, sess); err != nil {
		s.log.Warn("carry progress", "session", sess.ID, "err", err)
	}
	s.learnerChanged(*sess.WorkshopID, sess.UserID)
}

// finished says whether the learner's last session of the lab passed or
// skipped every step.
func (d *boardData) finished(userID int64, l *labs.Lab) bool {
	var last *store.LabSession
	for _, sess := range d.sessions[userID] {
		if sess.LabID == l.ID {
			last = sess
		}
	}
	if last == nil {
		return false
	}
	_, done := progress.Finished(l, progress.FromStats(d.stats[last.ID]))
	return done
}

// carryProgress gives a new session of a workshop the progress of the
// learner's previous session of the same lab in it: taking a lab again
// (after its session ended, or from the lab's end page) goes on where they
// were, and the board, which reads a lab's latest session, loses nothing.
func (s *Server) carryProgress(ctx context.Context, sess *store.LabSession) error {
	if sess.WorkshopID == nil {
		return nil
	}
	sessions, err := s.store.WorkshopSessions(ctx, *sess.WorkshopID)
	if err != nil {
		return err
	}
	var prev *store.LabSession
	for _, x := range sessions {
		if x.UserID == sess.UserID && x.LabID == sess.LabID && x.ID != sess.ID {
			prev = x
		}
	}
	l := labs.Find(s.labs, sess.LabID)
	if prev == nil || l == nil {
		return nil
	}
	var steps []string
	for _, st := range l.Steps {
		steps = append(steps, st.ID)
	}
	return s.store.CopyProgress(ctx, prev.ID, sess.ID, steps)
}

func (s *Server) startInWorkshop(ctx context.Context, w *store.Workshop, userID int64, l *labs.Lab, opts ...session.StartOption) (*store.LabSession, error) {
	opts = append([]session.StartOption{session.WithWorkshop(w.ID), session.WithLifetime(workshopLifetime(w))}, opts...)
	return s.engine.Start(ctx, userID, l, opts...)
}

// workshopLifetime is how long a session of the workshop may last: until
// the workshop's end, which ends it (and says so); the few minutes more
// are for a server that was down at that moment.
func workshopLifetime(w *store.Workshop) time.Duration {
	return time.Until(w.EndsAt) + 2*time.Minute
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
				return []session.StartOption{session.WithWorkshop(w.ID), session.WithLifetime(workshopLifetime(w))}, nil
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
	w, u, sess, guest, err := s.join(c, req.Code, req.Name)
	if err != nil && u == nil {
		return err
	}
	out := JoinView{Workshop: s.workshopView(c, w, false), Guest: guest}
	if guest {
		token, terr := s.startWebSession(c, u)
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
	v, err := s.sessionView(c, sess)
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
	s.learnerChanged(*sess.WorkshopID, sess.UserID)
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
	if w.Ended(time.Now()) {
		return apiError(http.StatusGone, translate("wsended", lang(c)))
	}
	var req resetRequest
	if c.Request().ContentLength != 0 {
		if err := bindJSON(c, &req); err != nil {
			return err
		}
	}
	ctx := c.Request().Context()
	if _, err := s.store.WorkshopLearner(ctx, w.ID, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return apiError(http.StatusNotFound, translate("errnolearner", lang(c)))
		}
		return err
	}
	sessions, err := s.store.WorkshopSessions(ctx, w.ID)
	if err != nil {
		return err
	}
	var last *store.LabSession
	for _, sess := range sessions {
		if sess.UserID == id {
			last = sess
		}
	}
	if last == nil {
		return apiError(http.StatusConflict, translate("errresetnosession", lang(c)))
	}
	l, err := s.findLab(last.LabID)
	if err != nil {
		return err
	}
	var keep []string
	if req.FromStep != "" {
		labID, stepID, _ := strings.Cut(req.FromStep, "/")
		if labID != l.ID || l.Step(stepID) == nil {
			var keys []string
			for _, st := range l.Steps {
				keys = append(keys, l.ID+"/"+st.ID)
			}
			return apiError(http.StatusBadRequest, msg(lang(c), "errresetstep", "step", fmt.Sprintf("%.80q", req.FromStep), "lab", l.ID, "steps", strings.Join(keys, ", ")))
		}
		for _, st := range l.Steps {
			if st.ID == stepID {
				break
			}
			keep = append(keep, st.ID)
		}
	}
	// One transaction: the old session ended, the new one stored, the
	// progress kept copied (and lab.started). If it fails, the learner
	// goes on in the old session with all its progress; clusters are
	// touched only once it has committed (the old one deleted, then the
	// new one made). Ending the old session ends its take-overs.
	opts := []session.StartOption{session.WithProgressFrom(last.ID, keep)}
	if last.State == store.SessionActive {
		opts = append(opts, session.Replacing(last, "reset by the instructor"))
	}
	fresh, err := s.startInWorkshop(ctx, w, id, l, opts...)
	if errors.Is(err, session.ErrNotSaved) {
		return apiError(http.StatusServiceUnavailable, translate("errresetfailed", lang(c)))
	}
	if err != nil {
		return err
	}
	s.log.Info("learner reset", "workshop", w.ID, "learner", id, "from", req.FromStep, "session", fresh.ID)
	s.learnerChanged(w.ID, id)
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
	if err := s.endWorkshop(c.Request().Context(), w, "the instructor ended the workshop"); errors.Is(err, errNotEnded) {
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

// errNotEnded: Postgres did not take a workshop's end, and nothing of it
// was stored; ending it again may work.
var errNotEnded = errors.New("the workshop's end was not stored")

// endWorkshop marks it ended, drops its prepared clusters and ends every
// session of it (their clusters are deleted; results stay). The end, the
// code's retirement and workshop.ended are one transaction: if it fails
// (errNotEnded) the workshop goes on, open, and nothing else is touched.
func (s *Server) endWorkshop(ctx context.Context, w *store.Workshop, reason string) error {
	if err := s.store.InTx(ctx, func(ctx context.Context) error {
		if err := s.store.EndWorkshop(ctx, w.ID); err != nil {
			return err
		}
		return s.workshopEnded(ctx, w)
	}); err != nil {
		return fmt.Errorf("%w: %w", errNotEnded, err)
	}
	s.engine.Prepare(w.ID, 0, 0, nil)
	sessions, err := s.store.WorkshopSessions(ctx, w.ID)
	if err != nil {
		return err
	}
	// Raised hands come down: the class is over, and the board keeps
	// its results without them.
	if learners, err := s.store.WorkshopLearners(ctx, w.ID); err == nil {
		for _, ln := range learners {
			if ln.HandAt != nil {
				_ = s.store.SetHand(ctx, w.ID, ln.UserID, false)
			}
		}
	}
	var firstErr error
	for _, sess := range sessions {
		if sess.State != store.SessionActive {
			continue
		}
		s.wsHub.endTakeovers(sess.ID, "server")
		if err := s.engine.End(ctx, sess, reason); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	s.log.Info("workshop ended", "workshop", w.ID, "reason", reason)
	s.wsHub.publish(w.ID, "ended", map[string]string{"reason": reason})
	return firstErr
}

// tickWorkshops prepares the clusters of workshops in their prepare window
// and ends those whose time is up. The server runs it every few seconds.
func (s *Server) tickWorkshops(ctx context.Context) {
	// Take-overs typed through a replica that died.
	if n, err := s.store.EndOpenTakeovers(ctx, s.replica.TTL()); err != nil {
		s.log.Warn("close take-over records of stopped replicas", "err", err)
	} else if n > 0 {
		s.log.Info("closed take-over records of stopped replicas", "count", n)
	}
	mark := s.engine.PrepareMark() // before the learner counts are read
	list, err := s.store.LiveWorkshops(ctx)
	if err != nil {
		s.log.Warn("workshops", "err", err)
		return
	}
	now := time.Now()
	for _, w := range list {
		switch w.State(now) {
		case store.WorkshopEnded:
			if err := s.endWorkshop(ctx, w, "the workshop's time is up"); err != nil {
				s.log.Warn("end workshop", "workshop", w.ID, "err", err)
			}
		case store.WorkshopPreparing, store.WorkshopOpen:
			// Keep prepared clusters for the seats not yet taken, up to
			// the number asked for, and no more than the host could run:
			// more would only hold memory other learners need.
			n := min(w.Prepare-w.Learners, w.Seats-w.Learners, s.runnableSeats(w))
			s.engine.Prepare(w.ID, s.workshopWorkers(w), max(0, n), mark)
		default:
			s.engine.Prepare(w.ID, 0, 0, nil)
		}
	}
	// A session that started while its workshop was being ended.
	strays, err := s.store.StrayWorkshopSessions(ctx)
	if err != nil {
		s.log.Warn("workshops", "err", err)
		return
	}
	for _, sess := range strays {
		s.wsHub.endTakeovers(sess.ID, "server")
		if err := s.engine.End(ctx, sess, "the workshop ended"); err != nil {
			s.log.Warn("end a session of an ended workshop", "session", sess.ID, "err", err)
		}
	}
}

// runnableSeats is how many of the workshop's clusters the capacity model
// lets run at once.
func (s *Server) runnableSeats(w *store.Workshop) int {
	cost := session.ClusterCost(s.workshopWorkers(w))
	u := s.engine.Usage()
	return min(int(math.Floor(u.CPULimit/cost.CPU)), u.MemLimit/cost.Memory)
}

func (s *Server) runWorkshops(ctx context.Context) {
	t := time.NewTicker(s.cfg.ReapInterval)
	defer t.Stop()
	for {
		s.tickWorkshops(ctx)
		select {
		case <-ctx.Done():
			return
		case <-s.closing:
			return
		case <-t.C:
		}
	}
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
