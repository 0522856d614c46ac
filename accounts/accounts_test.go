package accounts_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/podpath/podpath/accounts"
	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/limits"
	"github.com/podpath/podpath/store"
)

// newAccounts is Accounts on a fresh database (real Postgres).
func newAccounts(t *testing.T, a accounts.Accounts) (*accounts.Accounts, *store.Store) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	a.Store, a.Limits = st, limits.New(st)
	if a.SessionTTL == 0 {
		a.SessionTTL = time.Hour
	}
	acc, err := accounts.New(a)
	if err != nil {
		t.Fatal(err)
	}
	return acc, st
}

func wantKind(t *testing.T, what string, err error, kind errs.Kind, key string) {
	t.Helper()
	e, ok := errs.As(err)
	if !ok || e.Kind != kind || e.Key != key {
		t.Fatalf("%s: %v (%#v); want kind %v key %q", what, err, e, kind, key)
	}
}

func TestSignUpAndLogin(t *testing.T) {
	ctx := context.Background()
	a, st := newAccounts(t, accounts.Accounts{PasswordLogin: true, AllowSignup: true})
	u, s, err := a.SignUp(ctx, "192.0.2.1", "  ada@example.com ", "", "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if u.Email != "ada@example.com" || u.Name != "ada" || u.Role != store.RoleLearner {
		t.Errorf("signed up as %+v; want ada@example.com, named ada, a learner", u)
	}
	ws, err := st.WebSessionByToken(ctx, accounts.HashToken(s.Token))
	if err != nil || ws.UserID != u.ID || ws.CSRFToken == "" {
		t.Fatalf("the sign-up's session: %+v, %v", ws, err)
	}
	if _, _, err := a.SignUp(ctx, "192.0.2.1", "ada@example.com", "Ada", "another password"); !errors.Is(err, store.ErrEmailTaken) {
		t.Fatalf("signing up twice: %v; want ErrEmailTaken", err)
	} else {
		wantKind(t, "signing up twice", err, errs.Conflict, "erremailtaken")
	}
	got, s2, err := a.Login(ctx, "192.0.2.2", "ada@example.com", "correct horse")
	if err != nil || got.ID != u.ID || s2.Token == s.Token {
		t.Fatalf("login: %+v %v; want ada, a new token", got, err)
	}
	if err := a.Close(ctx, s2.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := st.WebSessionByToken(ctx, accounts.HashToken(s2.Token)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a closed session is still found: %v", err)
	}
}

// A wrong password, an unknown email and an account without a password
// (made by single sign-on) get one answer, so none tells which emails
// have accounts.
func TestLoginOneAnswer(t *testing.T) {
	ctx := context.Background()
	a, st := newAccounts(t, accounts.Accounts{PasswordLogin: true})
	hash, _ := accounts.HashPassword("correct horse")
	if _, err := st.CreateUser(ctx, "ada@example.com", "Ada", hash, store.RoleLearner); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateUser(ctx, "sso@example.com", "Lin", "", store.RoleLearner); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ email, pw string }{
		{"ada@example.com", "wrong horse"},
		{"nobody@example.com", "correct horse"},
		{"sso@example.com", "anything at all"},
		{"sso@example.com", ""},
	} {
		_, s, err := a.Login(ctx, "192.0.2.1", c.email, c.pw)
		if err != accounts.ErrBadLogin || s != nil {
			t.Errorf("login %s / %q: %v, session %v; want ErrBadLogin and none", c.email, c.pw, err, s)
		}
	}
}

func TestSignUpRefusals(t *testing.T) {
	ctx := context.Background()
	a, _ := newAccounts(t, accounts.Accounts{PasswordLogin: true, AllowSignup: true})
	cases := []struct {
		email, name, pw string
		key             string
	}{
		{"not an email", "", "correct horse", "errbademail"},
		{"ada@example.com", strings.Repeat("名", 81), "correct horse", "errnamelong"},
		{"ada@example.com", "", "short", "errpwshort"},
		{"ada@example.com", "", strings.Repeat("密", 25), "errpwlong"}, // 25 runes, 75 bytes
	}
	for _, c := range cases {
		_, _, err := a.SignUp(ctx, "192.0.2.1", c.email, c.name, c.pw)
		wantKind(t, c.key, err, errs.Invalid, c.key)
	}
	closed, _ := newAccounts(t, accounts.Accounts{PasswordLogin: true})
	if _, _, err := closed.SignUp(ctx, "192.0.2.1", "ada@example.com", "", "correct horse"); errs.KindOf(err) != errs.Forbidden || err.Error() != accounts.ErrSignupClosed {
		t.Errorf("sign-up when closed: %v", err)
	}
	off, _ := newAccounts(t, accounts.Accounts{AllowSignup: true})
	if _, _, err := off.Login(ctx, "192.0.2.1", "ada@example.com", "correct horse"); errs.KindOf(err) != errs.Forbidden || err.Error() != accounts.ErrPasswordOff {
		t.Errorf("login with passwords off: %v", err)
	}
}

// Sign-ups from one address stop at the limit (10 a minute), and a
// refused one makes no account.
func TestSignUpLimited(t *testing.T) {
	ctx := context.Background()
	a, st := newAccounts(t, accounts.Accounts{PasswordLogin: true, AllowSignup: true})
	var refused error
	made := 0
	for i := 0; i < 12; i++ {
		_, _, err := a.SignUp(ctx, "198.51.100.7", "u"+string(rune('a'+i))+"@example.com", "", "correct horse")
		if err != nil {
			refused = err
			break
		}
		made++
	}
	if made != 10 {
		t.Fatalf("%d sign-ups from one address before a refusal (%v); want 10", made, refused)
	}
	wantKind(t, "the 11th sign-up", refused, errs.TooMany, "errsignuprate")
	if _, err := st.UserByEmail(ctx, "uk@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused sign-up made an account: %v", err)
	}
	if _, _, err := a.SignUp(ctx, "198.51.100.8", "other@example.com", "", "correct horse"); err != nil {
		t.Errorf("a sign-up from another address: %v", err)
	}
}
