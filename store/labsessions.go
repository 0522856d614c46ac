package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/podpath/podpath/internal/errs"
)

// Lab session states.
const (
	SessionActive = "active"
	SessionEnded  = "ended"
)

// Modes a lab session may be taken in, chosen at Start.
const (
	// ModeGuided shows every command with a button that runs it.
	ModeGuided = "guided"
	// ModeChallenge hides commands behind "show me" and has no run buttons.
	ModeChallenge = "challenge"
)

// Modes lists the modes, the default first.
var Modes = []string{ModeGuided, ModeChallenge}

// LabSession is one learner working through one lab on one sandbox.
type LabSession struct {
	ID             uuid.UUID
	UserID         int64
	LabID          string
	Mode           string
	WorkshopID     *int64
	State          string
	CreatedAt      time.Time
	LastActivityAt time.Time
	ExpiresAt      time.Time
	IdleTimeout    int
	Extensions     int
	EndedAt        *time.Time
	EndReason      *string
	// Values are the lab's values drawn for this session (labs.Value).
	Values map[string]string
}

// IdleDeadline is when the session ends if nothing happens before, under
// the server's idle timeout (which applies to running sessions too, so an
// operator's change takes effect at once).
func (l *LabSession) IdleDeadline(idle time.Duration) time.Time {
	if l.WorkshopID != nil {
		return l.ExpiresAt // a workshop's session does not end on idle
	}
	return l.LastActivityAt.Add(idle)
}

// Deadline is the earlier of the idle deadline and the hard lifetime.
func (l *LabSession) Deadline(idle time.Duration) time.Time {
	if d := l.IdleDeadline(idle); d.Before(l.ExpiresAt) {
		return d
	}
	return l.ExpiresAt
}

// ErrActiveSession is returned when the learner already has an active session.
var ErrActiveSession error = errs.E(errs.Conflict, "the learner already has an active lab session")

const labSessionColumns = "id, user_id, lab_id, mode, workshop_id, state, created_at, last_activity_at, expires_at, idle_timeout_seconds, extensions, ended_at, end_reason, lab_values"

func scanLabSession(row interface{ Scan(...any) error }) (*LabSession, error) {
	var l LabSession
	err := row.Scan(&l.ID, &l.UserID, &l.LabID, &l.Mode, &l.WorkshopID, &l.State, &l.CreatedAt, &l.LastActivityAt,
		&l.ExpiresAt, &l.IdleTimeout, &l.Extensions, &l.EndedAt, &l.EndReason, &l.Values)
	if err != nil {
		return nil, notFound(err)
	}
	return &l, nil
}

// NewLabSession describes a session to start.
type NewLabSession struct {
	ID     uuid.UUID
	UserID int64
	LabID  string
	// Mode is ModeGuided (when empty) or ModeChallenge.
	Mode        string
	Lifetime    time.Duration
	IdleTimeout time.Duration
	// Sandbox is the cluster to make for it.
	SandboxName string
	Image       string
	Workers     int
	// WorkerMilliCPU and WorkerMemoryMiB are the lab's worker size (0:
	// the backend's default).
	WorkerMilliCPU, WorkerMemoryMiB int64
	// Values are the lab's values drawn for the session.
	Values map[string]string
	// WorkshopID is the workshop the session is part of (0: none).
	WorkshopID int64
	// Claim, if set, names a warm-pool sandbox the session takes instead
	// of a new one (SandboxName is then ignored).
	Claim string
}

// CreateLabSession stores a new active session and its requested sandbox in
// one transaction. It fails with ErrActiveSession if the learner has one.
func (s *Store) CreateLabSession(ctx context.Context, n NewLabSession) (*LabSession, error) {
	values := n.Values
	if values == nil {
		values = map[string]string{}
	}
	mode := n.Mode
	if mode == "" {
		mode = ModeGuided
	}
	var l *LabSession
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		l, err = scanLabSession(tx.QueryRow(ctx, `
			INSERT INTO lab_sessions (id, user_id, lab_id, mode, state, expires_at, idle_timeout_seconds, lab_values, workshop_id)
			VALUES ($1, $2, $3, $4, 'active', now() + $5::interval, $6, $7, nullif($8, 0))
			RETURNING `+labSessionColumns,
			n.ID, n.UserID, n.LabID, mode, n.Lifetime.String(), int(n.IdleTimeout.Seconds()), values, n.WorkshopID))
		if err != nil {
			return err
		}
		if n.Claim != "" {
			tag, err := tx.Exec(ctx, `UPDATE sandboxes SET lab_session_id = $2, claimed_at = now(), updated_at = now()
				WHERE name = $1 AND pool AND lab_session_id IS NULL AND state <> 'deleted'`, n.Claim, l.ID)
			if err == nil && tag.RowsAffected() != 1 {
				err = fmt.Errorf("pool sandbox %s is taken or gone: %w", n.Claim, ErrNotFound)
			}
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO sandboxes (name, lab_session_id, state, image, workers, worker_milli_cpu, worker_memory_mib) VALUES ($1, $2, 'requested', $3, $4, $5, $6)`,
			n.SandboxName, l.ID, n.Image, n.Workers, n.WorkerMilliCPU, n.WorkerMemoryMiB)
		return err
	})
	if isUniqueViolation(err, "lab_sessions_one_active") {
		return nil, ErrActiveSession
	}
	return l, wrap("start lab session", err)
}

// LabSession finds a session by id.
func (s *Store) LabSession(ctx context.Context, id uuid.UUID) (*LabSession, error) {
	return scanLabSession(s.db(ctx).QueryRow(ctx, `SELECT `+labSessionColumns+` FROM lab_sessions WHERE id = $1`, id))
}

// ActiveLabSession finds the learner's active session.
func (s *Store) ActiveLabSession(ctx context.Context, userID int64) (*LabSession, error) {
	return scanLabSession(s.db(ctx).QueryRow(ctx, `SELECT `+labSessionColumns+` FROM lab_sessions WHERE user_id = $1 AND state = 'active'`, userID))
}

// ActiveLabSessions lists every active session.
func (s *Store) ActiveLabSessions(ctx context.Context) ([]*LabSession, error) {
	return s.queryLabSessions(ctx, `SELECT `+labSessionColumns+` FROM lab_sessions WHERE state = 'active' ORDER BY created_at`)
}

// UserLabSessions lists a learner's sessions, newest first.
func (s *Store) UserLabSessions(ctx context.Context, userID int64, limit int) ([]*LabSession, error) {
	return s.queryLabSessions(ctx, `SELECT `+labSessionColumns+` FROM lab_sessions WHERE user_id = $1 ORDER BY created_at DESC LIMIT $2`, userID, limit)
}

// queryLabSessions runs a query that selects labSessionColumns.
func (s *Store) queryLabSessions(ctx context.Context, sql string, args ...any) ([]*LabSession, error) {
	rows, err := s.db(ctx).Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*LabSession, error) { return scanLabSession(row) })
}

// TouchLabSessionAt records activity seen at t (never moving it back).
func (s *Store) TouchLabSessionAt(ctx context.Context, id uuid.UUID, t time.Time) error {
	_, err := s.db(ctx).Exec(ctx, `UPDATE lab_sessions SET last_activity_at = greatest(last_activity_at, $2) WHERE id = $1 AND state = 'active'`, id, t)
	return wrap("record activity", err)
}

// ExtendLabSession adds d to the hard lifetime and counts as activity, at
// most maxExtensions times.
func (s *Store) ExtendLabSession(ctx context.Context, id uuid.UUID, d time.Duration, maxExtensions int) (*LabSession, error) {
	l, err := scanLabSession(s.db(ctx).QueryRow(ctx, `
		UPDATE lab_sessions
		SET expires_at = greatest(expires_at, now()) + $2::interval, extensions = extensions + 1, last_activity_at = now()
		WHERE id = $1 AND state = 'active' AND extensions < $3
		RETURNING `+labSessionColumns, id, d.String(), maxExtensions))
	return l, err
}

// EndLabSession marks a session ended with a reason. Ending an ended session
// changes nothing.
func (s *Store) EndLabSession(ctx context.Context, id uuid.UUID, reason string) error {
	_, err := s.db(ctx).Exec(ctx, `UPDATE lab_sessions SET state = 'ended', ended_at = now(), end_reason = $2 WHERE id = $1 AND state = 'active'`, id, reason)
	return wrap("end lab session", err)
}
