package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Replica is one podpath serve process on this database.
type Replica struct {
	ID          uuid.UUID
	Host        string
	Version     string
	StartedAt   time.Time
	HeartbeatAt time.Time
}

// BeatReplica records that the replica is alive, registering it the first
// time.
func (s *Store) BeatReplica(ctx context.Context, id uuid.UUID, host, version string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO replicas (id, host, version) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()`, id, host, version)
	return wrap("replica heartbeat", err)
}

// RemoveReplica forgets a replica that stops.
func (s *Store) RemoveReplica(ctx context.Context, id uuid.UUID) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM replicas WHERE id = $1`, id)
	return wrap("remove replica", err)
}

// Replicas lists the replicas whose heartbeat is younger than live, and
// removes the others.
func (s *Store) Replicas(ctx context.Context, live time.Duration) ([]*Replica, error) {
	if _, err := s.pool.Exec(ctx, `DELETE FROM replicas WHERE heartbeat_at < now() - $1::interval`, live.String()); err != nil {
		return nil, wrap("forget stale replicas", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT id, host, version, started_at, heartbeat_at FROM replicas ORDER BY started_at`)
	if err != nil {
		return nil, wrap("list replicas", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Replica, error) {
		var x Replica
		err := r.Scan(&x.ID, &x.Host, &x.Version, &x.StartedAt, &x.HeartbeatAt)
		return &x, err
	})
}

// Lease is who holds a lease.
type Lease struct {
	Name      string
	Holder    uuid.UUID
	Epoch     int64
	ExpiresAt time.Time
}

// TakeLease gives holder the lease for ttl when it is free, expired or
// holder's already (a renewal), and says whether it did. The epoch grows
// whenever the holder changes.
func (s *Store) TakeLease(ctx context.Context, name string, holder uuid.UUID, ttl time.Duration) (epoch int64, ok bool, err error) {
	err = s.pool.QueryRow(ctx, `INSERT INTO leases (name, holder, epoch, expires_at) VALUES ($1, $2, 1, now() + $3::interval)
		ON CONFLICT (name) DO UPDATE SET holder = $2,
			epoch = leases.epoch + (leases.holder <> $2)::int,
			expires_at = now() + $3::interval
		WHERE leases.holder = $2 OR leases.expires_at < now()
		RETURNING epoch`, name, holder, ttl.String()).Scan(&epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, wrap("take lease "+name, err)
	}
	return epoch, true, nil
}

// DropLease gives the lease up, if holder has it.
func (s *Store) DropLease(ctx context.Context, name string, holder uuid.UUID) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM leases WHERE name = $1 AND holder = $2`, name, holder)
	return wrap("drop lease "+name, err)
}

// LeaseOf says who holds a lease now; ErrNotFound when nobody does.
func (s *Store) LeaseOf(ctx context.Context, name string) (*Lease, error) {
	var l Lease
	err := s.pool.QueryRow(ctx, `SELECT name, holder, epoch, expires_at FROM leases WHERE name = $1 AND expires_at > now()`, name).
		Scan(&l.Name, &l.Holder, &l.Epoch, &l.ExpiresAt)
	if err != nil {
		return nil, notFound(err)
	}
	return &l, nil
}

// LeaderAlive reports whether a replica other than self holds the lease
// and beat within the last beat (a holder killed a moment ago still holds
// its lease until it expires, but beats no more).
func (s *Store) LeaderAlive(ctx context.Context, name string, beat time.Duration, self uuid.UUID) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM leases l JOIN replicas r ON r.id = l.holder
		WHERE l.name = $1 AND l.holder <> $3 AND l.expires_at > now() AND r.heartbeat_at > now() - $2::interval)`, name, beat.String(), self).Scan(&ok)
	return ok, wrap("leader alive", err)
}
