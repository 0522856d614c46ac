package store

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Bucket names a token bucket and its limit: PerMinute tokens come back a
// minute, up to Burst. A bucket that has no row is full.
type Bucket struct {
	Key       string
	PerMinute float64
	Burst     int
}

// level is a bucket's tokens at $now, refilled since at and capped at its
// burst (a clock behind another replica's refills nothing).
const level = `LEAST(burst, tokens + GREATEST(0, EXTRACT(EPOCH FROM ($1::timestamptz - at))) * per_minute / 60.0)`

// sortedBuckets orders buckets by key and drops repeats, so transactions
// lock rows in one order and cannot deadlock.
func sortedBuckets(bs []Bucket) []Bucket {
	bs = slices.Clone(bs)
	slices.SortFunc(bs, func(a, b Bucket) int { return strings.Compare(a.Key, b.Key) })
	return slices.CompactFunc(bs, func(a, b Bucket) bool { return a.Key == b.Key })
}

func bucketKeys(bs []Bucket) []string {
	keys := make([]string, len(bs))
	for i, b := range bs {
		keys[i] = b.Key
	}
	return keys
}

// rateLockClass is the first key of the advisory locks TakeTokens takes,
// one per bucket (the second is the hash of the bucket's key).
const rateLockClass = "7317"

// TakeTokens takes one token from every bucket if each has one at now, and
// none otherwise: a refused request drains no bucket and makes no row.
// Each bucket is locked while it decides (a transaction-scoped advisory
// lock, which holds a bucket that has no row yet too), so requests on
// several replicas at once cannot slip past a limit together.
func (s *Store) TakeTokens(ctx context.Context, now time.Time, buckets ...Bucket) (bool, error) {
	bs := sortedBuckets(buckets)
	ok := false
	err := s.tx(ctx, func(tx pgx.Tx) error {
		locks := &pgx.Batch{}
		for _, b := range bs { // in key order: no two requests wait on each other in a circle
			locks.Queue(`SELECT pg_advisory_xact_lock(`+rateLockClass+`, hashtext($1))`, b.Key)
		}
		if err := tx.SendBatch(ctx, locks).Close(); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+level+` FROM rate_buckets WHERE key = ANY($2) ORDER BY key FOR UPDATE`, now, bucketKeys(bs))
		if err != nil {
			return err
		}
		levels, err := pgx.CollectRows(rows, pgx.RowTo[float64])
		if err != nil {
			return err
		}
		for _, l := range levels {
			if l < 1 {
				return nil
			}
		}
		ok = true
		return chargeTx(ctx, tx, now, bs)
	})
	return ok, wrap("take rate tokens", err)
}

// Exhausted reports whether any bucket has less than one token at now. It
// writes nothing.
func (s *Store) Exhausted(ctx context.Context, now time.Time, buckets ...Bucket) (bool, error) {
	var n int
	err := s.db(ctx).QueryRow(ctx, `SELECT count(*) FROM rate_buckets WHERE key = ANY($2) AND `+level+` < 1`,
		now, bucketKeys(buckets)).Scan(&n)
	return n > 0, wrap("read rate buckets", err)
}

// ChargeTokens takes one token from every bucket, making the missing ones,
// even from one that has none left: it then owes, and stays exhausted
// until it has paid back. For a request that was let through (Exhausted
// said no) and turned out to count, such as a wrong join code. Requests
// let through at the same moment each pay: what slips past a limit at
// once is owed afterwards.
func (s *Store) ChargeTokens(ctx context.Context, now time.Time, buckets ...Bucket) error {
	bs := sortedBuckets(buckets)
	return wrap("charge rate tokens", s.tx(ctx, func(tx pgx.Tx) error { return chargeTx(ctx, tx, now, bs) }))
}

func chargeTx(ctx context.Context, tx pgx.Tx, now time.Time, bs []Bucket) error {
	b := &pgx.Batch{}
	for _, k := range bs {
		b.Queue(`INSERT INTO rate_buckets AS r (key, tokens, at, per_minute, burst) VALUES ($2, $4 - 1, $1, $3, $4)
			ON CONFLICT (key) DO UPDATE SET
				tokens = LEAST(EXCLUDED.burst, r.tokens + GREATEST(0, EXTRACT(EPOCH FROM ($1::timestamptz - r.at))) * EXCLUDED.per_minute / 60.0) - 1,
				at = GREATEST(r.at, $1::timestamptz), per_minute = EXCLUDED.per_minute, burst = EXCLUDED.burst`,
			now, k.Key, k.PerMinute, k.Burst)
	}
	return tx.SendBatch(ctx, b).Close()
}

// ForgetFullBuckets drops the buckets that are full again at now (a
// missing bucket is full, so this forgives nothing) and says how many.
func (s *Store) ForgetFullBuckets(ctx context.Context, now time.Time) (int64, error) {
	// Rows a request holds are skipped (dropped next time), so this never
	// waits on TakeTokens, nor it on this.
	tag, err := s.pool.Exec(ctx, `DELETE FROM rate_buckets WHERE key IN
		(SELECT key FROM rate_buckets WHERE `+level+` >= burst FOR UPDATE SKIP LOCKED)`, now)
	return tag.RowsAffected(), wrap("forget full rate buckets", err)
}

// RateBuckets counts the buckets kept.
func (s *Store) RateBuckets(ctx context.Context) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM rate_buckets`).Scan(&n)
	return n, wrap("count rate buckets", err)
}
