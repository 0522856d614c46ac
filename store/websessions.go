package store

import (
	"context"
	"time"
)

// WebSession is a signed-in browser (or API client).
type WebSession struct {
	TokenHash []byte
	UserID    int64
	CSRFToken string
	ExpiresAt time.Time
	User      *User
}

// CreateWebSession stores a new sign-in. Only the token's hash is kept.
func (s *Store) CreateWebSession(ctx context.Context, tokenHash []byte, userID int64, csrf string, expires time.Time) error {
	_, err := s.db(ctx).Exec(ctx,
		`INSERT INTO web_sessions (token_hash, user_id, csrf_token, expires_at) VALUES ($1, $2, $3, $4)`,
		tokenHash, userID, csrf, expires)
	return err
}

// WebSessionByToken finds an unexpired session and its user, and notes the
// visit.
func (s *Store) WebSessionByToken(ctx context.Context, tokenHash []byte) (*WebSession, error) {
	var ws WebSession
	row := s.db(ctx).QueryRow(ctx, `
		UPDATE web_sessions SET last_seen_at = now()
		WHERE token_hash = $1 AND expires_at > now()
		RETURNING token_hash, user_id, csrf_token, expires_at`, tokenHash)
	if err := row.Scan(&ws.TokenHash, &ws.UserID, &ws.CSRFToken, &ws.ExpiresAt); err != nil {
		return nil, notFound(err)
	}
	u, err := s.UserByID(ctx, ws.UserID)
	if err != nil {
		return nil, err
	}
	ws.User = u
	return &ws, nil
}

// DeleteWebSession signs a session out.
func (s *Store) DeleteWebSession(ctx context.Context, tokenHash []byte) error {
	_, err := s.db(ctx).Exec(ctx, `DELETE FROM web_sessions WHERE token_hash = $1`, tokenHash)
	return err
}

// DeleteExpiredWebSessions removes sessions past their expiry.
func (s *Store) DeleteExpiredWebSessions(ctx context.Context) (int64, error) {
	tag, err := s.db(ctx).Exec(ctx, `DELETE FROM web_sessions WHERE expires_at <= now()`)
	return tag.RowsAffected(), err
}
