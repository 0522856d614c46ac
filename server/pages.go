package server

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/podpath/podpath/accounts"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/progress"
	"github.com/podpath/podpath/session"
	"github.com/podpath/podpath/store"
	"github.com/podpath/podpath/web"
)

type pages struct {
	t map[string]*template.Template
}

var pageNames = []string{"home", "login", "signup", "session", "error", "conflict", "workshops", "workshop", "watch", "takeovers", "ports"}

// pagePartials are the sections a page includes from files of their own.
var pagePartials = map[string][]string{"home": {"templates/tracks.html"}}

func newPages() (*pages, error) {
	p := &pages{t: map[string]*template.Template{}}
	funcs := template.FuncMap{
		"t": translate,
		// plural: {{plural "stepcount" 3 .Lang}} is "3 steps".
		"plural": func(key string, n int, lg string) string { return plural(lg, key, n) },
		// msg: {{msg "joinedas" .Lang "name" .Seated}}.
		"msg":   func(key, lg string, kv ...any) string { return msg(lg, key, kv...) },
		"text":  func(t labs.Text, lg string) string { return t.In(lg) },
		"join":  strings.Join,
		"lower": strings.ToLower,
		"date":  dateCell,
		"mins":  func(sec int64) string { return (time.Duration(sec) * time.Second).Round(time.Minute).String() },
		"status": func(st, lg string) string {
			return translate(map[string]string{progress.NotStarted: "notstarted", progress.InProgress: "inprogress", progress.Completed: "completed"}[st], lg)
		},
	}
	for _, name := range pageNames {
		files := append([]string{"templates/layout.html", "templates/" + name + ".html"}, pagePartials[name]...)
		t, err := template.New(name).Funcs(funcs).ParseFS(web.Templates, files...)
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
	d := map[string]any{"Lang": lg, "User": currentUser(c), "Path": c.Request().URL.Path, "AllowSignup": s.cfg.AllowSignup,
		"SSO": s.cfg.SSO(), "SSOName": s.cfg.OIDCName, "PasswordLogin": s.cfg.PasswordLogin}
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
	// NoStart, when set, is the message key said instead of Start: a
	// guest starts only their open workshop's labs.
	NoStart string
}

func (s *Server) pageHome(c echo.Context) error {
	lg := lang(c)
	var active *store.LabSession
	if u := currentUser(c); u != nil {
		if a, err := s.store.ActiveLabSession(c.Request().Context(), u.ID); err == nil {
			active = a
		}
	}
	hw := s.homeWorkshop(c, currentUser(c), active)
	guest := hw != nil && hw.Guest
	var cards []labCard
	for _, l := range s.labs {
		card := labCard{Lab: labView(l, lg), Active: active != nil && active.LabID == l.ID}
		switch {
		case card.Active || !guest:
		case hw.Ended:
			card.NoStart = "wsguestnomore"
		case !hw.Labs[l.ID]:
			card.NoStart = "wsnotinworkshop"
		case hw.State != store.WorkshopOpen:
			card.NoStart = "wsnotopen"
		}
		cards = append(cards, card)
	}
	var tracks []trackCard
	if !guest { // a track's next lab is seldom a workshop's
		var err error
		if tracks, err = s.trackCards(c, active); err != nil {
			return err
		}
	}
	d := map[string]any{"Labs": cards, "Active": active, "Tracks": tracks, "Workshop": hw}
	s.homeTeams(c, currentUser(c), d)
	return s.pages.render(c, http.StatusOK, "home", s.pageData(c, d))
}

// trackCard is a track on the home page (web/templates/tracks.html).
type trackCard struct {
	Track TrackView
	// Count says how many of the track's labs are done; NextLabel is the
	// button to its next lab.
	Count, NextLabel string
	Active           bool // the learner's active session is of the next lab
	// NextMode is the mode the next lab starts in: challenge for a
	// troubleshooting challenge, else guided.
	NextMode string
}

func (s *Server) trackCards(c echo.Context, active *store.LabSession) ([]trackCard, error) {
	views, err := s.trackViews(c)
	if err != nil {
		return nil, err
	}
	lg := lang(c)
	var cards []trackCard
	for _, v := range views {
		if v.Total == 0 {
			continue
		}
		card := trackCard{Track: v, Active: active != nil && v.Next != "" && active.LabID == v.Next,
			Count: strings.NewReplacer("{done}", fmt.Sprint(v.Completed), "{total}", fmt.Sprint(v.Total)).Replace(translate("trackcount", lg))}
		card.NextMode = store.ModeGuided
		for _, l := range v.Labs {
			if l.ID == v.Next {
				card.NextLabel = strings.ReplaceAll(translate("tracknext", lg), "{lab}", l.Title)
			}
		}
		if l := labs.Find(s.labs, v.Next); l != nil && l.Challenge {
			card.NextMode = store.ModeChallenge
		}
		cards = append(cards, card)
	}
	return cards, nil
}

func (s *Server) pageLogin(c echo.Context) error {
	extra := map[string]any{}
	if s.sso != nil && s.sso.unavailable() != nil {
		extra["Error"] = translate("ssounavailable", lang(c))
	}
	return s.renderLogin(c, http.StatusOK, extra)
}

// renderLogin shows the sign-in page: the single sign-on button when it is
// configured, the password form unless password sign-in is off.
func (s *Server) renderLogin(c echo.Context, status int, extra map[string]any) error {
	next := safeNext(c.QueryParam("next"))
	if c.Request().Method == http.MethodPost {
		next = safeNext(c.FormValue("next"))
	}
	d := map[string]any{"Next": next, "FormCSRF": s.formCSRF(c)}
	for k, v := range extra {
		d[k] = v
	}
	return s.pages.render(c, status, "login", s.pageData(c, d))
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

func (s *Server) formLogin(c echo.Context) error {
	if err := checkPreSessionCSRF(c); err != nil {
		return err
	}
	next := safeNext(c.FormValue("next"))
	if !s.cfg.PasswordLogin {
		return s.renderLogin(c, http.StatusForbidden, map[string]any{"Error": translate("passwordoff", lang(c))})
	}
	_, _, err := s.login(c, c.FormValue("email"), c.FormValue("password"))
	if err != nil {
		_, m, _, ok := refusal(err, lang(c))
		if !ok {
			return err
		}
		if errors.Is(err, accounts.ErrBadLogin) {
			m = translate("errbadlogin", lang(c))
		}
		return s.renderLogin(c, http.StatusUnauthorized, map[string]any{"Error": m, "Email": c.FormValue("email")})
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
		status, m, _, ok := refusal(err, lang(c))
		if !ok {
			return err
		}
		return s.pages.render(c, status, "signup", s.pageData(c, map[string]any{"Error": m, "Email": c.FormValue("email"), "Name": c.FormValue("name"), "Next": next, "AllowSignup": s.cfg.AllowSignup, "FormCSRF": s.formCSRF(c)}))
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
	l, err := s.findLabIn(c.Param("lab"), lang(c))
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
	opts, err := s.workshopStartOptions(ctx, u, l, lang(c))
	if err != nil {
		return err
	}
	sess, err := s.engine.Start(ctx, u.ID, l, append(opts, session.WithMode(mode))...)
	if err != nil {
		return err
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
		return errs.E(errs.Gone, msg(lang(c), "errlabgone", "lab", sess.LabID))
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
	n := progress.Next(l, s.labs)
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

// dateCell formats a time (or a *time.Time, nil as "") for pages.
func dateCell(v any) string {
	switch t := v.(type) {
	case time.Time:
		return t.UTC().Format("2006-01-02 15:04 UTC")
	case *time.Time:
		if t != nil {
			return t.UTC().Format("2006-01-02 15:04 UTC")
		}
	}
	return ""
}
