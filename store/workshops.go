package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/podpath/podpath/internal/errs"
)

// Workshop is an instructor's class: labs in order, seats, a time window,
// a join code and clusters prepared ahead.
type Workshop struct {
	ID           int64
	Title        string
	Code         string
	InstructorID int64
	LabIDs       []string
	Seats        int
	StartsAt     time.Time
	EndsAt       time.Time
	Guests       bool
	Prepare      int
	PrepareLead  time.Duration
	EndedAt      *time.Time
	Broadcast    *string
	BroadcastAt  *time.Time
	CreatedAt    time.Time
	// Learners is how many have joined.
	Learners int
}

// Ended says whether the workshop is over: ended by hand or past its end.
func (w *Workshop) Ended(now time.Time) bool { return w.EndedAt != nil || !now.Before(w.EndsAt) }

// PrepareAt is when its clusters start being prepared.
func (w *Workshop) PrepareAt() time.Time { return w.StartsAt.Add(-w.PrepareLead) }

// Workshop states, derived from the clock.
const (
	WorkshopScheduled = "scheduled"
	WorkshopPreparing = "preparing"
	WorkshopOpen      = "open"
	WorkshopEnded     = "ended"
)

// State is the workshop's state at now.
func (w *Workshop) State(now time.Time) string {
	switch {
	case w.Ended(now):
		return WorkshopEnded
	case !now.Before(w.StartsAt):
		return WorkshopOpen
	case !now.Before(w.PrepareAt()):
		return WorkshopPreparing
	}
	return WorkshopScheduled
}

// Errors of joining a workshop.
var (
	ErrWorkshopFull error = errs.E(errs.Conflict, "every seat of the workshop is taken")
	ErrCodeTaken    error = errs.E(errs.Conflict, "the join code is taken")
	ErrWorkshopOver error = errs.E(errs.Gone, "the workshop has ended")
	// ErrGuestTaken: the guest's account exists (the same browser joined
	// already); join with it instead.
	ErrGuestTaken error = errs.E(errs.Conflict, "the guest account exists")
)

const workshopColumns = `w.id, w.title, coalesce(w.code, ''), w.instructor_id, w.lab_ids, w.seats, w.starts_at, w.ends_at, w.guests, w.prepare,
	w.prepare_lead_seconds, w.ended_at, w.broadcast, w.broadcast_at, w.created_at,
	(SELECT count(*) FROM workshop_learners l WHERE l.workshop_id = w.id)`

func scanWorkshop(row interface{ Scan(...any) error }) (*Workshop, error) {
	var w Workshop
	var lead int
	if err := row.Scan(&w.ID, &w.Title, &w.Code, &w.InstructorID, &w.LabIDs, &w.Seats, &w.StartsAt, &w.EndsAt, &w.Guests, &w.Prepare,
		&lead, &w.EndedAt, &w.Broadcast, &w.BroadcastAt, &w.CreatedAt, &w.Learners); err != nil {
		return nil, notFound(err)
	}
	w.PrepareLead = time.Duration(lead) * time.Second
	return &w, nil
}

// CreateWorkshop stores a new workshop; a code another workshop has is
// ErrCodeTaken (draw another).
func (s *Store) CreateWorkshop(ctx context.Context, w *Workshop) (*Workshop, error) {
	out, err := scanWorkshop(s.db(ctx).QueryRow(ctx, `
		WITH w AS (
			INSERT INTO workshops (title, code, instructor_id, lab_ids, seats, starts_at, ends_at, guests, prepare, prepare_lead_seconds)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING *)
		SELECT `+workshopColumns+` FROM w`,
		w.Title, w.Code, w.InstructorID, w.LabIDs, w.Seats, w.StartsAt, w.EndsAt, w.Guests, w.Prepare, int(w.PrepareLead.Seconds())))
	if isUniqueViolation(err, "workshops_code_key") {
		return nil, ErrCodeTaken
	}
	return out, wrap("create workshop", err)
}

// WorkshopByID finds a workshop.
func (s *Store) WorkshopByID(ctx context.Context, id int64) (*Workshop, error) {
	return scanWorkshop(s.db(ctx).QueryRow(ctx, `SELECT `+workshopColumns+` FROM workshops w WHERE w.id = $1`, id))
}

// WorkshopByCode finds a workshop by its join code (an ended workshop's
// code is retired: it finds nothing).
func (s *Store) WorkshopByCode(ctx context.Context, code string) (*Workshop, error) {
	return scanWorkshop(s.db(ctx).QueryRow(ctx, `SELECT `+workshopColumns+` FROM workshops w WHERE w.code = $1`, code))
}

// Workshops lists workshops, newest first: an instructor's (instructorID
// other than 0), or all.
func (s *Store) Workshops(ctx context.Context, instructorID int64) ([]*Workshop, error) {
	rows, err := s.db(ctx).Query(ctx, `SELECT `+workshopColumns+` FROM workshops w WHERE $1 = 0 OR w.instructor_id = $1 ORDER BY w.starts_at DESC, w.id DESC LIMIT 200`, instructorID)
	if err != nil {
		return nil, wrap("list workshops", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*Workshop, error) { return scanWorkshop(row) })
	return out, wrap("list workshops", err)
}

// LiveWorkshops lists the workshops not marked ended: the ones to prepare
// clusters for, or to end once their time is up.
func (s *Store) LiveWorkshops(ctx context.Context) ([]*Workshop, error) {
	rows, err := s.db(ctx).Query(ctx, `SELECT `+workshopColumns+` FROM workshops w WHERE w.ended_at IS NULL ORDER BY w.id`)
	if err != nil {
		return nil, wrap("list workshops", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*Workshop, error) { return scanWorkshop(row) })
	return out, wrap("list workshops", err)
}

// SetWorkshopCode gives the workshop a new join code. An ended workshop
// gets none (ErrWorkshopOver): its code was retired with it.
func (s *Store) SetWorkshopCode(ctx context.Context, id int64, code string) error {
	tag, err := s.db(ctx).Exec(ctx, `UPDATE workshops SET code = $2 WHERE id = $1 AND ended_at IS NULL AND now() < ends_at`, id, code)
	if isUniqueViolation(err, "workshops_code_key") {
		return ErrCodeTaken
	}
	if err == nil && tag.RowsAffected() == 0 {
		return ErrWorkshopOver
	}
	return wrap("set workshop code", err)
}

// SetBroadcast sets (or, with "", clears) the message every learner sees.
func (s *Store) SetBroadcast(ctx context.Context, id int64, msg string) error {
	_, err := s.db(ctx).Exec(ctx, `UPDATE workshops SET broadcast = nullif($2, ''), broadcast_at = CASE WHEN $2 = '' THEN NULL ELSE now() END WHERE id = $1`, id, msg)
	return wrap("set broadcast", err)
}

// EndWorkshop marks a workshop ended (once) and retires its join code, so
// the code opens nothing any more and may be drawn again.
func (s *Store) EndWorkshop(ctx context.Context, id int64) error {
	_, err := s.db(ctx).Exec(ctx, `UPDATE workshops SET ended_at = coalesce(ended_at, now()), code = NULL WHERE id = $1`, id)
	return wrap("end workshop", err)
}

// Learner is one who joined a workshop.
type Learner struct {
	WorkshopID int64
	UserID     int64
	Name       string
	Guest      bool
	JoinedAt   time.Time
	HandAt     *time.Time
}

const learnerColumns = `l.workshop_id, l.user_id, l.name, coalesce(u.guest_workshop_id = l.workshop_id, false), l.joined_at, l.hand_at`

func scanLearner(row interface{ Scan(...any) error }) (*Learner, error) {
	var l Learner
	if err := row.Scan(&l.WorkshopID, &l.UserID, &l.Name, &l.Guest, &l.JoinedAt, &l.HandAt); err != nil {
		return nil, notFound(err)
	}
	return &l, nil
}

// Guest is a guest to create as part of a join: an account that has no
// password and is bound to the workshop.
type Guest struct {
	Email string
	Name  string
}

// JoinWorkshop gives the user (or, with guest set, a new guest account) a
// seat. Joining again keeps the one seat (joined false). A full workshop
// is ErrWorkshopFull, and then nothing is written: the seat count and the
// insert are one step under the workshop row's lock.
func (s *Store) JoinWorkshop(ctx context.Context, workshopID, userID int64, name string, guest *Guest) (l *Learner, u *User, joined bool, err error) {
	err = s.tx(ctx, func(tx pgx.Tx) error {
		var seats, taken int
		var open bool
		if err := tx.QueryRow(ctx, `SELECT seats, ended_at IS NULL AND now() < ends_at FROM workshops WHERE id = $1 FOR UPDATE`, workshopID).Scan(&seats, &open); err != nil {
			return notFound(err)
		}
		if !open {
			return ErrWorkshopOver // ended while the join was on its way
		}
		if guest != nil {
			var err error
			u, err = scanUser(tx.QueryRow(ctx, `INSERT INTO users (email, name, password_hash, role, guest_workshop_id, origin)
				VALUES ($1, $2, '', 'learner', $3, 'guest') RETURNING `+userColumns, guest.Email, guest.Name, workshopID))
			if isUniqueViolation(err, "users_email_key") {
				return ErrGuestTaken
			}
			if err != nil {
				return err
			}
			userID = u.ID
		} else {
			old, err := scanLearner(tx.QueryRow(ctx, `SELECT `+learnerColumns+` FROM workshop_learners l JOIN users u ON u.id = l.user_id
				WHERE l.workshop_id = $1 AND l.user_id = $2`, workshopID, userID))
			if err == nil {
				l = old
				return nil
			}
			if !errors.Is(err, ErrNotFound) {
				return err
			}
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM workshop_learners WHERE workshop_id = $1`, workshopID).Scan(&taken); err != nil {
			return err
		}
		if taken >= seats {
			return ErrWorkshopFull
		}
		if _, err := tx.Exec(ctx, `INSERT INTO workshop_learners (workshop_id, user_id, name) VALUES ($1, $2, $3)`, workshopID, userID, name); err != nil {
			return err
		}
		joined = true
		var err error
		l, err = scanLearner(tx.QueryRow(ctx, `SELECT `+learnerColumns+` FROM workshop_learners l JOIN users u ON u.id = l.user_id
			WHERE l.workshop_id = $1 AND l.user_id = $2`, workshopID, userID))
		return err
	})
	if errors.Is(err, ErrWorkshopFull) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrWorkshopOver) || errors.Is(err, ErrGuestTaken) {
		return nil, nil, false, err
	}
	return l, u, joined, wrap("join workshop", err)
}

// WorkshopLearner finds one learner of a workshop.
func (s *Store) WorkshopLearner(ctx context.Context, workshopID, userID int64) (*Learner, error) {
	return scanLearner(s.db(ctx).QueryRow(ctx, `SELECT `+learnerColumns+` FROM workshop_learners l JOIN users u ON u.id = l.user_id
		WHERE l.workshop_id = $1 AND l.user_id = $2`, workshopID, userID))
}

// WorkshopLearners lists a workshop's learners in the order they joined.
func (s *Store) WorkshopLearners(ctx context.Context, workshopID int64) ([]*Learner, error) {
	rows, err := s.db(ctx).Query(ctx, `SELECT `+learnerColumns+` FROM workshop_learners l JOIN users u ON u.id = l.user_id
		WHERE l.workshop_id = $1 ORDER BY l.joined_at, l.user_id`, workshopID)
	if err != nil {
		return nil, wrap("list learners", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*Learner, error) { return scanLearner(row) })
	return out, wrap("list learners", err)
}

// SetHand raises or lowers a learner's hand.
func (s *Store) SetHand(ctx context.Context, workshopID, userID int64, raised bool) error {
	tag, err := s.db(ctx).Exec(ctx, `UPDATE workshop_learners SET hand_at = CASE WHEN $3 THEN coalesce(hand_at, now()) END
		WHERE workshop_id = $1 AND user_id = $2`, workshopID, userID, raised)
	if err == nil && tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return wrap("set hand", err)
}

// WorkshopSessions lists the lab sessions of a workshop, oldest first.
func (s *Store) WorkshopSessions(ctx context.Context, workshopID int64) ([]*LabSession, error) {
	return s.queryLabSessions(ctx, `SELECT `+labSessionColumns+` FROM lab_sessions WHERE workshop_id = $1 ORDER BY created_at, id`, workshopID)
}

// ExtendWorkshopSessions moves the hard end of every active session of a
// workshop by d, and returns how many it moved.
func (s *Store) ExtendWorkshopSessions(ctx context.Context, workshopID int64, d time.Duration) (int64, error) {
	var n int64
	err := s.tx(ctx, func(tx pgx.Tx) error {
		// The workshop ends later too, or its end would cut them short.
		if _, err := tx.Exec(ctx, `UPDATE workshops SET ends_at = ends_at + $2::interval WHERE id = $1 AND ended_at IS NULL`, workshopID, d.String()); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE lab_sessions SET expires_at = expires_at + $2::interval WHERE workshop_id = $1 AND state = 'active'`,
			workshopID, d.String())
		n = tag.RowsAffected()
		return err
	})
	return n, wrap("extend sessions", err)
}

// StrayWorkshopSessions lists active sessions of workshops that have ended
// (one that started while its workshop was being ended).
func (s *Store) StrayWorkshopSessions(ctx context.Context) ([]*LabSession, error) {
	return s.queryLabSessions(ctx, `SELECT `+prefixed("ls.", labSessionColumns)+` FROM lab_sessions ls JOIN workshops w ON w.id = ls.workshop_id
		WHERE ls.state = 'active' AND (w.ended_at IS NOT NULL OR w.ends_at <= now())`)
}

// StepStat is what a session did on one step, for boards and results.
type StepStat struct {
	Session  uuid.UUID
	StepID   string
	Status   string
	Attempts int // checks pressed
	Failed   int
	Skipped  bool
	PassedAt *time.Time
	// Hints is how many different hints (or a script's FAIL lines) the
	// learner was shown; a probe's own error is not one.
	Hints int
	// LastFailedCheck and Observed are the last failed check's name and
	// what the cluster showed; ObservedWords say it by language (nil for
	// a result recorded before they were).
	LastFailedCheck []byte
	Observed        string
	ObservedWords   []byte
	UpdatedAt       time.Time
}

// WorkshopStepStats returns what every session of a workshop did on each
// step it touched, keyed by session then step.
func (s *Store) WorkshopStepStats(ctx context.Context, workshopID int64) (map[uuid.UUID]map[string]*StepStat, error) {
	out := map[uuid.UUID]map[string]*StepStat{}
	get := func(id uuid.UUID, step string) *StepStat {
		if out[id] == nil {
			out[id] = map[string]*StepStat{}
		}
		if out[id][step] == nil {
			out[id][step] = &StepStat{Session: id, StepID: step}
		}
		return out[id][step]
	}
	rows, err := s.db(ctx).Query(ctx, `
		SELECT p.lab_session_id, p.step_id, p.status, p.updated_at,
			count(a.id) FILTER (WHERE a.kind = 'check'),
			count(a.id) FILTER (WHERE a.kind = 'check' AND NOT a.passed),
			min(a.created_at) FILTER (WHERE a.passed)
		FROM step_progress p JOIN lab_sessions ls ON ls.id = p.lab_session_id
		JOIN check_attempts a ON a.lab_session_id = p.lab_session_id AND a.step_id = p.step_id
		WHERE ls.workshop_id = $1 GROUP BY 1, 2, 3, 4`, workshopID)
	if err != nil {
		return nil, wrap("step stats", err)
	}
	for rows.Next() {
		var id uuid.UUID
		var step, status string
		var at time.Time
		var st StepStat
		if err := rows.Scan(&id, &step, &status, &at, &st.Attempts, &st.Failed, &st.PassedAt); err != nil {
			rows.Close()
			return nil, wrap("step stats", err)
		}
		g := get(id, step)
		g.Status, g.UpdatedAt, g.Attempts, g.Failed, g.PassedAt, g.Skipped = status, at, st.Attempts, st.Failed, st.PassedAt, status == StepSkipped
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, wrap("step stats", err)
	}
	rows, err = s.db(ctx).Query(ctx, `
		SELECT a.lab_session_id, a.step_id, count(DISTINCT r.feedback::text)
		FROM check_results r JOIN check_attempts a ON a.id = r.attempt_id JOIN lab_sessions ls ON ls.id = a.lab_session_id
		WHERE ls.workshop_id = $1 AND NOT r.passed AND NOT r.probe_error AND r.feedback IS NOT NULL GROUP BY 1, 2`, workshopID)
	if err != nil {
		return nil, wrap("hint stats", err)
	}
	for rows.Next() {
		var id uuid.UUID
		var step string
		var n int
		if err := rows.Scan(&id, &step, &n); err != nil {
			rows.Close()
			return nil, wrap("hint stats", err)
		}
		get(id, step).Hints = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, wrap("hint stats", err)
	}
	rows, err = s.db(ctx).Query(ctx, `
		SELECT DISTINCT ON (a.lab_session_id, a.step_id) a.lab_session_id, a.step_id, r.name, r.observed, r.observed_words
		FROM check_attempts a JOIN check_results r ON r.attempt_id = a.id JOIN lab_sessions ls ON ls.id = a.lab_session_id
		WHERE ls.workshop_id = $1 AND NOT r.passed AND a.kind = 'check'
		ORDER BY a.lab_session_id, a.step_id, a.id DESC, r.idx`, workshopID)
	if err != nil {
		return nil, wrap("failed checks", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		var step, observed string
		var name, words []byte
		if err := rows.Scan(&id, &step, &name, &observed, &words); err != nil {
			return nil, wrap("failed checks", err)
		}
		g := get(id, step)
		g.LastFailedCheck, g.Observed, g.ObservedWords = name, observed, words
	}
	return out, wrap("failed checks", rows.Err())
}

// CopyProgress copies the attempts (with their results) and statuses of
// the given steps from one session to another, for a reset that keeps
// progress up to a step.
func (s *Store) CopyProgress(ctx context.Context, from, to uuid.UUID, steps []string) error {
	if len(steps) == 0 {
		return nil
	}
	return wrap("copy progress", s.tx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id FROM check_attempts WHERE lab_session_id = $1 AND step_id = ANY($2) ORDER BY id`, from, steps)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		newID := map[int64]int64{}
		for _, id := range ids {
			var n int64
			if err := tx.QueryRow(ctx, `INSERT INTO check_attempts (lab_session_id, step_id, kind, passed, answer, error, duration_ms, created_at)
				SELECT $2, step_id, kind, passed, answer, error, duration_ms, created_at FROM check_attempts WHERE id = $1 RETURNING id`, id, to).Scan(&n); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO check_results (attempt_id, idx, name, passed, observed, observed_words, feedback, probe_error, duration_ms)
				SELECT $2, idx, name, passed, observed, observed_words, feedback, probe_error, duration_ms FROM check_results WHERE attempt_id = $1`, id, n); err != nil {
				return err
			}
			newID[id] = n
		}
		rows, err = tx.Query(ctx, `SELECT step_id, status, attempts, last_attempt_id, updated_at FROM step_progress WHERE lab_session_id = $1 AND step_id = ANY($2)`, from, steps)
		if err != nil {
			return err
		}
		type prog struct {
			step, status string
			attempts     int
			last         int64
			at           time.Time
		}
		progs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (prog, error) {
			var p prog
			err := r.Scan(&p.step, &p.status, &p.attempts, &p.last, &p.at)
			return p, err
		})
		if err != nil {
			return err
		}
		for _, p := range progs {
			last, ok := newID[p.last]
			if !ok {
				return fmt.Errorf("attempt %d of step %s was not copied", p.last, p.step)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO step_progress (lab_session_id, step_id, status, attempts, last_attempt_id, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
				ON CONFLICT (lab_session_id, step_id) DO NOTHING`,
				to, p.step, p.status, p.attempts, last, p.at); err != nil {
				return err
			}
		}
		return nil
	}))
}

// Takeover is an instructor typing in a learner's terminal: an audit record.
type Takeover struct {
	ID           int64
	WorkshopID   int64
	InstructorID int64
	Instructor   string
	LearnerID    int64
	Learner      string
	LabSession   *uuid.UUID
	Node         string
	StartedAt    time.Time
	EndedAt      *time.Time
	EndedBy      *string
	// Seconds is how long it lasted (so far).
	Seconds int
	// Replica holds the instructor's websocket (uuid.Nil: unknown).
	Replica uuid.UUID
}

// StartTakeover records the start of a take-over.
func (s *Store) StartTakeover(ctx context.Context, t *Takeover) error {
	var replica *uuid.UUID
	if t.Replica != uuid.Nil {
		replica = &t.Replica
	}
	return wrap("record take-over", s.db(ctx).QueryRow(ctx, `INSERT INTO workshop_takeovers (workshop_id, instructor_id, learner_id, lab_session_id, node, replica)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING id, started_at`, t.WorkshopID, t.InstructorID, t.LearnerID, t.LabSession, t.Node, replica).Scan(&t.ID, &t.StartedAt))
}

// EndTakeover records its end and who ended it ("instructor", "learner",
// "server"); ending an ended one changes nothing.
func (s *Store) EndTakeover(ctx context.Context, id int64, by string) error {
	_, err := s.db(ctx).Exec(ctx, `UPDATE workshop_takeovers SET ended_at = now(), ended_by = $2 WHERE id = $1 AND ended_at IS NULL`, id, by)
	return wrap("end take-over", err)
}

// EndOpenTakeovers closes records a server stopped without closing: those
// of replicas that beat no more within live (all, with live 0).
func (s *Store) EndOpenTakeovers(ctx context.Context, live time.Duration) (int64, error) {
	tag, err := s.db(ctx).Exec(ctx, `UPDATE workshop_takeovers SET ended_at = now(), ended_by = 'server'
		WHERE ended_at IS NULL AND ($1::interval = '0s' OR replica IS NULL
			OR replica NOT IN (SELECT id FROM replicas WHERE heartbeat_at > now() - $1::interval))`, live.String())
	return tag.RowsAffected(), wrap("end take-overs", err)
}

// OpenTakeovers are a workshop's open take-overs, the oldest of each lab
// session.
func (s *Store) OpenTakeovers(ctx context.Context, workshopID int64) (map[uuid.UUID]*Takeover, error) {
	rows, err := s.db(ctx).Query(ctx, `
		SELECT t.id, t.instructor_id, i.name, t.learner_id, t.lab_session_id, t.node, t.started_at
		FROM workshop_takeovers t JOIN users i ON i.id = t.instructor_id
		WHERE t.workshop_id = $1 AND t.ended_at IS NULL AND t.lab_session_id IS NOT NULL ORDER BY t.id`, workshopID)
	if err != nil {
		return nil, wrap("open take-overs", err)
	}
	defer rows.Close()
	out := map[uuid.UUID]*Takeover{}
	for rows.Next() {
		t := Takeover{WorkshopID: workshopID}
		if err := rows.Scan(&t.ID, &t.InstructorID, &t.Instructor, &t.LearnerID, &t.LabSession, &t.Node, &t.StartedAt); err != nil {
			return nil, wrap("open take-overs", err)
		}
		if _, ok := out[*t.LabSession]; !ok {
			out[*t.LabSession] = &t
		}
	}
	return out, wrap("open take-overs", rows.Err())
}

// OpenTakeover is the oldest open take-over of a lab session; ErrNotFound
// when there is none.
func (s *Store) OpenTakeover(ctx context.Context, labSession uuid.UUID) (*Takeover, error) {
	var t Takeover
	err := s.db(ctx).QueryRow(ctx, `
		SELECT t.id, t.workshop_id, t.instructor_id, i.name, t.learner_id, t.lab_session_id, t.node, t.started_at, coalesce(t.replica, '00000000-0000-0000-0000-000000000000')
		FROM workshop_takeovers t JOIN users i ON i.id = t.instructor_id
		WHERE t.lab_session_id = $1 AND t.ended_at IS NULL ORDER BY t.id LIMIT 1`, labSession).
		Scan(&t.ID, &t.WorkshopID, &t.InstructorID, &t.Instructor, &t.LearnerID, &t.LabSession, &t.Node, &t.StartedAt, &t.Replica)
	if err != nil {
		return nil, notFound(err)
	}
	return &t, nil
}

// Takeovers lists a workshop's take-overs, newest first.
func (s *Store) Takeovers(ctx context.Context, workshopID int64) ([]*Takeover, error) {
	rows, err := s.db(ctx).Query(ctx, `
		SELECT t.id, t.workshop_id, t.instructor_id, i.name, t.learner_id, coalesce(l.name, u.name), t.lab_session_id, t.node,
			t.started_at, t.ended_at, t.ended_by, extract(epoch FROM coalesce(t.ended_at, now()) - t.started_at)::int
		FROM workshop_takeovers t JOIN users i ON i.id = t.instructor_id JOIN users u ON u.id = t.learner_id
		LEFT JOIN workshop_learners l ON l.workshop_id = t.workshop_id AND l.user_id = t.learner_id
		WHERE t.workshop_id = $1 ORDER BY t.id DESC`, workshopID)
	if err != nil {
		return nil, wrap("list take-overs", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Takeover, error) {
		var t Takeover
		err := r.Scan(&t.ID, &t.WorkshopID, &t.InstructorID, &t.Instructor, &t.LearnerID, &t.Learner, &t.LabSession, &t.Node,
			&t.StartedAt, &t.EndedAt, &t.EndedBy, &t.Seconds)
		return &t, err
	})
	return out, wrap("list take-overs", err)
}

// UserWorkshops lists the workshops the user has a seat in, newest first.
func (s *Store) UserWorkshops(ctx context.Context, userID int64) ([]*Workshop, error) {
	rows, err := s.db(ctx).Query(ctx, `SELECT `+workshopColumns+` FROM workshops w JOIN workshop_learners wl ON wl.workshop_id = w.id
		WHERE wl.user_id = $1 ORDER BY w.starts_at DESC`, userID)
	if err != nil {
		return nil, wrap("list workshops", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*Workshop, error) { return scanWorkshop(row) })
	return out, wrap("list workshops", err)
}

// prefixed qualifies each of a comma-separated list of columns.
func prefixed(prefix, columns string) string {
	parts := strings.Split(columns, ", ")
	for i, p := range parts {
		parts[i] = prefix + p
	}
	return strings.Join(parts, ", ")
}
