package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/mail"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
	"golang.org/x/crypto/bcrypt"

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

// HashPassword hashes a password with bcrypt.
func HashPassword(pw string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)
	return string(h), err
}

// ValidatePassword says what is wrong with a new password.
func ValidatePassword(pw string) error {
	switch n := utf8.RuneCountInString(pw); {
	case n < 8:
		return errors.New("the password needs at least 8 characters")
	case len(pw) > 72:
		return errors.New("the password can have at most 72 bytes")
	}
	return nil
}

// ValidateEmail normalises an email address or says what is wrong with it.
func ValidateEmail(email string) (string, error) {
	email = strings.TrimSpace(email)
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email || !strings.Contains(email, "@") || len(email) > 254 {
		return "", errors.New("enter an email address like ada@example.com")
	}
	return email, nil
}

func randomToken(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func hashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// startWebSession signs the user in: a new random token in an HttpOnly,
// SameSite=Lax cookie (Secure behind TLS).
func (s *Server) startWebSession(c echo.Context, u *store.User) (token string, err error) {
	token = randomToken(32)
	expires := time.Now().Add(s.cfg.SessionTTL)
	if err := s.store.CreateWebSession(c.Request().Context(), hashToken(token), u.ID, randomToken(24), expires); err != nil {
		return "", err
	}
	_ = s.store.TouchLogin(c.Request().Context(), u.ID)
	c.SetCookie(&http.Cookie{
		Name: sessionCookie, Value: token, Path: "/", Expires: expires,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secure(c),
	})
	return token, nil
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
			ws, err := s.store.WebSessionByToken(c.Request().Context(), hashToken(token))
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
	token := randomToken(24)
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

// errSignupClosed tells someone how to get an account when sign-up is closed.
const errSignupClosed = "sign-up is closed on this server: ask its admin for an account"

// errPasswordOff answers a password sign-in or sign-up when
// PODPATH_PASSWORD_LOGIN=false.
const errPasswordOff = "password sign-in is turned off on this server: sign in with single sign-on (the button on /login, or GET /auth/oidc/login)"

// errBadLogin is the one answer to a wrong email or password.
var errBadLogin = errs.E(errs.Unauthenticated, "wrong email or password")

// login checks credentials and, when they match, signs the user in.
func (s *Server) login(c echo.Context, email, password string) (*store.User, string, error) {
	if !s.cfg.PasswordLogin {
		return nil, "", errs.E(errs.Forbidden, errPasswordOff)
	}
	email = strings.TrimSpace(email)
	if ok, err := s.limiter.allow(c.Request().Context(), loginKeys(clientIP(c), email)...); err != nil {
		return nil, "", err
	} else if !ok {
		return nil, "", errs.E(errs.TooMany, translate("errloginrate", lang(c)))
	}
	u, err := s.store.UserByEmail(c.Request().Context(), email)
	if errors.Is(err, store.ErrNotFound) {
		// Spend the same time as a real check, so timing does not tell
		// which emails have accounts.
		_ = bcrypt.CompareHashAndPassword(s.dummyHash, []byte(password))
		return nil, "", errBadLogin
	}
	if err != nil {
		return nil, "", err
	}
	if u.PasswordHash == "" {
		// An account made by single sign-on has no password: it signs in
		// there only. Same time, same answer as a wrong password.
		_ = bcrypt.CompareHashAndPassword(s.dummyHash, []byte(password))
		return nil, "", errBadLogin
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil {
		return nil, "", errBadLogin
	}
	token, err := s.startWebSession(c, u)
	return u, token, err
}

// signup creates a learner account and signs it in.
func (s *Server) signup(c echo.Context, email, name, password string) (*store.User, string, error) {
	if !s.cfg.PasswordLogin {
		return nil, "", errs.E(errs.Forbidden, errPasswordOff)
	}
	if !s.cfg.AllowSignup {
		if s.cfg.SSO() {
			return nil, "", errs.E(errs.Forbidden, "sign-up is closed on this server: sign in with single sign-on instead (the button on /login); your account is made at the first sign-in")
		}
		return nil, "", errs.E(errs.Forbidden, errSignupClosed)
	}
	email, err := ValidateEmail(email)
	if err != nil {
		return nil, "", errs.E(errs.Invalid, translate("errbademail", lang(c)))
	}
	name = strings.TrimSpace(name)
	if name == "" {
		name = strings.SplitN(email, "@", 2)[0]
	}
	if utf8.RuneCountInString(name) > 80 {
		return nil, "", errs.E(errs.Invalid, translate("errnamelong", lang(c)))
	}
	if err := ValidatePassword(password); err != nil {
		key := "errpwshort"
		if utf8.RuneCountInString(password) >= 8 {
			key = "errpwlong"
		}
		return nil, "", errs.E(errs.Invalid, translate(key, lang(c)))
	}
	if ok, err := s.limiter.allow(c.Request().Context(), signupKeys(clientIP(c))...); err != nil {
		return nil, "", err
	} else if !ok {
		return nil, "", errs.E(errs.TooMany, translate("errsignuprate", lang(c)))
	}
	hash, err := HashPassword(password)
	if err != nil {
		return nil, "", err
	}
	u, err := s.store.SignUp(c.Request().Context(), email, name, hash)
	if errors.Is(err, store.ErrEmailTaken) {
		return nil, "", errs.Reword(err, translate("erremailtaken", lang(c)))
	}
	if err != nil {
		return nil, "", err
	}
	token, err := s.startWebSession(c, u)
	return u, token, err
}

func (s *Server) logout(c echo.Context) {
	if ck, err := c.Cookie(sessionCookie); err == nil {
		_ = s.store.DeleteWebSession(c.Request().Context(), hashToken(ck.Value))
	}
	if h := c.Request().Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		_ = s.store.DeleteWebSession(c.Request().Context(), hashToken(strings.TrimPrefix(h, "Bearer ")))
	}
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secure(c)})
	// The browser's pre-session token goes too: a guest's identity is
	// drawn from it, and the next person at this computer is not them.
	c.SetCookie(&http.Cookie{Name: preSessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secure(c)})
}
