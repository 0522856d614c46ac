package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
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
	Name         string          `json:"name"`
	LabSessionID uuid.UUID       `json:"labSessionId"`
	State        string          `json:"state"`
	Image        string          `json:"image"`
	Workers      int             `json:"workers"`
	Nodes        json.RawMessage `json:"nodes"`
	Progress     json.RawMessage `json:"progress"`
	Error        *string         `json:"error,omitempty"`
	CreatedAt    time.Time       `json:"createdAt"`
	ReadyAt      *time.Time      `json:"readyAt,omitempty"`
	UpdatedAt    time.Time       `json:"updatedAt"`
}

const sandboxColumns = "name, lab_session_id, state, image, workers, nodes, progress, error, created_at, ready_at, updated_at"

func scanSandbox(row interface{ Scan(...any) error }) (*Sandbox, error) {
	var s Sandbox
	if err := row.Scan(&s.Name, &s.LabSessionID, &s.State, &s.Image, &s.Workers, &s.Nodes, &s.Progress, &s.Error, &s.CreatedAt, &s.ReadyAt, &s.UpdatedAt); err != nil {
		return nil, notFound(err)
	}
	return &s, nil
}

// SandboxOf finds the sandbox of a lab session.
func (s *Store) SandboxOf(ctx context.Context, labSession uuid.UUID) (*Sandbox, error) {
	return scanSandbox(s.pool.QueryRow(ctx, `SELECT `+sandboxColumns+` FROM sandboxes WHERE lab_session_id = $1`, labSession))
}

// SetSandboxState moves a sandbox to state; errMsg is kept for failed.
func (s *Store) SetSandboxState(ctx context.Context, name, state string, errMsg *string) error {
	_, err := s.pool.Exec(ctx, `
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
	_, err = s.pool.Exec(ctx, `UPDATE sandboxes SET nodes = $2, updated_at = now() WHERE name = $1`, name, b)
	return err
}

// AppendSandboxProgress adds a provisioning event.
func (s *Store) AppendSandboxProgress(ctx context.Context, name string, event any) error {
	b, err := json.Marshal(event)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `UPDATE sandboxes SET progress = progress || jsonb_build_array($2::jsonb), updated_at = now() WHERE name = $1`, name, b)
	return err
}

// ResetSandboxProgress clears the progress of a sandbox being provisioned again.
func (s *Store) ResetSandboxProgress(ctx context.Context, name string) error {
	_, err := s.pool.Exec(ctx, `UPDATE sandboxes SET progress = '[]', error = NULL, updated_at = now() WHERE name = $1`, name)
	return err
}

// LiveSandboxes lists the sandboxes that should exist in Docker: those not
// deleted or failed.
func (s *Store) LiveSandboxes(ctx context.Context) ([]*Sandbox, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+sandboxColumns+` FROM sandboxes WHERE state NOT IN ('deleted', 'failed') ORDER BY created_at`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Sandbox
	for rows.Next() {
		sb, err := scanSandbox(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, sb)
	}
	return out, rows.Err()
}

// CountSandboxesByState counts sandboxes per state, for metrics.
func (s *Store) CountSandboxesByState(ctx context.Context) (map[string]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT state, count(*) FROM sandboxes GROUP BY state`)
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
