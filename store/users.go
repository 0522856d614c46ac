package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/podpath/podpath/internal/errs"
)

// Roles a user can have.
const (
	RoleLearner    = "learner"
	RoleInstructor = "instructor"
	RoleAdmin      = "admin"
)

// User is an account.
type User struct {
	ID           int64
	Email        string
	Name         string
	PasswordHash string
	Role         string
	CreatedAt    time.Time
	LastLoginAt  *time.Time
	// GuestWorkshop is the workshop a guest joined without an account (0
	// for accounts): a guest signs in with its cookie only, and reaches
	// that workshop's labs only.
	GuestWorkshop int64
	// Origin is who made the account: OriginSignup, OriginAdmin,
	// OriginSSO or OriginGuest.
	Origin string
}

// Who made an account.
const (
	OriginSignup = "signup" // the learner, by signing up: nobody verified the address
	OriginAdmin  = "admin"  // an admin
	OriginSSO    = "sso"    // a first single sign-on
	OriginGuest  = "guest"  // joining a workshop as a guest
)

// ErrEmailTaken is returned when an account with the email exists.
var ErrEmailTaken error = errs.E(errs.Conflict, "an account with this email exists")

const userColumns = "id, email, name, password_hash, role, created_at, last_login_at, coalesce(guest_workshop_id, 0), origin"

func scanUser(row interface{ Scan(...any) error }) (*User, error) {
	var u User
	if err := row.Scan(&u.ID, &u.Email, &u.Name, &u.PasswordHash, &u.Role, &u.CreatedAt, &u.LastLoginAt, &u.GuestWorkshop, &u.Origin); err != nil {
		return nil, notFound(err)
	}
	return &u, nil
}

// CreateUser adds an account an admin made.
func (s *Store) CreateUser(ctx context.Context, email, name, passwordHash, role string) (*User, error) {
	return s.createUser(ctx, email, name, passwordHash, role, OriginAdmin)
}

// SignUp adds the account a learner made by signing up.
func (s *Store) SignUp(ctx context.Context, email, name, passwordHash string) (*User, error) {
	return s.createUser(ctx, email, name, passwordHash, RoleLearner, OriginSignup)
}

func (s *Store) createUser(ctx context.Context, email, name, passwordHash, role, origin string) (*User, error) {
	u, err := scanUser(s.db(ctx).QueryRow(ctx,
		`INSERT INTO users (email, name, password_hash, role, origin) VALUES ($1, $2, $3, $4, $5) RETURNING `+userColumns,
		email, name, passwordHash, role, origin))
	if isUniqueViolation(err, "users_email_key") {
		return nil, ErrEmailTaken
	}
	return u, err
}

// CreateFirstAdmin adds an admin account unless the database has an admin
// already; then it creates nothing and returns the oldest admin with
// created false. Concurrent calls make one admin at most.
func (s *Store) CreateFirstAdmin(ctx context.Context, email, name, passwordHash string) (u *User, created bool, err error) {
	err = s.tx(ctx, func(tx pgx.Tx) error {
		// One first admin at a time: the check and the insert are one step.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('podpath first admin'))`); err != nil {
			return err
		}
		u, err = scanUser(tx.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE role = 'admin' ORDER BY id LIMIT 1`))
		if err == nil || !errors.Is(err, ErrNotFound) {
			return err
		}
		u, err = scanUser(tx.QueryRow(ctx,
			`INSERT INTO users (email, name, password_hash, role) VALUES ($1, $2, $3, 'admin') RETURNING `+userColumns,
			email, name, passwordHash))
		created = err == nil
		return err
	})
	if isUniqueViolation(err, "users_email_key") {
		return nil, false, ErrEmailTaken
	}
	return u, created, err
}

// UserByEmail finds an account by email, ignoring case.
func (s *Store) UserByEmail(ctx context.Context, email string) (*User, error) {
	return scanUser(s.db(ctx).QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE lower(email) = lower($1)`, email))
}

// UserByID finds an account.
func (s *Store) UserByID(ctx context.Context, id int64) (*User, error) {
	return scanUser(s.db(ctx).QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE id = $1`, id))
}

// SetUserRole changes an account's role.
func (s *Store) SetUserRole(ctx context.Context, id int64, role string) error {
	tag, err := s.db(ctx).Exec(ctx, `UPDATE users SET role = $2 WHERE id = $1`, id, role)
	if err == nil && tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return err
}

// TouchLogin records a successful sign-in.
func (s *Store) TouchLogin(ctx context.Context, id int64) error {
	_, err := s.db(ctx).Exec(ctx, `UPDATE users SET last_login_at = now() WHERE id = $1`, id)
	return err
}
