package server

import (
	"context"
	"errors"
	"github.com/podpath/podpath/accounts"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/session"
	"github.com/podpath/podpath/store"
	"github.com/podpath/podpath/workshops"
)

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
		e := errs.E(errs.Conflict, msg(lg, "errjoinactive", "lab", s.labTitle(ae.Session.LabID, lg), "title", ae.Workshop.Title, "id", ae.Session.ID))
		e.Detail = map[string]any{"activeSession": sessionRef(ae.Session)}
		return e
	case errors.Is(err, workshops.ErrNoLabs):
		return errs.E(errs.Gone, translate("errwsnolabs", lg))
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
		return nil, errs.E(errs.Gone, msg(lg, "errguestended", "title", closed.Title))
	case u.GuestWorkshop != 0 && closed != nil:
		return nil, errs.E(errs.Conflict, msg(lg, "errguestnotyet", "title", closed.Title))
	case u.GuestWorkshop != 0:
		return nil, errs.E(errs.Forbidden, msg(lg, "errguestotherlab", "lab", l.Title.In(lg)))
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
		ws, terr := s.store.WebSessionByToken(c.Request().Context(), accounts.HashToken(token))
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
