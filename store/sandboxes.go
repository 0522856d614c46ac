package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Sandbox states, from request to deletion.
const (
	SandboxRequested    = "requested"
	SandboxProvisioning = "provisioning"
	SandboxReady        = "ready"
	SandboxHibernated   = "hibernated"
	SandboxExpiring     = "expiring"
	SandboxDeleted      = "deleted"
	SandboxFailed       = "failed"
)

// Sandbox is the cluster of a lab session.
type Sandbox struct {
	Name string
	// LabSessionID is the owner; zero for a warm-pool cluster not claimed yet.
	LabSessionID uuid.UUID
	Pool         bool
	// PoolWorkshop is the workshop a pool cluster was prepared for (0: any learner's).
	PoolWorkshop int64
	State        string
	Image        string
	Workers      int
	// WorkerMilliCPU and WorkerMemoryMiB are the size its lab asked of
	// each worker (0: the backend's default).
	WorkerMilliCPU, WorkerMemoryMiB int64
	Nodes                           json.RawMessage
	Progress                        json.RawMessage
	Error                           *string
	CreatedAt                       time.Time
	ReadyAt                         *time.Time
	UpdatedAt                       time.Time
}

const sandboxColumns = "name, lab_session_id, pool, coalesce(pool_workshop_id, 0), state, image, workers, worker_milli_cpu, worker_memory_mib, nodes, progress, error, created_at, ready_at, updated_at"

func scanSandbox(row interface{ Scan(...any) error }) (*Sandbox, error) {
	var s Sandbox
	var owner uuid.NullUUID
	if err := row.Scan(&s.Name, &owner, &s.Pool, &s.PoolWorkshop, &s.State, &s.Image, &s.Workers, &s.WorkerMilliCPU, &s.WorkerMemoryMiB, &s.Nodes, &s.Progress, &s.Error, &s.CreatedAt, &s.ReadyAt, &s.UpdatedAt); err != nil {
		return nil, notFound(err)
	}
	s.LabSessionID = owner.UUID
	return &s, nil
}

// SandboxOf finds the sandbox of a lab session.
func (s *Store) SandboxOf(ctx context.Context, labSession uuid.UUID) (*Sandbox, error) {
	return scanSandbox(s.db(ctx).QueryRow(ctx, `SELECT `+sandboxColumns+` FROM sandboxes WHERE lab_session_id = $1`, labSession))
}

// SetSandboxState moves a sandbox to state; errMsg is kept for failed.
func (s *Store) SetSandboxState(ctx context.Context, name, state string, errMsg *string) error {
	return wrap("record sandbox state", s.setSandboxState(ctx, name, state, errMsg))
}

func (s *Store) setSandboxState(ctx context.Context, name, state string, errMsg *string) error {
	_, err := s.db(ctx).Exec(ctx, `
		UPDATE sandboxes SET state = $2, error = coalesce($3, error), updated_at = now(),
			ready_at = CASE WHEN $2 = 'ready' AND ready_at IS NULL THEN now() ELSE ready_at END,
			deleted_at = CASE WHEN $2 = 'deleted' THEN now() ELSE deleted_at END
		WHERE name = $1`, name, state, errMsg)
	return err
}

// SetSandboxNodes records the sandbox's nodes (aliases, IPs).
func (s *Store) SetSandboxNodes(ctx context.Context, name string, nodes any) error {
	b, err := json.Marshal(nodes)
	if err != nil {
		return err
	}
	_, err = s.db(ctx).Exec(ctx, `UPDATE sandboxes SET nodes = $2, updated_at = now() WHERE name = $1`, name, b)
	return err
}

// AppendSandboxProgress adds a provisioning event.
func (s *Store) AppendSandboxProgress(ctx context.Context, name string, event any) error {
	b, err := json.Marshal(event)
	if err != nil {
		return err
	}
	_, err = s.db(ctx).Exec(ctx, `UPDATE sandboxes SET progress = progress || jsonb_build_array($2::jsonb), updated_at = now() WHERE name = $1`, name, b)
	return err
}

// ResetSandboxProgress clears the progress of a sandbox being provisioned again.
func (s *Store) ResetSandboxProgress(ctx context.Context, name string) error {
	_, err := s.db(ctx).Exec(ctx, `UPDATE sandboxes SET progress = '[]', error = NULL, updated_at = now() WHERE name = $1`, name)
	return err
}

// UndeletedSandboxes lists every sandbox not deleted yet, oldest first: the
// clusters Docker may have. Failed ones are listed too, since their
// containers may remain.
func (s *Store) UndeletedSandboxes(ctx context.Context) ([]*Sandbox, error) {
	rows, err := s.db(ctx).Query(ctx, `SELECT `+sandboxColumns+` FROM sandboxes WHERE state <> 'deleted' ORDER BY created_at`)
	if err != nil {
		return nil, wrap("list sandboxes", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*Sandbox, error) { return scanSandbox(row) })
	return out, wrap("list sandboxes", err)
}

// CreatePoolSandbox records a warm-pool cluster about to be created, its
// workers sized workerMilliCPU and workerMemoryMiB (0: the backend's
// default); a workshop other than 0 keeps it for that workshop's learners.
func (s *Store) CreatePoolSandbox(ctx context.Context, name, image string, workers int, workerMilliCPU, workerMemoryMiB int64, workshop int64) error {
	_, err := s.db(ctx).Exec(ctx, `INSERT INTO sandboxes (name, pool, state, image, workers, worker_milli_cpu, worker_memory_mib, pool_workshop_id) VALUES ($1, true, 'requested', $2, $3, $4, $5, nullif($6, 0))`,
		name, image, workers, workerMilliCPU, workerMemoryMiB, workshop)
	return wrap("record pool sandbox", err)
}

// CountSandboxesByState counts sandboxes per state, for metrics.
func (s *Store) CountSandboxesByState(ctx context.Context) (map[string]int, error) {
	rows, err := s.db(ctx).Query(ctx, `SELECT state, count(*) FROM sandboxes GROUP BY state`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		out[st] = n
	}
	return out, rows.Err()
}
