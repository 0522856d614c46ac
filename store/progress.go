package store

import (
	"context"
	"time"
)

// CompletedLabs returns the labs the user has completed, each with when
// they first did: a lab is completed by a session of it (in a workshop or
// not, active or ended) whose every step is passed or skipped, as the lab's
// end page has it, and it was completed when the last of those steps was.
// steps gives each lab's step ids (lab id → step ids): the database knows
// attempts, not labs; a lab with no steps is never completed.
func (s *Store) CompletedLabs(ctx context.Context, userID int64, steps map[string][]string) (map[string]time.Time, error) {
	var labIDs, stepIDs []string
	for lab, ids := range steps {
		for _, id := range ids {
			labIDs, stepIDs = append(labIDs, lab), append(stepIDs, id)
		}
	}
	out := map[string]time.Time{}
	if len(labIDs) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `
		WITH want AS (SELECT DISTINCT lab_id, step_id FROM unnest($2::text[], $3::text[]) AS w(lab_id, step_id)),
		need AS (SELECT lab_id, count(*) AS n FROM want GROUP BY lab_id),
		done AS (
			SELECT ls.id, ls.lab_id, count(*) AS n, max(sp.updated_at) AS at
			FROM lab_sessions ls
			JOIN step_progress sp ON sp.lab_session_id = ls.id AND sp.status IN ('passed', 'skipped')
			JOIN want w ON w.lab_id = ls.lab_id AND w.step_id = sp.step_id
			WHERE ls.user_id = $1
			GROUP BY ls.id, ls.lab_id)
		SELECT done.lab_id, min(done.at) FROM done JOIN need ON need.lab_id = done.lab_id AND done.n = need.n
		GROUP BY done.lab_id`, userID, labIDs, stepIDs)
	if err != nil {
		return nil, wrap("completed labs", err)
	}
	defer rows.Close()
	for rows.Next() {
		var lab string
		var at time.Time
		if err := rows.Scan(&lab, &at); err != nil {
			return nil, wrap("completed labs", err)
		}
		out[lab] = at
	}
	return out, wrap("completed labs", rows.Err())
}

// StartedLabs returns the labs the user has begun: those with an active
// session, or a session with an attempt (a Check or a Skip) at a step.
func (s *Store) StartedLabs(ctx context.Context, userID int64) (map[string]bool, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT DISTINCT ls.lab_id FROM lab_sessions ls
		WHERE ls.user_id = $1 AND (ls.state = 'active' OR EXISTS (SELECT 1 FROM check_attempts a WHERE a.lab_session_id = ls.id))`, userID)
	if err != nil {
		return nil, wrap("started labs", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var lab string
		if err := rows.Scan(&lab); err != nil {
			return nil, wrap("started labs", err)
		}
		out[lab] = true
	}
	return out, wrap("started labs", rows.Err())
}
