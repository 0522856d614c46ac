package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Step statuses.
const (
	StepPassed  = "passed"
	StepFailed  = "failed"
	StepSkipped = "skipped"
	StepPending = "pending"
)

// Attempt kinds.
const (
	AttemptCheck = "check"
	AttemptSkip  = "skip"
)

// Attempt is one press of Check (or Skip) on a step, with each check's result.
type Attempt struct {
	ID           int64
	LabSessionID uuid.UUID
	StepID       string
	Kind         string
	Passed       bool
	Answer       *string
	Error        *string
	Duration     time.Duration
	CreatedAt    time.Time
	Results      []CheckResult
}

// CheckResult is one check's outcome within an attempt.
type CheckResult struct {
	Index  int
	Name   json.RawMessage
	Passed bool
	// Observed is what the check read, with the grader's English notes:
	// the record, for instructors and debugging.
	Observed string
	// ObservedWords are Observed as the learner reads it, by language
	// ({"en": ..., "zh": ...}); empty for results recorded before them.
	ObservedWords json.RawMessage
	Feedback      json.RawMessage
	ProbeError    bool
	Duration      time.Duration
}

// StepStatus is a step's status, derived from its last attempt.
type StepStatus struct {
	StepID        string
	Status        string
	Attempts      int
	LastAttemptID int64
	UpdatedAt     time.Time
}

// RecordAttempt stores an attempt and its results, and sets the step's
// status from it, in one transaction.
func (s *Store) RecordAttempt(ctx context.Context, a *Attempt) error {
	return wrap("record attempt", s.recordAttempt(ctx, a))
}

func (s *Store) recordAttempt(ctx context.Context, a *Attempt) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `
			INSERT INTO check_attempts (lab_session_id, step_id, kind, passed, answer, error, duration_ms)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id, created_at`,
			a.LabSessionID, a.StepID, a.Kind, a.Passed, a.Answer, a.Error, a.Duration.Milliseconds()).Scan(&a.ID, &a.CreatedAt)
		if err != nil {
			return err
		}
		for _, r := range a.Results {
			if _, err := tx.Exec(ctx, `
				INSERT INTO check_results (attempt_id, idx, name, passed, observed, observed_words, feedback, probe_error, duration_ms)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
				a.ID, r.Index, r.Name, r.Passed, r.Observed, nullJSON(r.ObservedWords), nullJSON(r.Feedback), r.ProbeError, r.Duration.Milliseconds()); err != nil {
				return err
			}
		}
		status := StepFailed
		switch {
		case a.Passed && a.Kind == AttemptSkip:
			status = StepSkipped
		case a.Passed:
			status = StepPassed
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO step_progress (lab_session_id, step_id, status, attempts, last_attempt_id)
			VALUES ($1, $2, $3, 1, $4)
			ON CONFLICT (lab_session_id, step_id) DO UPDATE
			SET status = $3, attempts = step_progress.attempts + 1, last_attempt_id = $4, updated_at = now()`,
			a.LabSessionID, a.StepID, status, a.ID)
		return err
	})
}

func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// StepStatuses returns the status of every step with an attempt.
func (s *Store) StepStatuses(ctx context.Context, labSession uuid.UUID) (map[string]StepStatus, error) {
	rows, err := s.db(ctx).Query(ctx, `SELECT step_id, status, attempts, last_attempt_id, updated_at FROM step_progress WHERE lab_session_id = $1`, labSession)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]StepStatus{}
	for rows.Next() {
		var st StepStatus
		if err := rows.Scan(&st.StepID, &st.Status, &st.Attempts, &st.LastAttemptID, &st.UpdatedAt); err != nil {
			return nil, err
		}
		out[st.StepID] = st
	}
	return out, rows.Err()
}

// LastAttempt returns the latest attempt at a step with its results.
func (s *Store) LastAttempt(ctx context.Context, labSession uuid.UUID, stepID string) (*Attempt, error) {
	return s.attemptWhere(ctx, `lab_session_id = $1 AND step_id = $2 ORDER BY id DESC LIMIT 1`, labSession, stepID)
}

// AttemptByID returns an attempt with its results.
func (s *Store) AttemptByID(ctx context.Context, id int64) (*Attempt, error) {
	return s.attemptWhere(ctx, `id = $1`, id)
}

func (s *Store) attemptWhere(ctx context.Context, where string, args ...any) (*Attempt, error) {
	var a Attempt
	var ms int64
	err := s.db(ctx).QueryRow(ctx, `
		SELECT id, lab_session_id, step_id, kind, passed, answer, error, duration_ms, created_at
		FROM check_attempts WHERE `+where, args...).
		Scan(&a.ID, &a.LabSessionID, &a.StepID, &a.Kind, &a.Passed, &a.Answer, &a.Error, &ms, &a.CreatedAt)
	if err != nil {
		return nil, notFound(err)
	}
	a.Duration = time.Duration(ms) * time.Millisecond
	rows, err := s.db(ctx).Query(ctx, `
		SELECT idx, name, passed, observed, coalesce(observed_words, 'null'::jsonb), coalesce(feedback, 'null'::jsonb), probe_error, duration_ms
		FROM check_results WHERE attempt_id = $1 ORDER BY idx`, a.ID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var r CheckResult
		var rms int64
		if err := rows.Scan(&r.Index, &r.Name, &r.Passed, &r.Observed, &r.ObservedWords, &r.Feedback, &r.ProbeError, &rms); err != nil {
			return nil, err
		}
		if string(r.Feedback) == "null" {
			r.Feedback = nil
		}
		if string(r.ObservedWords) == "null" {
			r.ObservedWords = nil
		}
		r.Duration = time.Duration(rms) * time.Millisecond
		a.Results = append(a.Results, r)
	}
	return &a, rows.Err()
}
