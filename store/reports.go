package store

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// LabRecord is one lab session of a user with its steps' statuses: what
// reports and a member's history are computed from.
type LabRecord struct {
	UserID    int64
	LabID     string
	SessionID uuid.UUID
	Active    bool
	StartedAt time.Time
	EndedAt   *time.Time
	// Steps maps a step id to its status; a step never checked is absent.
	Steps map[string]StepStatus
}

// LabRecords lists the lab sessions of the users, oldest first, each with
// its step statuses.
func (s *Store) LabRecords(ctx context.Context, userIDs []int64) ([]*LabRecord, error) {
	if len(userIDs) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT ls.id, ls.user_id, ls.lab_id, ls.state = 'active', ls.created_at, ls.ended_at,
			sp.step_id, sp.status, sp.attempts, sp.updated_at
		FROM lab_sessions ls LEFT JOIN step_progress sp ON sp.lab_session_id = ls.id
		WHERE ls.user_id = ANY($1) ORDER BY ls.created_at, ls.id`, userIDs)
	if err != nil {
		return nil, wrap("lab records", err)
	}
	defer rows.Close()
	var out []*LabRecord
	byID := map[uuid.UUID]*LabRecord{}
	for rows.Next() {
		var r LabRecord
		var step, status *string
		var attempts *int
		var updated *time.Time
		if err := rows.Scan(&r.SessionID, &r.UserID, &r.LabID, &r.Active, &r.StartedAt, &r.EndedAt, &step, &status, &attempts, &updated); err != nil {
			return nil, err
		}
		rec := byID[r.SessionID]
		if rec == nil {
			r.Steps = map[string]StepStatus{}
			rec = &r
			byID[r.SessionID] = rec
			out = append(out, rec)
		}
		if step != nil {
			rec.Steps[*step] = StepStatus{StepID: *step, Status: *status, Attempts: *attempts, UpdatedAt: *updated}
		}
	}
	return out, wrap("lab records", rows.Err())
}
