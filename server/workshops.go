package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/labs"
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
	cost := s.engine.ClusterCost(s.class.Shape(w))
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
			return errs.E(errs.Forbidden, translate("errinstructoronly", lang(c)))
		}
		return next(c)
	}
}

func workshopID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, errs.E(errs.Invalid, msg(lang(c), "errworkshopid", "id", fmt.Sprintf("%.40q", c.Param("id"))))
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
		return nil, errs.E(errs.NotFound, translate("errnoworkshop", lang(c)))
	}
	return w, err
}

func learnerID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("learner"), 10, 64)
	if err != nil || id <= 0 {
		return 0, errs.E(errs.Invalid, msg(lang(c), "errlearnerid", "id", fmt.Sprintf("%.40q", c.Param("learner"))))
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
	bad := func(key string, kv ...any) error { return errs.E(errs.Invalid, msg(lg, key, kv...)) }
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
			return errs.E(errs.Gone, translate("errcodeended", lang(c)))
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
