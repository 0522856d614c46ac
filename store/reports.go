package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// LabRecord is one lab session of a user with what happened to each of
// its steps: what reports and a member's history are computed from.
type LabRecord struct {
	UserID    int64
	LabID     string
	SessionID uuid.UUID
	Active    bool
	StartedAt time.Time
	EndedAt   *time.Time
	// Steps maps a step id to its record; a step never checked is absent.
	Steps map[string]StepRecord
}

// StepRecord is a step of a session: its attempts, and when it was first
// passed (by a check, or by a skip). A step passed once stays passed here,
// whatever a later check says: a report counts what the learner did.
type StepRecord struct {
	Attempts int
	PassedAt *time.Time
	// Skipped: its first pass was a skip (podpath solved it).
	Skipped bool
}

// LabRecords lists the lab sessions of the users, oldest first, each with
// its steps' records.
func (s *Store) LabRecords(ctx context.Context, userIDs []int64) ([]*LabRecord, error) {
	if len(userIDs) == 0 {
		return nil, nil
	}
	rows, err := s.db(ctx).Query(ctx, `SELECT ls.id, ls.user_id, ls.lab_id, ls.state = 'active', ls.created_at, ls.ended_at,
			a.step_id, count(a.id), min(a.created_at) FILTER (WHERE a.passed),
			coalesce((array_agg(a.kind ORDER BY a.created_at, a.id) FILTER (WHERE a.passed))[1] = 'skip', false)
		FROM lab_sessions ls LEFT JOIN check_attempts a ON a.lab_session_id = ls.id
		WHERE ls.user_id = ANY($1) GROUP BY ls.id, a.step_id ORDER BY ls.created_at, ls.id`, userIDs)
	if err != nil {
		return nil, wrap("lab records", err)
	}
	defer rows.Close()
	var out []*LabRecord
	byID := map[uuid.UUID]*LabRecord{}
	for rows.Next() {
		var r LabRecord
		var step *string
		var sr StepRecord
		if err := rows.Scan(&r.SessionID, &r.UserID, &r.LabID, &r.Active, &r.StartedAt, &r.EndedAt, &step, &sr.Attempts, &sr.PassedAt, &sr.Skipped); err != nil {
			return nil, err
		}
		rec := byID[r.SessionID]
		if rec == nil {
			r.Steps = map[string]StepRecord{}
			rec = &r
			byID[r.SessionID] = rec
			out = append(out, rec)
		}
		if step != nil {
			rec.Steps[*step] = sr
		}
	}
	return out, wrap("lab records", rows.Err())
}

// LabAttempts counts each user's checks and skips per lab over all their
// sessions. An attempt carried into a later session (a workshop's reset
// keeps the steps before the one it resets from) is the same attempt,
// with its time, and is counted once.
func (s *Store) LabAttempts(ctx context.Context, userIDs []int64) (map[int64]map[string]int, error) {
	out := map[int64]map[string]int{}
	if len(userIDs) == 0 {
		return out, nil
	}
	rows, err := s.db(ctx).Query(ctx, `SELECT ls.user_id, ls.lab_id, count(DISTINCT (a.step_id, a.kind, a.created_at))
		FROM check_attempts a JOIN lab_sessions ls ON ls.id = a.lab_session_id
		WHERE ls.user_id = ANY($1) GROUP BY ls.user_id, ls.lab_id`, userIDs)
	if err != nil {
		return nil, wrap("lab attempts", err)
	}
	defer rows.Close()
	for rows.Next() {
		var user int64
		var lab string
		var n int
		if err := rows.Scan(&user, &lab, &n); err != nil {
			return nil, err
		}
		if out[user] == nil {
			out[user] = map[string]int{}
		}
		out[user][lab] = n
	}
	return out, wrap("lab attempts", rows.Err())
}
