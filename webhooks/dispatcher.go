package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/podpath/podpath/store"
)

// Headers of every delivery besides SignatureHeader.
const (
	EventHeader    = "X-Podpath-Event"
	DeliveryHeader = "X-Podpath-Delivery" // the event id: the same on every retry
)

// Options tune a Dispatcher; zero fields take the defaults.
type Options struct {
	// Backoff is the wait after a delivery's first failure; each further
	// failure doubles it (2 s, 4 s, 8 s, …), up to MaxBackoff. Default 2 s.
	Backoff time.Duration
	// MaxBackoff caps the wait. Default 1 h.
	MaxBackoff time.Duration
	// MaxAttempts is how many attempts a delivery gets before it is
	// failed. Default 12 (with the default backoff, about 2¼ hours).
	MaxAttempts int
	// Poll is how often the outbox is read without a poke: deliveries due
	// for a retry, or left by a process that stopped. Default 5 s.
	Poll time.Duration
	// Lease is how long a claimed delivery is held before another
	// dispatcher may take it; it must exceed the HTTP client's timeout.
	// Default 1 min.
	Lease time.Duration
	// Concurrency is how many deliveries are sent at once. Default 4.
	Concurrency int
}

// Timeout is the default HTTP client's timeout for one delivery.
const Timeout = 10 * time.Second

func (o Options) withDefaults() Options {
	if o.Backoff <= 0 {
		o.Backoff = 2 * time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Hour
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 12
	}
	if o.Poll <= 0 {
		o.Poll = 5 * time.Second
	}
	if o.Lease <= 0 {
		o.Lease = time.Minute
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	return o
}

// Delay is the wait after a delivery's attempt-th failure (1-based):
// Backoff doubled attempt-1 times, at most MaxBackoff.
func (o Options) Delay(attempt int) time.Duration {
	o = o.withDefaults()
	d := o.Backoff
	for i := 1; i < attempt && d < o.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, o.MaxBackoff)
}

// Dispatcher writes events to the outbox and sends them. Any number of
// dispatchers, in one process or several, may run on one database: each
// delivery is claimed by one at a time.
type Dispatcher struct {
	store  *store.Store
	client *http.Client
	log    *slog.Logger
	opts   Options
	owner  uuid.UUID
	poke   chan struct{}
}

// New makes a dispatcher. A nil client is one with a 10 s timeout that
// follows no redirect (a redirect is a failed delivery: register the final
// URL); a nil log is slog's default.
func New(st *store.Store, client *http.Client, log *slog.Logger, opts Options) *Dispatcher {
	if client == nil {
		client = &http.Client{Timeout: Timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if log == nil {
		log = slog.Default()
	}
	return &Dispatcher{store: st, client: client, log: log, opts: opts.withDefaults(), owner: uuid.New(), poke: make(chan struct{}, 1)}
}

// EnqueueOnce records an event for every webhook subscribed to its type
// and wakes the dispatcher; it only writes to the database, never waiting
// on a receiver. Called with the context of a store.InTx, the rows are
// part of that transaction — written with the change the event announces,
// or not at all — and the dispatcher is woken once it commits. An event
// that happens once has a key: the first call with it records the event
// (and reports true), later ones record nothing. An empty key records
// every call.
func (d *Dispatcher) EnqueueOnce(ctx context.Context, key, eventType string, data any) (bool, error) {
	if !Known(eventType) {
		return false, fmt.Errorf("webhooks: unknown event type %q (known: %s)", eventType, strings.Join(Events, ", "))
	}
	ev := Envelope{ID: uuid.New(), Type: eventType, CreatedAt: time.Now().UTC().Truncate(time.Millisecond), Data: data}
	body, err := json.Marshal(ev)
	if err != nil {
		return false, fmt.Errorf("webhooks: encode %s event: %w", eventType, err)
	}
	n, dup, err := d.store.EnqueueWebhookEvent(ctx, store.WebhookEvent{ID: ev.ID, Type: eventType, Body: body, Key: key})
	if err != nil {
		return false, err
	}
	if n > 0 {
		store.AfterCommit(ctx, d.Poke)
	}
	return !dup, nil
}

// Poke makes Run read the outbox now (Enqueue does it).
func (d *Dispatcher) Poke() {
	select {
	case d.poke <- struct{}{}:
	default:
	}
}

// Run sends due deliveries until ctx ends: at once when poked, and every
// Poll otherwise (and when a retry falls due). Deliveries in flight when ctx
// ends are released unrecorded, for the next dispatcher to send.
func (d *Dispatcher) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		next := d.drain(ctx)
		if ctx.Err() != nil {
			return
		}
		wait := d.opts.Poll
		if !next.IsZero() {
			wait = min(wait, max(time.Until(next), 0))
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-d.poke:
		case <-timer.C:
		}
	}
}

// drain sends due deliveries until there are none, and returns the
// earliest retry it scheduled (zero if none).
func (d *Dispatcher) drain(ctx context.Context) time.Time {
	var next time.Time
	var mu sync.Mutex
	for ctx.Err() == nil {
		claimed, err := d.store.ClaimDeliveries(ctx, d.owner, d.opts.Lease, d.opts.Concurrency)
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("webhooks: read the outbox", "err", err)
			}
			return next
		}
		if len(claimed) == 0 {
			return next
		}
		var wg sync.WaitGroup
		for _, c := range claimed {
			wg.Go(func() {
				if retry := d.deliver(ctx, c); !retry.IsZero() {
					mu.Lock()
					if next.IsZero() || retry.Before(next) {
						next = retry
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	return next
}

// deliver sends one claimed delivery and records the outcome; it returns
// when to retry, if it will be.
func (d *Dispatcher) deliver(ctx context.Context, c *store.ClaimedDelivery) time.Time {
	res := d.post(ctx, c)
	// The outcome is written even as the server stops: a delivery made
	// must be recorded, or it would be sent again.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if !res.Delivered && ctx.Err() != nil {
		// Cut short by the stop, not the receiver's fault: no attempt
		// counted, and the next dispatcher may take it at once.
		if err := d.store.ReleaseDelivery(wctx, d.owner, c.ID); err != nil {
			d.log.Warn("webhooks: release a delivery", "delivery", c.ID, "err", err)
		}
		return time.Time{}
	}
	attempt := c.Attempts + 1
	if !res.Delivered && attempt < d.opts.MaxAttempts {
		res.Retry = time.Now().Add(d.opts.Delay(attempt))
	}
	ok, err := d.store.RecordDelivery(wctx, d.owner, c.ID, res)
	switch {
	case err != nil:
		d.log.Warn("webhooks: record a delivery", "delivery", c.ID, "err", err)
	case !ok:
		d.log.Warn("webhooks: the outcome of a delivery was not recorded: its webhook was deleted meanwhile, or its lease ran out and another dispatcher took it (keep the lease above the HTTP timeout)", "delivery", c.ID)
	case res.Delivered:
		d.log.Debug("webhook delivered", "delivery", c.ID, "event", c.EventID, "type", c.EventType, "attempt", attempt)
	case res.Retry.IsZero():
		d.log.Warn("webhook delivery failed for good", "delivery", c.ID, "webhook", c.WebhookID, "attempts", attempt, "err", res.Error)
	default:
		d.log.Info("webhook delivery failed; will retry", "delivery", c.ID, "webhook", c.WebhookID, "attempt", attempt, "retry", res.Retry.Format(time.RFC3339), "err", res.Error)
	}
	return res.Retry
}

// post makes one attempt.
func (d *Dispatcher) post(ctx context.Context, c *store.ClaimedDelivery) store.DeliveryResult {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(c.Body))
	if err != nil {
		return store.DeliveryResult{Error: "the webhook URL cannot be requested: " + err.Error() + "; delete the webhook and register a valid URL"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "podpath-webhooks/1")
	req.Header.Set(EventHeader, c.EventType)
	req.Header.Set(DeliveryHeader, c.EventID.String())
	req.Header.Set(SignatureHeader, Sign([]byte(c.Secret), time.Now(), c.Body))
	res, err := d.client.Do(req)
	if err != nil {
		var msg string
		switch {
		case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
			msg = fmt.Sprintf("the receiver did not answer within %s; answer 2xx at once and do the work afterwards", d.client.Timeout)
		default:
			msg = "the receiver could not be reached: " + err.Error()
		}
		return store.DeliveryResult{Error: clean(msg)}
	}
	defer res.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(res.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		return store.DeliveryResult{Delivered: true, StatusCode: res.StatusCode}
	}
	msg := fmt.Sprintf("the receiver answered %s, not 2xx", res.Status)
	if loc := res.Header.Get("Location"); res.StatusCode >= 300 && res.StatusCode < 400 && loc != "" {
		msg += fmt.Sprintf(" (a redirect to %s: register that URL instead)", loc)
	}
	if s := strings.TrimSpace(string(snippet)); s != "" {
		msg += ": " + s
	}
	return store.DeliveryResult{StatusCode: res.StatusCode, Error: clean(msg)}
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// clean makes text fit for a Postgres text column: valid UTF-8, no NUL,
// at most 1000 bytes.
func clean(s string) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "?")
	if len(s) > 1000 {
		s = strings.ToValidUTF8(s[:1000], "") + "…"
	}
	return s
}
