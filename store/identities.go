package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/podpath/podpath/internal/errs"
)

// UserByIdentity finds the account signed in as subject at an OpenID
// provider's issuer.
func (s *Store) UserByIdentity(ctx context.Context, issuer, subject string) (*User, error) {
	return scanUser(s.db(ctx).QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE id = (
		SELECT user_id FROM user_identities WHERE issuer = $1 AND subject = $2)`, issuer, subject))
}

// LinkIdentity records that subject at issuer is the user (or, when it
// is already, the e-mail the provider gave and the time of the sign-in).
// An identity is never moved to another account.
func (s *Store) LinkIdentity(ctx context.Context, userID int64, issuer, subject, email string) error {
	tag, err := s.db(ctx).Exec(ctx, `INSERT INTO user_identities (issuer, subject, user_id, email) VALUES ($1, $2, $3, $4)
		ON CONFLICT (issuer, subject) DO UPDATE SET email = excluded.email, last_login_at = now()
		WHERE user_identities.user_id = excluded.user_id`, issuer, subject, userID, email)
	if err == nil && tag.RowsAffected() == 0 {
		return errors.New("link identity: this identity belongs to another account")
	}
	return wrap("link identity", err)
}

// CreateSSOUser makes a learner account that has no password (it signs in
// through its identity only) together with that identity.
func (s *Store) CreateSSOUser(ctx context.Context, email, name, issuer, subject string) (*User, error) {
	var u *User
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		u, err = scanUser(tx.QueryRow(ctx, `INSERT INTO users (email, name, password_hash, role, origin) VALUES ($1, $2, '', 'learner', 'sso') RETURNING `+userColumns, email, name))
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO user_identities (issuer, subject, user_id, email) VALUES ($1, $2, $3, $4)`, issuer, subject, u.ID, email)
		return err
	})
	if isUniqueViolation(err, "users_email_key") {
		return nil, ErrEmailTaken
	}
	if isUniqueViolation(err, "user_identities_pkey") {
		return nil, ErrIdentityTaken
	}
	return u, wrap("create sso user", err)
}

// ErrIdentityTaken means the identity was linked meanwhile (a concurrent
// first sign-in).
var ErrIdentityTaken error = errs.E(errs.Conflict, "this identity is linked to an account already")

// OIDCLogin is a sign-in under way at an OpenID provider.
type OIDCLogin struct {
	BrowserHash []byte
	Nonce       string
	Verifier    string
	Next        string
	ExpiresAt   time.Time
}

// SaveOIDCLogin keeps a sign-in under way until its callback, and drops
// those that expired.
func (s *Store) SaveOIDCLogin(ctx context.Context, stateHash []byte, l OIDCLogin) error {
	if _, err := s.db(ctx).Exec(ctx, `DELETE FROM oidc_logins WHERE expires_at < now()`); err != nil {
		return wrap("save sign-in", err)
	}
	_, err := s.db(ctx).Exec(ctx, `INSERT INTO oidc_logins (state_hash, browser_hash, nonce, verifier, next, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		stateHash, l.BrowserHash, l.Nonce, l.Verifier, l.Next, l.ExpiresAt)
	return wrap("save sign-in", err)
}

// TakeOIDCLogin returns the sign-in of the state and deletes it, so a
// state is good once: ErrNotFound when there is none (unknown, used, or
// cleaned up after expiry). The caller checks ExpiresAt and the browser.
func (s *Store) TakeOIDCLogin(ctx context.Context, stateHash []byte) (*OIDCLogin, error) {
	var l OIDCLogin
	err := s.db(ctx).QueryRow(ctx, `DELETE FROM oidc_logins WHERE state_hash = $1 RETURNING browser_hash, nonce, verifier, next, expires_at`, stateHash).
		Scan(&l.BrowserHash, &l.Nonce, &l.Verifier, &l.Next, &l.ExpiresAt)
	if err != nil {
		return nil, notFound(err)
	}
	return &l, nil
}

// DropSSOMemberships takes the user out of the teams single sign-on put
// them in, except keep. Memberships an admin or an invite made stay.
func (s *Store) DropSSOMemberships(ctx context.Context, userID int64, keep []int64) (int, error) {
	if keep == nil {
		keep = []int64{}
	}
	tag, err := s.db(ctx).Exec(ctx, `DELETE FROM team_members WHERE user_id = $1 AND via = 'sso' AND NOT (team_id = ANY($2))`, userID, keep)
	return int(tag.RowsAffected()), wrap("drop sso memberships", err)
}

// DropPassword takes an account's password away and ends every sign-in of
// it: single sign-on does this when it links an identity to an account
// anyone could have made by signing up with that e-mail.
func (s *Store) DropPassword(ctx context.Context, userID int64) error {
	return wrap("drop password", s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE users SET password_hash = '' WHERE id = $1`, userID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM web_sessions WHERE user_id = $1`, userID)
		return err
	}))
}
