package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/podpath/podpath/accounts"
	"io"
	"net"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/session"
	"github.com/podpath/podpath/store"
)

// maxJSONBody is the largest JSON request body.
const maxJSONBody = 64 << 10

// bindJSON decodes a JSON body into v, rejecting unknown fields, trailing
// data and text Postgres would refuse (see input.go), with a message that
// says what was wrong.
func bindJSON(c echo.Context, v any) error {
	ct := c.Request().Header.Get("Content-Type")
	if !strings.HasPrefix(ct, "application/json") {
		return echo.NewHTTPError(http.StatusUnsupportedMediaType, "send a JSON body with Content-Type: application/json")
	}
	raw, err := io.ReadAll(io.LimitReader(c.Request().Body, maxJSONBody+1))
	var ne net.Error
	var he *echo.HTTPError
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return echo.NewHTTPError(http.StatusRequestTimeout, "the request body did not arrive in time; send it at once")
	case errors.As(err, &he):
		return err // the 1 MB body limit
	case err != nil:
		return errs.E(errs.Invalid, "the request body could not be read: "+err.Error())
	case len(raw) > maxJSONBody:
		return errs.E(errs.TooLarge, fmt.Sprintf("the JSON body is too large (%d KB at most)", maxJSONBody>>10))
	case !utf8.Valid(raw):
		return errs.E(errs.Invalid, "the request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.EOF):
			return errs.E(errs.Invalid, "the request body is empty; send a JSON object")
		case errors.As(err, &se):
			return errs.E(errs.Invalid, fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, err))
		case errors.As(err, &te):
			return errs.E(errs.Invalid, fmt.Sprintf("field %q must be a %s", te.Field, te.Type))
		case strings.HasPrefix(err.Error(), "json: unknown field"):
			return errs.E(errs.Invalid, strings.TrimPrefix(err.Error(), "json: ")+" in the request")
		}
		return errs.E(errs.Invalid, "malformed JSON: "+err.Error())
	}
	if dec.More() {
		return errs.E(errs.Invalid, "the request body must be one JSON object")
	}
	return checkText(v)
}

type credentials struct {
	Email    string `json:"email"`
	Password string `json:"password"`
	Name     string `json:"name,omitempty"`
}

type authResponse struct {
	User      *UserView `json:"user"`
	Token     string    `json:"token"`
	CSRFToken string    `json:"csrfToken"`
}

func (s *Server) authResponse(c echo.Context, status int, u *store.User, token string) error {
	ws, err := s.store.WebSessionByToken(c.Request().Context(), accounts.HashToken(token))
	if err != nil {
		return err
	}
	return c.JSON(status, authResponse{User: userView(u), Token: token, CSRFToken: ws.CSRFToken})
}

func (s *Server) apiSignup(c echo.Context) error {
	var cr credentials
	if err := bindJSON(c, &cr); err != nil {
		return err
	}
	u, token, err := s.signup(c, cr.Email, cr.Name, cr.Password)
	if err != nil {
		return err
	}
	return s.authResponse(c, http.StatusCreated, u, token)
}

func (s *Server) apiLogin(c echo.Context) error {
	var cr credentials
	if err := bindJSON(c, &cr); err != nil {
		return err
	}
	if cr.Email == "" || cr.Password == "" {
		return errs.E(errs.Invalid, "send email and password")
	}
	u, token, err := s.login(c, cr.Email, cr.Password)
	if err != nil {
		return err
	}
	return s.authResponse(c, http.StatusOK, u, token)
}

func (s *Server) apiLogout(c echo.Context) error {
	if err := checkAPICSRF(c); err != nil {
		return err
	}
	s.logout(c)
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) apiMe(c echo.Context) error {
	u := currentUser(c)
	out := MeView{User: userView(u), CSRFToken: currentWebSession(c).CSRFToken}
	if sess, err := s.store.ActiveLabSession(c.Request().Context(), u.ID); err == nil {
		out.ActiveSession = sessionRef(sess)
	}
	return c.JSON(http.StatusOK, out)
}

// lang picks the page language: ?lang=, then the lang cookie, then the
// browser's Accept-Language; English otherwise.
func lang(c echo.Context) string {
	if l := c.QueryParam("lang"); l == "en" || l == "zh" {
		return l
	}
	if ck, err := c.Cookie("lang"); err == nil && (ck.Value == "en" || ck.Value == "zh") {
		return ck.Value
	}
	if strings.HasPrefix(strings.ToLower(c.Request().Header.Get("Accept-Language")), "zh") {
		return "zh"
	}
	return "en"
}

// LabView is a lab as the API shows it.
type LabView struct {
	ID      string `json:"id"`
	Order   int    `json:"order"`
	Title   string `json:"title"`
	Summary string `json:"summary"`
	Level   string `json:"level"`
	Minutes int    `json:"minutes"`
	Workers int    `json:"workers"`
	// Challenge: the lab starts in challenge mode only.
	Challenge bool `json:"challenge,omitempty"`
	// Killercoda: the lab is a Killercoda scenario (docs/KILLERCODA.md).
	Killercoda bool       `json:"killercoda,omitempty"`
	Steps      []StepBase `json:"steps"`
}

// StepBase names a step and the layers it touches.
type StepBase struct {
	ID     string   `json:"id"`
	Title  string   `json:"title"`
	Layers []string `json:"layers"`
}

func labView(l *labs.Lab, lg string) LabView {
	v := LabView{ID: l.ID, Order: l.Order, Title: l.Title.In(lg), Summary: l.Summary.In(lg), Level: l.Level, Minutes: l.Minutes, Workers: l.Cluster.Workers, Challenge: l.Challenge, Killercoda: l.Killercoda}
	for _, st := range l.Steps {
		b := StepBase{ID: st.ID, Title: st.Title.In(lg), Layers: st.Layers}
		if l.Challenge {
			// A challenge's layers would name the fault before it is found.
			b.Layers = []string{}
		}
		v.Steps = append(v.Steps, b)
	}
	return v
}

func (s *Server) apiLabs(c echo.Context) error {
	lg := lang(c)
	out := make([]LabView, 0, len(s.labs))
	for _, l := range s.labs {
		out = append(out, labView(l, lg))
	}
	return c.JSON(http.StatusOK, out)
}

// labTitle names a lab in the language, by its id when it is no longer
// installed.
func (s *Server) labTitle(id, lg string) string {
	if l := labs.Find(s.labs, id); l != nil {
		return l.Title.In(lg)
	}
	return id
}

func (s *Server) findLab(id string) (*labs.Lab, error) {
	return s.findLabIn(id, "en")
}

// findLabIn is findLab with its refusal in the language lg.
func (s *Server) findLabIn(id, lg string) (*labs.Lab, error) {
	l := labs.Find(s.labs, id)
	if l == nil {
		return nil, errs.E(errs.NotFound, msg(lg, "errnolab", "lab", fmt.Sprintf("%q", id)))
	}
	return l, nil
}

func (s *Server) apiLab(c echo.Context) error {
	l, err := s.findLabIn(c.Param("lab"), lang(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, labView(l, lang(c)))
}

// startRequest is the optional body of a start.
type startRequest struct {
	Mode string `json:"mode,omitempty"`
}

// checkMode reads a session mode as a start takes it: empty is guided.
func checkMode(mode string) (string, error) {
	switch mode {
	case "":
		return store.ModeGuided, nil
	case store.ModeGuided, store.ModeChallenge:
		return mode, nil
	}
	return "", errs.E(errs.Invalid, fmt.Sprintf(`mode %.40q is not a mode: send "guided" (the default: commands shown, with run buttons) or "challenge" (no run buttons, commands behind "show me")`, mode))
}

func (s *Server) apiStart(c echo.Context) error {
	l, err := s.findLabIn(c.Param("lab"), lang(c))
	if err != nil {
		return err
	}
	var req startRequest
	if c.Request().ContentLength != 0 {
		if err := bindJSON(c, &req); err != nil {
			return err
		}
	}
	mode, err := checkMode(req.Mode)
	if err != nil {
		return err
	}
	opts, err := s.workshopStartOptions(c.Request().Context(), currentUser(c), l, lang(c))
	if err != nil {
		return err
	}
	sess, err := s.engine.Start(c.Request().Context(), currentUser(c).ID, l, append(opts, session.WithMode(mode))...)
	if errors.Is(err, store.ErrActiveSession) {
		active, aerr := s.store.ActiveLabSession(c.Request().Context(), currentUser(c).ID)
		if aerr != nil {
			return aerr
		}
		return &errs.Error{Kind: errs.Conflict, Err: err,
			Message: msg(lang(c), "erractive", "lab", s.labTitle(active.LabID, lang(c)), "id", active.ID),
			Detail:  map[string]any{"activeSession": sessionRef(active)}}
	}
	if err != nil {
		return err
	}
	view, err := s.sessionView(c, sess)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, view)
}

// ownSession loads the session named in the path and checks it belongs to
// the signed-in user. Someone else's session is "not found".
func (s *Server) ownSession(c echo.Context) (*store.LabSession, error) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return nil, errs.E(errs.Invalid, msg(lang(c), "errsessionid", "id", fmt.Sprintf("%q", c.Param("id"))))
	}
	sess, err := s.store.LabSession(c.Request().Context(), id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && sess.UserID != currentUser(c).ID) {
		return nil, errs.E(errs.NotFound, translate("errnosession", lang(c)))
	}
	return sess, err
}

func (s *Server) activeSession(c echo.Context) (*store.LabSession, error) {
	sess, err := s.ownSession(c)
	if err != nil {
		return nil, err
	}
	if sess.State != store.SessionActive {
		return nil, errs.E(errs.Gone, translate("errsessionended", lang(c)))
	}
	return sess, nil
}
