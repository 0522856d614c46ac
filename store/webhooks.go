package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Webhook delivery statuses.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// Webhook is a URL an admin registered for some event types. Secret signs
// the deliveries; the API never shows it.
type Webhook struct {
	ID         int64
	URL        string
	Secret     string
	Events     []string
	CreatedBy  *int64
	CreatedAt  time.Time
	DisabledAt *time.Time
}

const webhookColumns = `id, url, secret, events, created_by, created_at, disabled_at`

func scanWebhook(row interface{ Scan(...any) error }) (*Webhook, error) {
	var w Webhook
	if err := row.Scan(&w.ID, &w.URL, &w.Secret, &w.Events, &w.CreatedBy, &w.CreatedAt, &w.DisabledAt); err != nil {
		return nil, notFound(err)
	}
	return &w, nil
}

// CreateWebhook registers a URL for the event types.
func (s *Store) CreateWebhook(ctx context.Context, url, secret string, events []string, createdBy int64) (*Webhook, error) {
	w, err := scanWebhook(s.db(ctx).QueryRow(ctx, `
		INSERT INTO webhooks (url, secret, events, created_by) VALUES ($1, $2, $3, $4)
		RETURNING `+webhookColumns, url, secret, events, createdBy))
	return w, wrap("create webhook", err)
}

// Webhooks lists the webhooks not deleted, oldest first.
func (s *Store) Webhooks(ctx context.Context) ([]*Webhook, error) {
	rows, err := s.db(ctx).Query(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE disabled_at IS NULL ORDER BY id`)
	if err != nil {
		return nil, wrap("list webhooks", err)
	}
	defer rows.Close()
	var out []*Webhook
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, wrap("list webhooks", err)
		}
		out = append(out, w)
	}
	return out, wrap("list webhooks", rows.Err())
}

// WebhookByID returns a webhook, deleted or not.
func (s *Store) WebhookByID(ctx context.Context, id int64) (*Webhook, error) {
	w, err := scanWebhook(s.db(ctx).QueryRow(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = $1`, id))
	return w, wrap("read webhook", err)
}

// DisableWebhook deletes a webhook from the admin's view: nothing more is
// sent to it, its pending deliveries fail, and its delivery history stays.
// An unknown or already deleted webhook is ErrNotFound.
func (s *Store) DisableWebhook(ctx context.Context, id int64) error {
	return wrap("delete webhook", s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE webhooks SET disabled_at = now() WHERE id = $1 AND disabled_at IS NULL`, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		_, err = tx.Exec(ctx, `
			UPDATE webhook_deliveries SET status = 'failed', last_error = 'the webhook was deleted', locked_until = NULL, locked_by = NULL
			WHERE webhook_id = $1 AND status = 'pending'`, id)
		return err
	}))
}

// WebhookEvent is an event to send: its body is the exact JSON every
// subscribed webhook receives. Key, when set, makes the event happen once:
// a second event with the same key writes nothing.
type WebhookEvent struct {
	ID   uuid.UUID
	Type string
	Body []byte
	Key  string
}

// EnqueueWebhookEvent writes one pending delivery per webhook subscribed to
// the event's type, and returns how many. With a key already recorded it
// writes nothing and returns dup true.
func (s *Store) EnqueueWebhookEvent(ctx context.Context, ev WebhookEvent) (n int, dup bool, err error) {
	err = s.tx(ctx, func(tx pgx.Tx) error {
		if ev.Key != "" {
			tag, err := tx.Exec(ctx, `INSERT INTO webhook_event_keys (key, event_id) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`, ev.Key, ev.ID)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				dup = true
				return nil
			}
		}
		tag, err := tx.Exec(ctx, `
			INSERT INTO webhook_deliveries (event_id, webhook_id, event_type, body)
			SELECT $1, id, $2, $3 FROM webhooks WHERE disabled_at IS NULL AND $2 = ANY (events)`,
			ev.ID, ev.Type, string(ev.Body))
		n = int(tag.RowsAffected())
		return err
	})
	return n, dup, wrap("enqueue webhook event", err)
}

// Delivery is one event on its way to one webhook.
type Delivery struct {
	ID             int64
	EventID        uuid.UUID
	WebhookID      int64
	EventType      string
	Body           []byte
	Status         string
	Attempts       int
	NextAttemptAt  time.Time
	LastStatusCode *int
	LastError      *string
	DeliveredAt    *time.Time
	CreatedAt      time.Time
}

// ClaimedDelivery is a delivery a dispatcher holds, with where to send it.
type ClaimedDelivery struct {
	Delivery
	URL    string
	Secret string
}

// ClaimDeliveries takes up to limit due pending deliveries of webhooks not
// deleted, for lease: until it ends no other claim returns them. Rows
// another transaction is claiming are skipped, not waited for, so two
// dispatchers never hold the same delivery at once.
func (s *Store) ClaimDeliveries(ctx context.Context, owner uuid.UUID, lease time.Duration, limit int) ([]*ClaimedDelivery, error) {
	rows, err := s.db(ctx).Query(ctx, `
		UPDATE webhook_deliveries d
		SET locked_until = now() + make_interval(secs => $2), locked_by = $1
		FROM (
			SELECT d.id, w.url, w.secret
			FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
			WHERE d.status = 'pending' AND d.next_attempt_at <= now()
			  AND (d.locked_until IS NULL OR d.locked_until < now()) AND w.disabled_at IS NULL
			ORDER BY d.next_attempt_at, d.id
			LIMIT $3
			FOR UPDATE OF d SKIP LOCKED
		) c
		WHERE d.id = c.id
		RETURNING d.id, d.event_id, d.webhook_id, d.event_type, d.body, d.status, d.attempts, d.next_attempt_at,
			d.last_status_code, d.last_error, d.delivered_at, d.created_at, c.url, c.secret`,
		owner, lease.Seconds(), limit)
	if err != nil {
		return nil, wrap("claim webhook deliveries", err)
	}
	defer rows.Close()
	var out []*ClaimedDelivery
	for rows.Next() {
		var c ClaimedDelivery
		var body string
		if err := rows.Scan(&c.ID, &c.EventID, &c.WebhookID, &c.EventType, &body, &c.Status, &c.Attempts, &c.NextAttemptAt,
			&c.LastStatusCode, &c.LastError, &c.DeliveredAt, &c.CreatedAt, &c.URL, &c.Secret); err != nil {
			return nil, wrap("claim webhook deliveries", err)
		}
		c.Body = []byte(body)
		out = append(out, &c)
	}
	return out, wrap("claim webhook deliveries", rows.Err())
}

// DeliveryResult is what one attempt at a delivery came to.
type DeliveryResult struct {
	// Delivered is a 2xx answer.
	Delivered bool
	// StatusCode is the receiver's answer, 0 when there was none.
	StatusCode int
	// Error says why it failed (empty when delivered).
	Error string
	// Retry is when to try again; zero gives up (status failed).
	Retry time.Time
}

// RecordDelivery records an attempt by the dispatcher owner at a delivery
// it claimed and releases the claim. It reports false (and writes nothing)
// when the claim was no longer owner's: its lease ran out and another
// dispatcher took the row.
func (s *Store) RecordDelivery(ctx context.Context, owner uuid.UUID, id int64, r DeliveryResult) (bool, error) {
	var code *int
	if r.StatusCode != 0 {
		code = &r.StatusCode
	}
	var msg *string
	if r.Error != "" {
		msg = &r.Error
	}
	status := DeliveryPending
	var next *time.Time
	switch {
	case r.Delivered:
		status = DeliveryDelivered
	case r.Retry.IsZero():
		status = DeliveryFailed
	default:
		next = &r.Retry
	}
	tag, err := s.db(ctx).Exec(ctx, `
		UPDATE webhook_deliveries
		SET status = $3, attempts = attempts + 1, last_status_code = $4, last_error = $5,
			next_attempt_at = coalesce($6, next_attempt_at),
			delivered_at = CASE WHEN $3 = 'delivered' THEN now() END,
			locked_until = NULL, locked_by = NULL
		WHERE id = $2 AND locked_by = $1 AND status = 'pending'`,
		owner, id, status, code, msg, next)
	if err != nil {
		return false, wrap("record webhook delivery", err)
	}
	return tag.RowsAffected() == 1, nil
}

const deliveryColumns = `id, event_id, webhook_id, event_type, body, status, attempts, next_attempt_at, last_status_code, last_error, delivered_at, created_at`

func scanDelivery(row interface{ Scan(...any) error }) (*Delivery, error) {
	var d Delivery
	var body string
	if err := row.Scan(&d.ID, &d.EventID, &d.WebhookID, &d.EventType, &body, &d.Status, &d.Attempts, &d.NextAttemptAt,
		&d.LastStatusCode, &d.LastError, &d.DeliveredAt, &d.CreatedAt); err != nil {
		return nil, notFound(err)
	}
	d.Body = []byte(body)
	return &d, nil
}

// WebhookDeliveries lists a webhook's latest deliveries, newest first.
func (s *Store) WebhookDeliveries(ctx context.Context, webhookID int64, limit int) ([]*Delivery, error) {
	rows, err := s.db(ctx).Query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY id DESC LIMIT $2`, webhookID, limit)
	if err != nil {
		return nil, wrap("list webhook deliveries", err)
	}
	defer rows.Close()
	var out []*Delivery
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, wrap("list webhook deliveries", err)
		}
		out = append(out, d)
	}
	return out, wrap("list webhook deliveries", rows.Err())
}

// RetryDelivery makes a delivery of a webhook not deleted due now: a
// failed one gets one more attempt, a pending one is sent without waiting
// for its backoff. A delivered one, or one of another webhook, is
// ErrNotFound.
func (s *Store) RetryDelivery(ctx context.Context, webhookID, id int64) (*Delivery, error) {
	d, err := scanDelivery(s.db(ctx).QueryRow(ctx, `
		UPDATE webhook_deliveries d SET status = 'pending', next_attempt_at = now()
		FROM webhooks w
		WHERE d.id = $2 AND d.webhook_id = $1 AND w.id = d.webhook_id AND w.disabled_at IS NULL AND d.status <> 'delivered'
		RETURNING d.id, d.event_id, d.webhook_id, d.event_type, d.body, d.status, d.attempts, d.next_attempt_at,
			d.last_status_code, d.last_error, d.delivered_at, d.created_at`, webhookID, id))
	return d, wrap("retry webhook delivery", err)
}

// ReleaseDelivery gives up owner's claim on a delivery without recording
// an attempt (the dispatcher is stopping), so another may send it at once.
func (s *Store) ReleaseDelivery(ctx context.Context, owner uuid.UUID, id int64) error {
	_, err := s.db(ctx).Exec(ctx, `UPDATE webhook_deliveries SET locked_until = NULL, locked_by = NULL WHERE id = $1 AND locked_by = $2`, id, owner)
	return wrap("release webhook delivery", err)
}
