// Package accounts is who may use podpath and how they prove it: passwords
// (their rules and hashes), sign-up, sign-in by password, and the web
// sessions a sign-in opens. It knows no HTTP: the server reads the request
// and sets the cookie; what is refused comes back as an errs kind with a
// catalog key, which the server says in the asker's language. Guests are
// made by a workshop's join (package workshops); single sign-on's protocol
// is the server's (server/sso.go), and it opens its session here.
package accounts

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/limits"
	"github.com/podpath/podpath/store"
)

// Accounts signs people up and in against one store.
type Accounts struct {
	Store  *store.Store
	Limits *limits.Limiter
	// PasswordLogin allows sign-in and sign-up by password; AllowSignup
	// lets anyone make an account; SSO says single sign-on is set up (a
	// closed sign-up then points there).
	PasswordLogin, AllowSignup, SSO bool
	// SessionTTL is how long a sign-in lasts.
	SessionTTL time.Duration

	// dummyHash is checked against when no account matches, so that a
	// wrong email takes as long as a wrong password.
	dummyHash []byte
}

// New is Accounts with its timing-equaliser hash made.
func New(a Accounts) (*Accounts, error) {
	h, err := bcrypt.GenerateFromPassword([]byte("podpath timing equaliser"), bcrypt.DefaultCost)
	if err != nil {
		return nil, err
	}
	a.dummyHash = h
	return &a, nil
}

// A Session is a sign-in: the token the browser or client holds (the
// database keeps its hash only) and when it ends.
type Session struct {
	Token   string
	Expires time.Time
}

// ErrSignupClosed tells someone how to get an account when sign-up is closed.
const ErrSignupClosed = "sign-up is closed on this server: ask its admin for an account"

// ErrPasswordOff answers a password sign-in or sign-up when
// PODPATH_PASSWORD_LOGIN=false.
const ErrPasswordOff = "password sign-in is turned off on this server: sign in with single sign-on (the button on /login, or GET /auth/oidc/login)"

// ErrBadLogin is the one answer to a wrong email or password.
var ErrBadLogin = errs.E(errs.Unauthenticated, "wrong email or password")

// Login checks an email and password typed from the address ip and, when
// they match an account with a password, opens a session for it. Every
// mismatch gets the same answer in the same time.
func (a *Accounts) Login(ctx context.Context, ip, email, password string) (*store.User, *Session, error) {
	if !a.PasswordLogin {
		return nil, nil, errs.E(errs.Forbidden, ErrPasswordOff)
	}
	email = strings.TrimSpace(email)
	if ok, err := a.Limits.Allow(ctx, limits.LoginKeys(ip, email)...); err != nil {
		return nil, nil, err
	} else if !ok {
		return nil, nil, errs.Keyed(errs.TooMany, "errloginrate", "too many sign-in attempts; wait a minute and try again")
	}
	u, err := a.Store.UserByEmail(ctx, email)
	if errors.Is(err, store.ErrNotFound) {
		_ = bcrypt.CompareHashAndPassword(a.dummyHash, []byte(password))
		return nil, nil, ErrBadLogin
	}
	if err != nil {
		return nil, nil, err
	}
	if u.PasswordHash == "" {
		// An account made by single sign-on has no password: it signs in
		// there only. Same time, same answer as a wrong password.
		_ = bcrypt.CompareHashAndPassword(a.dummyHash, []byte(password))
		return nil, nil, ErrBadLogin
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil {
		return nil, nil, ErrBadLogin
	}
	s, err := a.Open(ctx, u)
	return u, s, err
}

// SignUp makes a learner account from the address ip and opens a session
// for it. An empty name is the email's local part.
func (a *Accounts) SignUp(ctx context.Context, ip, email, name, password string) (*store.User, *Session, error) {
	if !a.PasswordLogin {
		return nil, nil, errs.E(errs.Forbidden, ErrPasswordOff)
	}
	if !a.AllowSignup {
		if a.SSO {
			return nil, nil, errs.E(errs.Forbidden, "sign-up is closed on this server: sign in with single sign-on instead (the button on /login); your account is made at the first sign-in")
		}
		return nil, nil, errs.E(errs.Forbidden, ErrSignupClosed)
	}
	email, err := ValidateEmail(email)
	if err != nil {
		return nil, nil, err
	}
	name = strings.TrimSpace(name)
	if name == "" {
		name = strings.SplitN(email, "@", 2)[0]
	}
	if utf8.RuneCountInString(name) > 80 {
		return nil, nil, errs.Keyed(errs.Invalid, "errnamelong", "the name can have at most 80 characters")
	}
	if err := ValidatePassword(password); err != nil {
		return nil, nil, err
	}
	if ok, err := a.Limits.Allow(ctx, limits.SignupKeys(ip)...); err != nil {
		return nil, nil, err
	} else if !ok {
		return nil, nil, errs.Keyed(errs.TooMany, "errsignuprate", "too many sign-ups from here; wait a minute and try again")
	}
	hash, err := HashPassword(password)
	if err != nil {
		return nil, nil, err
	}
	u, err := a.Store.SignUp(ctx, email, name, hash)
	if errors.Is(err, store.ErrEmailTaken) {
		e := errs.Keyed(errs.Conflict, "erremailtaken", "an account with this email exists: sign in instead")
		e.Err = err
		return nil, nil, e
	}
	if err != nil {
		return nil, nil, err
	}
	s, err := a.Open(ctx, u)
	return u, s, err
}

// Open signs u in: a new session with a random token and its own CSRF
// token, lasting SessionTTL. Whoever proved who u is (a password, single
// sign-on, a workshop's join) calls it.
func (a *Accounts) Open(ctx context.Context, u *store.User) (*Session, error) {
	s := &Session{Token: NewToken(32), Expires: time.Now().Add(a.SessionTTL)}
	if err := a.Store.CreateWebSession(ctx, HashToken(s.Token), u.ID, NewToken(24), s.Expires); err != nil {
		return nil, err
	}
	_ = a.Store.TouchLogin(ctx, u.ID)
	return s, nil
}

// Close ends the session whose token is token, if there is one.
func (a *Accounts) Close(ctx context.Context, token string) error {
	return a.Store.DeleteWebSession(ctx, HashToken(token))
}

// HashPassword hashes a password with bcrypt.
func HashPassword(pw string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)
	return string(h), err
}

// ValidatePassword says what is wrong with a new password (at least 8
// characters, at most 72 bytes: what bcrypt reads).
func ValidatePassword(pw string) error {
	switch n := utf8.RuneCountInString(pw); {
	case n < 8:
		return errs.Keyed(errs.Invalid, "errpwshort", "the password needs at least 8 characters")
	case len(pw) > 72:
		return errs.Keyed(errs.Invalid, "errpwlong", "the password can have at most 72 bytes")
	}
	return nil
}

// ValidateEmail normalises an email address or says what is wrong with it.
func ValidateEmail(email string) (string, error) {
	email = strings.TrimSpace(email)
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email || !strings.Contains(email, "@") || len(email) > 254 {
		return "", errs.Keyed(errs.Invalid, "errbademail", "enter an email address like ada@example.com")
	}
	return email, nil
}

// NewToken is n random bytes, base64url: a session token, a CSRF token,
// an OpenID state.
func NewToken(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// HashToken is what the database keeps of a token.
func HashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}
