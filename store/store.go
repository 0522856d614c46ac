// Package store is podpath's Postgres access: plain SQL through pgx, one
// file per entity, transactions where a change touches two tables.
package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/migrations"
)

// ErrNotFound is returned when a row does not exist. The store's errors
// are errs of a kind (the server gives each kind its status); a caller
// that knows more rewords them (errs.Reword).
var ErrNotFound error = &errs.Error{Kind: errs.NotFound, Message: "not found", Key: "errnotfound"}

// Store is the database.
type Store struct {
	pool *pgxpool.Pool
}

// versionTable is where tern records the schema version.
const versionTable = "schema_version"

// Open connects to the database at url and checks it answers.
func Open(ctx context.Context, url string) (*Store, error) {
	if url == "" {
		return nil, errors.New("no database configured: set DATABASE_URL (e.g. postgres://podpath:podpath@localhost/podpath)")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	cfg.MaxConns = 20
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to Postgres: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to Postgres at %s: %w (is it running? scripts/quickstart and scripts/test start it)", redact(cfg), err)
	}
	return &Store{pool: pool}, nil
}

func redact(cfg *pgxpool.Config) string {
	return fmt.Sprintf("%s@%s:%d/%s", cfg.ConnConfig.User, cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
}

// Close releases the connections.
func (s *Store) Close() { s.pool.Close() }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// SchemaVersion is the number of migrations this binary knows.
func SchemaVersion() int {
	entries, _ := fs.Glob(migrations.FS, "*.sql")
	n := 0
	for _, e := range entries {
		if v, err := strconv.Atoi(strings.SplitN(e, "_", 2)[0]); err == nil && v > n {
			n = v
		}
	}
	return n
}

// ErrSchemaTooNew means the database was migrated by a newer podpath.
var ErrSchemaTooNew = errors.New("database schema is newer than this binary")

// Migrate applies the embedded migrations. A database whose schema is newer
// than this binary knows is refused, not touched.
func (s *Store) Migrate(ctx context.Context) (from, to int, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Release()
	m, err := migrate.NewMigrator(ctx, conn.Conn(), versionTable)
	if err != nil {
		return 0, 0, fmt.Errorf("prepare migrations: %w", err)
	}
	if err := m.LoadMigrations(migrations.FS); err != nil {
		return 0, 0, fmt.Errorf("load migrations: %w", err)
	}
	cur, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("read schema version: %w", err)
	}
	known := int32(len(m.Migrations))
	if cur > known {
		return int(cur), int(cur), fmt.Errorf("%w: the database is at version %d and this podpath knows %d; run the newer podpath, or restore a backup made for this version", ErrSchemaTooNew, cur, known)
	}
	if err := m.Migrate(ctx); err != nil {
		return int(cur), int(cur), fmt.Errorf("migrate: %w", err)
	}
	return int(cur), int(known), nil
}

// CheckSchema fails unless the database is at exactly the version this
// binary knows.
func (s *Store) CheckSchema(ctx context.Context) error {
	var v int
	err := s.db(ctx).QueryRow(ctx, "SELECT version FROM "+versionTable).Scan(&v)
	if err != nil {
		return fmt.Errorf("read schema version (run `podpath migrate`): %w", err)
	}
	switch want := SchemaVersion(); {
	case v > want:
		return fmt.Errorf("%w: the database is at version %d and this podpath knows %d", ErrSchemaTooNew, v, want)
	case v < want:
		return fmt.Errorf("database schema is at version %d, this podpath needs %d: run `podpath migrate`", v, want)
	}
	return nil
}

// InstanceID is this installation's short random id, made by the first
// migration.
func (s *Store) InstanceID(ctx context.Context) (string, error) {
	var id string
	err := s.db(ctx).QueryRow(ctx, "SELECT id FROM instance").Scan(&id)
	return id, err
}

// querier runs statements: the pool, or the transaction of an InTx.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// inTx is the transaction an InTx context carries, with what to run once
// it commits.
type inTx struct {
	tx    pgx.Tx
	after []func()
}

type txKey struct{}

func txOf(ctx context.Context) *inTx {
	t, _ := ctx.Value(txKey{}).(*inTx)
	return t
}

// db is what a store call runs its statements on: the transaction ctx
// carries (InTx), or the pool.
func (s *Store) db(ctx context.Context) querier {
	if t := txOf(ctx); t != nil {
		return t.tx
	}
	return s.pool
}

// InTx runs fn in one transaction: every store call made with the context
// fn is given is part of it, so a change and what it announces (webhook
// events in the outbox) are written together or not at all. An error
// from fn, or from the commit, undoes everything fn wrote. Within another
// InTx it is a savepoint. fn must not hand its context to work that
// outlives it, nor use it from two goroutines at once.
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if t := txOf(ctx); t != nil {
		n := len(t.after)
		err := pgx.BeginFunc(ctx, t.tx, func(pgx.Tx) error { return fn(ctx) })
		if err != nil {
			t.after = t.after[:n] // what the savepoint undid will not commit
		}
		return err
	}
	t := &inTx{}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		t.tx = tx
		return fn(context.WithValue(ctx, txKey{}, t))
	})
	if err != nil {
		return err
	}
	for _, f := range t.after {
		f()
	}
	return nil
}

// AfterCommit runs fn once the transaction ctx carries has committed, and
// not at all if it rolls back; outside InTx it runs fn at once.
func AfterCommit(ctx context.Context, fn func()) {
	if t := txOf(ctx); t != nil {
		t.after = append(t.after, fn)
		return
	}
	fn()
}

// tx runs fn in a transaction (a savepoint within InTx).
func (s *Store) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	if t := txOf(ctx); t != nil {
		return pgx.BeginFunc(ctx, t.tx, fn)
	}
	return pgx.BeginFunc(ctx, s.pool, fn)
}

func isUniqueViolation(err error, constraint string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && (constraint == "" || pe.ConstraintName == constraint)
}

func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	return err
}

// wrap says which store operation failed ("store: record attempt: ..."),
// keeping the cause for errors.Is.
func wrap(op string, err error) error {
	if err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrActiveSession) {
		return err
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

// ListenConn is a connection of its own, out of the pool, for LISTEN (the
// bus): a pooled connection may be handed to others or closed by the pool.
func (s *Store) ListenConn(ctx context.Context) (*pgx.Conn, error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return c.Hijack(), nil
}

// Notify sends a notification on channel.
func (s *Store) Notify(ctx context.Context, channel, payload string) error {
	_, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, payload)
	return err
}

// TrafficKey is the installation's key for signing traffic-port tokens
// (server/traffic.go): the one stored, or fresh, stored now, when there is
// none yet. Every replica reads the same.
func (s *Store) TrafficKey(ctx context.Context, fresh []byte) ([]byte, error) {
	var key []byte
	err := s.db(ctx).QueryRow(ctx, "UPDATE instance SET traffic_key = COALESCE(traffic_key, $1) RETURNING traffic_key", fresh).Scan(&key)
	return key, err
}
