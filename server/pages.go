package server

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/session"
	"github.com/podpath/podpath/store"
	"github.com/podpath/podpath/web"
)

type pages struct {
	t map[string]*template.Template
}

var pageNames = []string{"home", "login", "signup", "session", "error", "conflict", "workshops", "workshop", "watch"}

func newPages() (*pages, error) {
	p := &pages{t: map[string]*template.Template{}}
	funcs := template.FuncMap{
		"t":     translate,
		"text":  func(t labs.Text, lg string) string { return t.In(lg) },
		"join":  strings.Join,
		"lower": strings.ToLower,
	}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(web.Templates, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("page template %s: %w", name, err)
		}
		p.t[name] = t
	}
	return p, nil
}

func (p *pages) render(c echo.Context, status int, name string, data map[string]any) error {
	var buf bytes.Buffer
	if err := p.t[name].ExecuteTemplate(&buf, "layout", data); err != nil {
		return err
	}
	return c.HTMLBlob(status, buf.Bytes())
}

func staticHandler() echo.HandlerFunc {
	sub, _ := fs.Sub(web.Static, "static")
	h := http.StripPrefix("/static/", http.FileServer(http.FS(sub)))
	return func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "public, max-age=300")
		h.ServeHTTP(c.Response(), c.Request())
		return nil
	}
}

// pageData is what every page gets: the user, the language, the CSRF token.
func (s *Server) pageData(c echo.Context, extra map[string]any) map[string]any {
	lg := lang(c)
	if q := c.QueryParam("lang"); q == "en" || q == "zh" {
		c.SetCookie(&http.Cookie{Name: "lang", Value: q, Path: "/", MaxAge: 365 * 24 * 3600, SameSite: http.SameSiteLaxMode, Secure: s.secure(c)})
	}
	d := map[string]any{"Lang": lg, "User": currentUser(c), "Path": c.Request().URL.Path, "AllowSignup": s.cfg.AllowSignup}
	if ws := currentWebSession(c); ws != nil {
		d["CSRF"] = ws.CSRFToken
	}
	for k, v := range extra {
		d[k] = v
	}
	return d
}

type labCard struct {
	Lab    LabView
	Active bool // the learner's active session is of this lab
}

func (s *Server) pageHome(c echo.Context) error {
	lg := lang(c)
	var active *store.LabSession
	if u := currentUser(c); u != nil {
		if a, err := s.store.ActiveLabSession(c.Request().Context(), u.ID); err == nil {
			active = a
		}
	}
	var cards []labCard
	for _, l := range s.labs {
		cards = append(cards, labCard{Lab: labView(l, lg), Active: active != nil && active.LabID == l.ID})
	}
	return s.pages.render(c, http.StatusOK, "home", s.pageData(c, map[string]any{"Labs": cards, "Active": active}))
}

func (s *Server) pageLogin(c echo.Context) error {
	return s.pages.render(c, http.StatusOK, "login", s.pageData(c, map[string]any{"Next": safeNext(c.QueryParam("next")), "FormCSRF": s.formCSRF(c)}))
}

func (s *Server) pageSignup(c echo.Context) error {
	status := http.StatusOK
	if !s.cfg.AllowSignup {
		status = http.StatusForbidden
	}
	return s.pages.render(c, status, "signup", s.pageData(c, map[string]any{"Next": safeNext(c.QueryParam("next")), "AllowSignup": s.cfg.AllowSignup, "FormCSRF": s.formCSRF(c)}))
}

// safeNext keeps redirects on this site: a path that starts with one
// slash, in printable ASCII without backslashes. Browsers drop tabs and
// newlines anywhere in a URL and read a backslash as a slash, so "/\t/evil.example"
// would be "//evil.example", another origin; anything unusual goes home.
func safeNext(next string) string {
	if len(next) == 0 || len(next) > 2048 || next[0] != '/' || strings.HasPrefix(next, "//") {
		return "/"
	}
	for i := 0; i < len(next); i++ {
		if b := next[i]; b <= ' ' || b >= 0x7f || b == '\\' {
			return "/"
		}
	}
	return next
}

func formMessage(err error) string {
	var ae *apiErr
	if errors.As(err, &ae) {
		return ae.Message
	}
	return err.Error()
}

func (s *Server) formLogin(c echo.Context) error {
	if err := checkPreSessionCSRF(c); err != nil {
		return err
	}
	next := safeNext(c.FormValue("next"))
	_, _, err := s.login(c, c.FormValue("email"), c.FormValue("password"))
	if err != nil {
		var ae *apiErr
		if !errors.Is(err, errBadLogin) && !errors.As(err, &ae) {
			return err
		}
		return s.pages.render(c, http.StatusUnauthorized, "login", s.pageData(c, map[string]any{"Error": formMessage(err), "Email": c.FormValue("email"), "Next": next, "FormCSRF": s.formCSRF(c)}))
	}
	return c.Redirect(http.StatusSeeOther, next)
}

func (s *Server) formSignup(c echo.Context) error {
	if err := checkPreSessionCSRF(c); err != nil {
		return err
	}
	if !s.cfg.AllowSignup {
		return s.pageSignup(c)
	}
	next := safeNext(c.FormValue("next"))
	_, _, err := s.signup(c, c.FormValue("email"), c.FormValue("name"), c.FormValue("password"))
	if err != nil {
		var ae *apiErr
		if !errors.As(err, &ae) {
			return err
		}
		return s.pages.render(c, ae.Status, "signup", s.pageData(c, map[string]any{"Error": ae.Message, "Email": c.FormValue("email"), "Name": c.FormValue("name"), "Next": next, "AllowSignup": s.cfg.AllowSignup, "FormCSRF": s.formCSRF(c)}))
	}
	return c.Redirect(http.StatusSeeOther, next)
}

func (s *Server) formLogout(c echo.Context) error {
	if currentUser(c) != nil {
		if err := checkFormCSRF(c); err != nil {
			return err
		}
	}
	s.logout(c)
	return c.Redirect(http.StatusSeeOther, "/")
}

// formStart starts a lab from the catalog. With an active session of
// another lab, it asks whether to resume that one or end it first.
func (s *Server) formStart(c echo.Context) error {
	if err := checkFormCSRF(c); err != nil {
		return err
	}
	l, err := s.findLab(c.Param("lab"))
	if err != nil {
		return err
	}
	mode, err := checkMode(c.FormValue("mode"))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	u := currentUser(c)
	if active, err := s.store.ActiveLabSession(ctx, u.ID); err == nil {
		if active.LabID == l.ID {
			return c.Redirect(http.StatusSeeOther, "/sessions/"+active.ID.String())
		}
		if c.FormValue("replace") != "1" {
			other := labs.Find(s.labs, active.LabID)
			title := active.LabID
			if other != nil {
				title = other.Title.In(lang(c))
			}
			return s.pages.render(c, http.StatusConflict, "conflict", s.pageData(c, map[string]any{
				"Active": active, "ActiveTitle": title, "Lab": labView(l, lang(c)), "Mode": mode,
			}))
		}
		if err := s.engine.End(ctx, active, "replaced by another lab"); err != nil {
			return err
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	opts, err := s.workshopStartOptions(ctx, u, l)
	if err != nil {
		return err
	}
	sess, err := s.engine.Start(ctx, u.ID, l, append(opts, session.WithMode(mode))...)
	if err != nil {
		return err
	}
	s.labStarted(ctx, sess)
	if sess.WorkshopID != nil {
		s.startedInWorkshop(ctx, sess)
	}
	return c.Redirect(http.StatusSeeOther, "/sessions/"+sess.ID.String())
}

func (s *Server) pageSession(c echo.Context) error {
	sess, err := s.ownSession(c)
	if err != nil {
		return err
	}
	l := s.engine.SessionLab(sess)
	if l == nil {
		return apiError(http.StatusGone, "lab "+sess.LabID+" is no longer installed on this server")
	}
	if sess.State == store.SessionActive {
		s.engine.Touch(sess.ID)
	}
	lg := lang(c)
	intro := ""
	if md := l.Intro.In(lg); md != "" {
		if intro, err = s.renderStep(c.Request().Context(), sess, l, md, lg); err != nil {
			return err
		}
	}
	var next *LabView
	n := nextLab(l, s.labs)
	if w := s.sessionWorkshop(c.Request().Context(), sess); w != nil {
		n = s.workshopNext(w, l) // a workshop's lab leads to the workshop's next
	}
	if n != nil {
		v := labView(n, lg)
		next = &v
	}
	return s.pages.render(c, http.StatusOK, "session", s.pageData(c, map[string]any{
		"Session": sess, "Lab": labView(l, lg), "Intro": template.HTML(intro), "Layers": labs.Layers,
		"Now": time.Now(), "Next": next,
	}))
}

func (s *Server) formEnd(c echo.Context) error {
	if err := checkFormCSRF(c); err != nil {
		return err
	}
	sess, err := s.ownSession(c)
	if err != nil {
		return err
	}
	if sess.State == store.SessionActive {
		if err := s.engine.End(c.Request().Context(), sess, "ended by the learner"); err != nil {
			return err
		}
	}
	return c.Redirect(http.StatusSeeOther, "/")
}
