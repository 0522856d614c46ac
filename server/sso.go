package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"github.com/podpath/podpath/accounts"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/labstack/echo/v4"
	"golang.org/x/oauth2"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/store"
)

// Single sign-on with OpenID Connect: the authorization code flow with
// PKCE (S256), a state and a nonce, all three kept in the database under
// the hash of the state and bound to the browser by the ssoCookie; a
// state is taken (deleted) by the first callback that brings it. See
// docs/TEAMS.md and docs/SECURITY.md.

// ssoCookie binds a sign-in under way to the browser that started it.
const ssoCookie = "podpath_oidc"

// ssoLoginTTL is how long a sign-in may take at the provider.
const ssoLoginTTL = 10 * time.Minute

// ssoRetryAfter is how long a failed discovery is remembered before the
// next request tries again.
const ssoRetryAfter = 5 * time.Second

type ssoClient struct {
	cfg  *Config
	http *http.Client

	mu       sync.Mutex
	provider *oidc.Provider
	verifier *oidc.IDTokenVerifier
	lastErr  error
	lastTry  time.Time
}

func newSSOClient(cfg *Config) *ssoClient {
	return &ssoClient{cfg: cfg, http: &http.Client{Timeout: 15 * time.Second}}
}

// ctx makes go-oidc and oauth2 use the client with a timeout.
func (c *ssoClient) ctx(ctx context.Context) context.Context {
	return oidc.ClientContext(ctx, c.http)
}

// discover reads the provider's discovery document the first time it is
// needed, so that podpath starts while the provider is down; a failure is
// retried by a request at least ssoRetryAfter later.
func (c *ssoClient) discover(ctx context.Context) (*oidc.Provider, *oidc.IDTokenVerifier, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.provider != nil {
		return c.provider, c.verifier, nil
	}
	if c.lastErr != nil && time.Since(c.lastTry) < ssoRetryAfter {
		return nil, nil, c.lastErr
	}
	dctx, cancel := context.WithTimeout(c.ctx(ctx), 10*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(dctx, c.cfg.OIDCIssuer)
	c.lastTry = time.Now()
	if err != nil {
		c.lastErr = fmt.Errorf("read the discovery document of %s: %w (check PODPATH_OIDC_ISSUER and that the provider answers)", c.cfg.OIDCIssuer, err)
		return nil, nil, c.lastErr
	}
	c.provider, c.lastErr = p, nil
	c.verifier = p.Verifier(&oidc.Config{ClientID: c.cfg.OIDCClientID})
	return c.provider, c.verifier, nil
}

// unavailable is the last discovery failure, while there is no provider.
func (c *ssoClient) unavailable() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.provider != nil {
		return nil
	}
	return c.lastErr
}

func (c *ssoClient) oauth(p *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{
		ClientID: c.cfg.OIDCClientID, ClientSecret: c.cfg.OIDCClientSecret,
		Endpoint: p.Endpoint(), RedirectURL: c.cfg.OIDCRedirectURL(),
		Scopes: []string{oidc.ScopeOpenID, "email", "profile", "groups"},
	}
}

// ssoFail renders the error page for a refused sign-in, in the page's
// language, with a link to start again.
func (s *Server) ssoFail(c echo.Context, status int, key string, repl ...string) error {
	msg := strings.NewReplacer(repl...).Replace(translate(key, lang(c)))
	return s.pages.render(c, status, "error", s.pageData(c, map[string]any{"Status": status, "Message": msg, "Retry": "/login"}))
}

func (s *Server) ssoNotConfigured() error {
	return errs.E(errs.NotFound, "single sign-on is not configured on this server (PODPATH_OIDC_ISSUER); sign in with your password at /login")
}

// ssoLogin sends the browser to the provider.
func (s *Server) ssoLogin(c echo.Context) error {
	if s.sso == nil {
		return s.ssoNotConfigured()
	}
	ctx := c.Request().Context()
	p, _, err := s.sso.discover(ctx)
	if err != nil {
		s.log.Warn("single sign-on unavailable", "err", err)
		return s.renderLogin(c, http.StatusServiceUnavailable, map[string]any{"Error": translate("ssounavailable", lang(c))})
	}
	browser := ""
	if ck, err := c.Cookie(ssoCookie); err == nil && len(ck.Value) == 43 {
		browser = ck.Value // a sign-in in another tab goes on
	} else {
		browser = accounts.NewToken(32)
	}
	c.SetCookie(&http.Cookie{Name: ssoCookie, Value: browser, Path: "/auth/oidc/", MaxAge: int(ssoLoginTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secure(c)})
	state, nonce, verifier := accounts.NewToken(32), accounts.NewToken(32), oauth2.GenerateVerifier()
	if err := s.store.SaveOIDCLogin(ctx, accounts.HashToken(state), store.OIDCLogin{
		BrowserHash: accounts.HashToken(browser), Nonce: nonce, Verifier: verifier,
		Next: safeNext(c.QueryParam("next")), ExpiresAt: time.Now().Add(ssoLoginTTL),
	}); err != nil {
		return err
	}
	return c.Redirect(http.StatusFound, s.sso.oauth(p).AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)))
}

// ssoIdentity is what the provider says about the person.
type ssoIdentity struct {
	issuer, subject, email, name string
	verified                     bool
	groups                       []string
	groupsSent                   bool
}

// ssoCallback finishes the sign-in the provider sends back.
func (s *Server) ssoCallback(c echo.Context) error {
	if s.sso == nil {
		return s.ssoNotConfigured()
	}
	ctx := c.Request().Context()
	q := c.QueryParams()
	state := q.Get("state")
	if state == "" || len(state) > 200 {
		return s.ssoFail(c, http.StatusBadRequest, "ssobadstate")
	}
	// The state is taken at once: whatever happens next, it works once.
	login, err := s.store.TakeOIDCLogin(ctx, accounts.HashToken(state))
	if errors.Is(err, store.ErrNotFound) {
		return s.ssoFail(c, http.StatusBadRequest, "ssobadstate")
	}
	if err != nil {
		return err
	}
	ck, err := c.Cookie(ssoCookie)
	if err != nil || subtle.ConstantTimeCompare(accounts.HashToken(ck.Value), login.BrowserHash) != 1 {
		return s.ssoFail(c, http.StatusBadRequest, "ssobadstate")
	}
	if time.Now().After(login.ExpiresAt) {
		return s.ssoFail(c, http.StatusBadRequest, "ssoexpired")
	}
	if e := q.Get("error"); e != "" {
		why := e
		if d := q.Get("error_description"); d != "" {
			why += ": " + d
		}
		if len(why) > 300 {
			why = why[:300]
		}
		return s.ssoFail(c, http.StatusForbidden, "ssodenied", "{why}", strings.ToValidUTF8(why, ""))
	}
	code := q.Get("code")
	if code == "" {
		return s.ssoFail(c, http.StatusBadRequest, "ssobadstate")
	}
	p, verifier, err := s.sso.discover(ctx)
	if err != nil {
		s.log.Warn("single sign-on unavailable", "err", err)
		return s.ssoFail(c, http.StatusServiceUnavailable, "ssounavailable")
	}
	tok, err := s.sso.oauth(p).Exchange(s.sso.ctx(ctx), code, oauth2.VerifierOption(login.Verifier))
	if err != nil {
		s.log.Warn("single sign-on: the provider refused the code", "err", err)
		return s.ssoFail(c, http.StatusBadRequest, "ssocode")
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		s.log.Warn("single sign-on: the token response has no id_token; is the openid scope allowed for the client?")
		return s.ssoFail(c, http.StatusBadGateway, "ssoidtoken")
	}
	idt, err := verifier.Verify(s.sso.ctx(ctx), raw)
	if err != nil {
		s.log.Warn("single sign-on: the ID token does not verify", "err", err)
		return s.ssoFail(c, http.StatusBadGateway, "ssoidtoken")
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(login.Nonce)) != 1 {
		return s.ssoFail(c, http.StatusBadRequest, "ssobadstate")
	}
	id, err := s.ssoClaims(ctx, p, tok, idt)
	if err != nil {
		s.log.Warn("single sign-on: read the claims", "err", err)
		return s.ssoFail(c, http.StatusBadGateway, "ssoidtoken")
	}
	if id.email == "" {
		return s.ssoFail(c, http.StatusForbidden, "ssonoemail")
	}
	if !id.verified {
		return s.ssoFail(c, http.StatusForbidden, "ssounverified", "{email}", id.email)
	}
	if email, err := accounts.ValidateEmail(id.email); err != nil {
		return s.ssoFail(c, http.StatusForbidden, "ssonoemail")
	} else {
		id.email = email
	}
	if d := s.cfg.OIDCAllowedDomains; len(d) > 0 && !slices.Contains(d, store.EmailDomain(id.email)) {
		return s.ssoFail(c, http.StatusForbidden, "ssodomain", "{email}", id.email, "{domains}", strings.Join(d, ", "))
	}
	u, err := s.ssoAccount(ctx, id)
	if errors.Is(err, errSSOGuest) {
		return s.ssoFail(c, http.StatusForbidden, "ssoguest")
	}
	if err != nil {
		return err
	}
	if err := s.ssoTeams(ctx, u, id); err != nil {
		return err
	}
	if _, err := s.startWebSession(c, u); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, safeNext(login.Next))
}

// ssoClaims reads the identity from the ID token, and from userinfo when
// the ID token has no e-mail.
func (s *Server) ssoClaims(ctx context.Context, p *oidc.Provider, tok *oauth2.Token, idt *oidc.IDToken) (*ssoIdentity, error) {
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return nil, err
	}
	// Some providers put the e-mail, or the groups, in userinfo only.
	if noEmail := str(claims["email"]) == ""; noEmail || claims[s.cfg.OIDCGroupsClaim] == nil {
		more, err := s.userInfo(ctx, p, tok, idt)
		if err != nil && noEmail {
			return nil, fmt.Errorf("the ID token has no email and userinfo failed: %w", err)
		}
		if err != nil {
			s.log.Warn("single sign-on: userinfo (read for the groups claim)", "err", err)
		}
		for k, v := range more {
			if _, ok := claims[k]; !ok {
				claims[k] = v
			}
		}
	}
	id := &ssoIdentity{issuer: idt.Issuer, subject: idt.Subject, email: strings.TrimSpace(str(claims["email"]))}
	switch v := claims["email_verified"].(type) {
	case bool:
		id.verified = v
	case string: // some providers send "true"
		id.verified = v == "true"
	}
	id.name = strings.TrimSpace(str(claims["name"]))
	if id.name == "" {
		id.name = strings.TrimSpace(str(claims["preferred_username"]))
	}
	if id.name == "" {
		id.name, _, _ = strings.Cut(id.email, "@")
	}
	if utf8.RuneCountInString(id.name) > 80 {
		id.name = string([]rune(id.name)[:80])
	}
	switch g := claims[s.cfg.OIDCGroupsClaim].(type) {
	case []any:
		id.groupsSent = true
		for _, v := range g {
			if v := str(v); v != "" {
				id.groups = append(id.groups, v)
			}
		}
	case string:
		id.groupsSent = true
		for _, v := range strings.FieldsFunc(g, func(r rune) bool { return r == ',' || r == ' ' }) {
			id.groups = append(id.groups, v)
		}
	case nil:
	default:
		return nil, fmt.Errorf("the %q claim is neither a list of strings nor a string (PODPATH_OIDC_GROUPS_CLAIM)", s.cfg.OIDCGroupsClaim)
	}
	return id, nil
}

// userInfo reads the provider's userinfo claims about the ID token's subject.
func (s *Server) userInfo(ctx context.Context, p *oidc.Provider, tok *oauth2.Token, idt *oidc.IDToken) (map[string]any, error) {
	info, err := p.UserInfo(s.sso.ctx(ctx), oauth2.StaticTokenSource(tok))
	if err != nil {
		return nil, err
	}
	if info.Subject != idt.Subject {
		return nil, errors.New("userinfo is about another subject than the ID token")
	}
	var more map[string]any
	if err := info.Claims(&more); err != nil {
		return nil, err
	}
	return more, nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

var errSSOGuest = errors.New("the e-mail belongs to a workshop guest")

// ssoAccount finds the account of the identity: by issuer and subject;
// else the account with the same (verified) e-mail, which gets the
// identity; else a new learner account without a password.
func (s *Server) ssoAccount(ctx context.Context, id *ssoIdentity) (*store.User, error) {
	for range 2 { // twice: a concurrent first sign-in may win the race
		u, err := s.store.UserByIdentity(ctx, id.issuer, id.subject)
		if err == nil {
			return u, s.store.LinkIdentity(ctx, u.ID, id.issuer, id.subject, id.email)
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		u, err = s.store.UserByEmail(ctx, id.email)
		if err == nil {
			if u.GuestWorkshop != 0 {
				return nil, errSSOGuest
			}
			s.log.Info("single sign-on: linked an identity to an account by its e-mail", "user", u.ID, "issuer", id.issuer, "subject", id.subject)
			if err := s.store.LinkIdentity(ctx, u.ID, id.issuer, id.subject, id.email); err != nil {
				return nil, err
			}
			if u.Origin == store.OriginSignup && u.PasswordHash != "" {
				// Whoever signed up with the address (with sign-up open,
				// now or ever) was never checked to own it; the provider
				// did check. The password and every sign-in of it go, so
				// whoever set them cannot follow the owner in. An admin's
				// account keeps its password.
				if err := s.store.DropPassword(ctx, u.ID); err != nil {
					return nil, err
				}
				s.log.Warn("single sign-on: an account made by sign-up with this e-mail lost its password on linking", "user", u.ID)
				u.PasswordHash = ""
			}
			return u, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		u, err = s.store.CreateSSOUser(ctx, id.email, id.name, id.issuer, id.subject)
		if errors.Is(err, store.ErrEmailTaken) || errors.Is(err, store.ErrIdentityTaken) {
			continue
		}
		if err == nil {
			s.log.Info("single sign-on: made an account", "user", u.ID, "issuer", id.issuer, "subject", id.subject)
		}
		return u, err
	}
	return nil, errors.New("single sign-on: the account was created and changed concurrently; sign in again")
}

// ssoTeams makes the memberships follow the groups claim: the user joins
// every team mapped to one of the groups, and leaves the teams that single
// sign-on made them join whose group they no longer have. Memberships an
// admin or invite made are kept. When the provider sends no groups claim
// at all, memberships are left alone (a provider not set up to send it
// should not empty every team).
func (s *Server) ssoTeams(ctx context.Context, u *store.User, id *ssoIdentity) error {
	if !id.groupsSent {
		return nil
	}
	teams, err := s.store.TeamsBySSOGroups(ctx, id.groups)
	if err != nil {
		return err
	}
	keep := make([]int64, 0, len(teams))
	for _, t := range teams {
		if err := s.store.AddTeamMember(ctx, t.ID, u.ID, store.TeamMember, store.ViaSSO); err != nil {
			return err
		}
		keep = append(keep, t.ID)
	}
	_, err = s.store.DropSSOMemberships(ctx, u.ID, keep)
	return err
}

// apiMyTeams lists the user's teams with the role in each, and what they
// assigned.
func (s *Server) apiMyTeams(c echo.Context) error {
	ctx := c.Request().Context()
	u := currentUser(c)
	teams, roles, err := s.store.UserTeams(ctx, u.ID)
	if err != nil {
		return err
	}
	as, err := s.myAssignments(c, u)
	if err != nil {
		return err
	}
	out := struct {
		Teams       []TeamListItem  `json:"teams"`
		Assignments []*MyAssignment `json:"assignments"`
	}{Teams: []TeamListItem{}, Assignments: as}
	for i, t := range teams {
		out.Teams = append(out.Teams, teamListItem(t, roles[i]))
	}
	return c.JSON(http.StatusOK, out)
}
