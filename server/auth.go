package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/accounts"
	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/store"
)

// sessionCookie holds the sign-in token; the database keeps its hash only.
const sessionCookie = "podpath_session"

// csrfHeader carries the CSRF token on cookie-authenticated API writes.
const csrfHeader = "X-CSRF-Token"

type ctxKey int

const (
	keyUser ctxKey = iota
	keySession
)

// startWebSession signs the user in: a new random token in an HttpOnly,
// SameSite=Lax cookie (Secure behind TLS).
func (s *Server) startWebSession(c echo.Context, u *store.User) (token string, err error) {
	ws, err := s.accounts.Open(c.Request().Context(), u)
	if err != nil {
		return "", err
	}
	s.setSessionCookie(c, ws)
	return ws.Token, nil
}

func (s *Server) setSessionCookie(c echo.Context, ws *accounts.Session) {
	c.SetCookie(&http.Cookie{
		Name: sessionCookie, Value: ws.Token, Path: "/", Expires: ws.Expires,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secure(c),
	})
}

func (s *Server) secure(c echo.Context) bool {
	return s.cfg.Secure() || c.Request().TLS != nil ||
		(c.Request().Header.Get("X-Forwarded-Proto") == "https" && s.fromTrustedProxy(c))
}

// authenticate finds the signed-in user from the session cookie or an
// "Authorization: Bearer <token>" header, and puts it in the context.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		token, bearer := "", false
		if h := c.Request().Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
			token, bearer = strings.TrimPrefix(h, "Bearer "), true
		} else if ck, err := c.Cookie(sessionCookie); err == nil {
			token = ck.Value
		}
		if token != "" && len(token) < 200 {
			ws, err := s.store.WebSessionByToken(c.Request().Context(), accounts.HashToken(token))
			if err == nil {
				c.Set("user", ws.User)
				c.Set("websession", ws)
				c.Set("bearer", bearer)
				ctx := context.WithValue(c.Request().Context(), keyUser, ws.User)
				c.SetRequest(c.Request().WithContext(ctx))
			} else if !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		return next(c)
	}
}

func currentUser(c echo.Context) *store.User {
	u, _ := c.Get("user").(*store.User)
	return u
}

func currentWebSession(c echo.Context) *store.WebSession {
	ws, _ := c.Get("websession").(*store.WebSession)
	return ws
}

// requireUserAPI answers 401 JSON when nobody is signed in, and checks the
// CSRF token on cookie-authenticated writes.
func (s *Server) requireUserAPI(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if currentUser(c) == nil {
			return errs.E(errs.Unauthenticated, "sign in first: POST /api/login with your email and password")
		}
		if err := checkAPICSRF(c); err != nil {
			return err
		}
		return next(c)
	}
}

// checkAPICSRF wants the X-CSRF-Token header on a write authenticated by
// the session cookie (a bearer token cannot be sent by another site).
func checkAPICSRF(c echo.Context) error {
	ws := currentWebSession(c)
	if ws == nil || !isWrite(c.Request().Method) || c.Get("bearer") == true {
		return nil
	}
	got := c.Request().Header.Get(csrfHeader)
	if subtle.ConstantTimeCompare([]byte(got), []byte(ws.CSRFToken)) != 1 {
		return errs.E(errs.Forbidden, "missing or wrong "+csrfHeader+" header: send the csrfToken from /api/me with cookie-authenticated writes, or use Authorization: Bearer")
	}
	return nil
}

// preSessionCookie holds the CSRF token of the sign-in and sign-up forms,
// which are posted before there is a session to tie a token to: the form
// must carry the same value as the cookie (a double submit), which another
// site can neither read nor set.
const preSessionCookie = "podpath_csrf"

// formCSRF returns the browser's pre-session CSRF token, setting the
// cookie when there is none yet.
func (s *Server) formCSRF(c echo.Context) string {
	if ck, err := c.Cookie(preSessionCookie); err == nil && len(ck.Value) == 32 {
		return ck.Value
	}
	token := accounts.NewToken(24)
	c.SetCookie(&http.Cookie{Name: preSessionCookie, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secure(c)})
	// Later calls in this request see it too.
	c.Request().AddCookie(&http.Cookie{Name: preSessionCookie, Value: token})
	return token
}

// checkPreSessionCSRF verifies the csrf field of a sign-in or sign-up form
// against the pre-session cookie.
func checkPreSessionCSRF(c echo.Context) error {
	ck, err := c.Cookie(preSessionCookie)
	field := c.FormValue("csrf")
	if err != nil || len(ck.Value) != 32 || subtle.ConstantTimeCompare([]byte(field), []byte(ck.Value)) != 1 {
		return errs.E(errs.Forbidden, translate("errformforeign", lang(c)))
	}
	return nil
}

// requireUserPage redirects to the sign-in page when nobody is signed in.
func (s *Server) requireUserPage(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if currentUser(c) == nil {
			return c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(c.Request().URL.RequestURI()))
		}
		return next(c)
	}
}

// checkFormCSRF verifies the hidden csrf field of a form post.
func checkFormCSRF(c echo.Context) error {
	ws := currentWebSession(c)
	if ws == nil {
		return errs.E(errs.Forbidden, translate("errsigninagain", lang(c)))
	}
	if subtle.ConstantTimeCompare([]byte(c.FormValue("csrf")), []byte(ws.CSRFToken)) != 1 {
		return errs.E(errs.Forbidden, translate("errformexpired", lang(c)))
	}
	return nil
}

func isWrite(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

// clientIP is the address a request came from: the connection's, or what
// a trusted proxy says (PODPATH_TRUSTED_PROXIES; see routes).
func clientIP(c echo.Context) string { return c.RealIP() }

// fromTrustedProxy reports whether the request came straight from one of
// the configured reverse proxies, whose forwarding headers are believed.
func (s *Server) fromTrustedProxy(c echo.Context) bool {
	if len(s.proxies) == 0 {
		return false
	}
	host, _, err := net.SplitHostPort(c.Request().RemoteAddr)
	if err != nil {
		host = c.Request().RemoteAddr
	}
	ip := net.ParseIP(host)
	for _, n := range s.proxies {
		if ip != nil && n.Contains(ip) {
			return true
		}
	}
	return false
}

// login signs in by password (accounts.Login) and sets the cookie.
func (s *Server) login(c echo.Context, email, password string) (*store.User, string, error) {
	u, ws, err := s.accounts.Login(c.Request().Context(), clientIP(c), email, password)
	if err != nil {
		return nil, "", err
	}
	s.setSessionCookie(c, ws)
	return u, ws.Token, nil
}

// signup makes a learner account (accounts.SignUp) and sets the cookie.
func (s *Server) signup(c echo.Context, email, name, password string) (*store.User, string, error) {
	u, ws, err := s.accounts.SignUp(c.Request().Context(), clientIP(c), email, name, password)
	if err != nil {
		return nil, "", err
	}
	s.setSessionCookie(c, ws)
	return u, ws.Token, nil
}

func (s *Server) logout(c echo.Context) {
	if ck, err := c.Cookie(sessionCookie); err == nil {
		_ = s.accounts.Close(c.Request().Context(), ck.Value)
	}
	if h := c.Request().Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		_ = s.accounts.Close(c.Request().Context(), strings.TrimPrefix(h, "Bearer "))
	}
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secure(c)})
	// The browser's pre-session token goes too: a guest's identity is
	// drawn from it, and the next person at this computer is not them.
	c.SetCookie(&http.Cookie{Name: preSessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secure(c)})
}
