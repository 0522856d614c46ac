package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/progress"
	"github.com/podpath/podpath/session"
	"github.com/podpath/podpath/store"
	"github.com/podpath/podpath/webhooks"
)

// --- events ---

// Events are written to the outbox in the transaction of the change they
// announce (a store.InTx: the engine's for starts and attempts, the
// workshop's end here), so a change is never stored without its event nor
// an event without its change; an error here fails the change, which the
// user can try again. The dispatcher sends them after the commit.

// emit records a webhook event for delivery.
func (s *Server) emit(ctx context.Context, eventType string, data any) error {
	return s.emitOnce(ctx, "", eventType, data)
}

// emitOnce is emit for an event that happens once per key.
func (s *Server) emitOnce(ctx context.Context, key, eventType string, data any) error {
	if _, err := s.hooks.EnqueueOnce(ctx, key, eventType, data); err != nil {
		return fmt.Errorf("webhooks: record a %s event: %w", eventType, err)
	}
	return nil
}

func (s *Server) hookUser(ctx context.Context, id int64) webhooks.User {
	u := webhooks.User{ID: id}
	if user, err := s.store.UserByID(ctx, id); err == nil {
		u.Email = user.Email
	} else {
		s.log.Warn("webhooks: read the event's user", "user", id, "err", err)
	}
	return u
}

// labStarted hears every start of a lab session (session.Engine.OnStarted):
// lab.started.
func (s *Server) labStarted(ctx context.Context, sess *store.LabSession, _ session.Start) error {
	return s.emit(ctx, webhooks.LabStarted, webhooks.LabStartedData{
		User: s.hookUser(ctx, sess.UserID), LabID: sess.LabID, SessionID: sess.ID.String(), WorkshopID: sess.WorkshopID,
	})
}

// attempted hears every check and skip (session.Engine.OnAttempted):
// step.passed for a check that passed the step (once per step and
// session: checking a passed step again sends nothing), and lab.completed,
// once per session, when it was the last step to pass or skip.
func (s *Server) attempted(ctx context.Context, sess *store.LabSession, a *store.Attempt) error {
	if !a.Passed {
		return nil
	}
	l := s.engine.SessionLab(sess)
	if l == nil {
		return nil
	}
	statuses, err := s.store.StepStatuses(ctx, sess.ID)
	if err != nil {
		return fmt.Errorf("webhooks: read step statuses: %w", err)
	}
	user := s.hookUser(ctx, sess.UserID)
	if a.Kind == store.AttemptCheck {
		if err := s.emitOnce(ctx, "step.passed:"+sess.ID.String()+":"+a.StepID, webhooks.StepPassed, webhooks.StepPassedData{
			User: user, LabID: sess.LabID, SessionID: sess.ID.String(), WorkshopID: sess.WorkshopID,
			StepID: a.StepID, Attempts: statuses[a.StepID].Attempts,
		}); err != nil {
			return err
		}
	}
	sum := progress.Summarize(l, progress.FromStatuses(statuses), sess.CreatedAt)
	if sum == nil {
		return nil
	}
	if err := s.emitOnce(ctx, "lab.completed:"+sess.ID.String(), webhooks.LabCompleted, webhooks.LabCompletedData{
		User: user, LabID: sess.LabID, SessionID: sess.ID.String(), WorkshopID: sess.WorkshopID,
		CompletedAt: sum.FinishedAt.UTC(), TimeSpentSeconds: int64(sum.Duration / time.Second), Attempts: sum.Attempts, Skips: len(sum.Skipped),
	}); err != nil {
		return err
	}
	return s.tracksCompleted(ctx, sess, user)
}

// tracksCompleted sends track.completed, once per learner and track, for
// every track of the session's lab whose labs the learner has now all
// completed (by the rule of reports, progress.go).
func (s *Server) tracksCompleted(ctx context.Context, sess *store.LabSession, user webhooks.User) error {
	var tracks []*labs.Track
	for _, t := range s.tracks {
		if slices.Contains(t.Labs, sess.LabID) {
			tracks = append(tracks, t)
		}
	}
	if len(tracks) == 0 {
		return nil
	}
	all, _, err := s.loadProgress(ctx, []int64{sess.UserID})
	if err != nil {
		return fmt.Errorf("webhooks: read progress: %w", err)
	}
	for _, t := range tracks {
		info, _ := s.trackLabs(t.ID)
		// A track is completed as an assignment of it would be.
		p := progress.OfAssignment(info.labs, time.Time{}, time.Now(), all[sess.UserID])
		if p.Status == progress.Completed {
			if err := s.emitOnce(ctx, "track.completed:"+strconv.FormatInt(sess.UserID, 10)+":"+t.ID, webhooks.TrackCompleted,
				webhooks.TrackCompletedData{User: user, TrackID: t.ID, CompletedAt: p.CompletedAt.UTC()}); err != nil {
				return err
			}
		}
	}
	return nil
}

// workshopEnded announces the end of a workshop, in its transaction:
// workshop.ended, once.
func (s *Server) workshopEnded(ctx context.Context, w *store.Workshop) error {
	return s.emitOnce(ctx, "workshop.ended:"+strconv.FormatInt(w.ID, 10), webhooks.WorkshopEnded, webhooks.WorkshopEndedData{
		WorkshopID: w.ID, Title: w.Title, Learners: w.Learners,
	})
}

// --- admin API ---

// WebhookView is a webhook as the API shows it: never its secret, only
// the secret's last 4 characters, to tell secrets apart.
type WebhookView struct {
	ID         int64     `json:"id"`
	URL        string    `json:"url"`
	Events     []string  `json:"events"`
	SecretHint string    `json:"secretHint"`
	CreatedBy  *int64    `json:"createdBy,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
}

func webhookView(w *store.Webhook) WebhookView {
	hint := w.Secret
	if r := []rune(hint); len(r) > 4 {
		hint = "…" + string(r[len(r)-4:])
	}
	return WebhookView{ID: w.ID, URL: w.URL, Events: w.Events, SecretHint: hint, CreatedBy: w.CreatedBy, CreatedAt: w.CreatedAt}
}

// DeliveryView is one event's delivery to a webhook.
type DeliveryView struct {
	ID             int64   `json:"id"`
	EventID        string  `json:"eventId"`
	Type           string  `json:"type"`
	Status         string  `json:"status"`
	Attempts       int     `json:"attempts"`
	LastStatusCode *int    `json:"lastStatusCode"`
	LastError      *string `json:"lastError"`
	// NextAttemptAt is set while the delivery is pending.
	NextAttemptAt *time.Time `json:"nextAttemptAt"`
	DeliveredAt   *time.Time `json:"deliveredAt"`
	CreatedAt     time.Time  `json:"createdAt"`
}

func deliveryView(d *store.Delivery) DeliveryView {
	v := DeliveryView{ID: d.ID, EventID: d.EventID.String(), Type: d.EventType, Status: d.Status, Attempts: d.Attempts,
		LastStatusCode: d.LastStatusCode, LastError: d.LastError, DeliveredAt: d.DeliveredAt, CreatedAt: d.CreatedAt}
	if d.Status == store.DeliveryPending {
		next := d.NextAttemptAt
		v.NextAttemptAt = &next
	}
	return v
}

type webhookRequest struct {
	URL    string   `json:"url"`
	Secret string   `json:"secret"`
	Events []string `json:"events"`
}

// Secret lengths a webhook accepts.
const (
	minWebhookSecret = 16
	maxWebhookSecret = 256
	maxWebhookURL    = 2000
)

// checkWebhook says what to fix in a registration, or returns its URL and
// events cleaned up (events de-duplicated, in the order sent).
func checkWebhook(r *webhookRequest) (string, []string, error) {
	bad := func(format string, args ...any) (string, []string, error) {
		return "", nil, errs.E(errs.Invalid, fmt.Sprintf(format, args...))
	}
	raw := strings.TrimSpace(r.URL)
	if raw == "" {
		return bad(`send "url": the http:// or https:// address podpath POSTs events to`)
	}
	if len(raw) > maxWebhookURL {
		return bad(`"url" is too long (%d characters at most)`, maxWebhookURL)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return bad(`"url" %.100q is not a URL: %v`, raw, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return bad(`"url" %.100q must start with http:// or https:// (podpath POSTs JSON to it)`, raw)
	case u.Host == "" || u.Hostname() == "":
		return bad(`"url" %.100q has no host; send an absolute URL like https://hooks.example.com/podpath`, raw)
	case u.User != nil:
		return bad(`"url" must not hold a user name or password; the receiver checks the X-Podpath-Signature header instead`)
	case u.Fragment != "":
		return bad(`"url" must not have a #fragment (it is never sent to the receiver)`)
	}
	switch n := len(r.Secret); {
	case strings.TrimSpace(r.Secret) == "":
		return bad(`send "secret": the key deliveries are signed with (for example the output of: openssl rand -hex 32)`)
	case n < minWebhookSecret:
		return bad(`"secret" is %d characters; use at least %d (for example the output of: openssl rand -hex 32)`, n, minWebhookSecret)
	case n > maxWebhookSecret:
		return bad(`"secret" is too long (%d characters at most)`, maxWebhookSecret)
	}
	if len(r.Events) == 0 {
		return bad(`send "events": a list of the event types to send, from: %s`, strings.Join(webhooks.Events, ", "))
	}
	var events []string
	for _, e := range r.Events {
		if !webhooks.Known(e) {
			return bad(`%.60q is not an event type; "events" takes: %s`, e, strings.Join(webhooks.Events, ", "))
		}
		if !slices.Contains(events, e) {
			events = append(events, e)
		}
	}
	return u.String(), events, nil
}

// requireAdminAPI lets admins only through an API route.
func (s *Server) requireAdminAPI(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if u := currentUser(c); u == nil || u.Role != store.RoleAdmin {
			return errs.E(errs.Forbidden, "only admins may manage webhooks; sign in with an admin account (an admin can make one with: podpath user role --email YOU --role admin)")
		}
		return next(c)
	}
}

func (s *Server) apiCreateWebhook(c echo.Context) error {
	var req webhookRequest
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	u, events, err := checkWebhook(&req)
	if err != nil {
		return err
	}
	w, err := s.store.CreateWebhook(c.Request().Context(), u, req.Secret, events, currentUser(c).ID)
	if err != nil {
		return err
	}
	s.log.Info("webhook registered", "webhook", w.ID, "url", w.URL, "events", w.Events, "by", currentUser(c).ID)
	return c.JSON(http.StatusCreated, webhookView(w))
}

func (s *Server) apiWebhooks(c echo.Context) error {
	list, err := s.store.Webhooks(c.Request().Context())
	if err != nil {
		return err
	}
	out := make([]WebhookView, 0, len(list))
	for _, w := range list {
		out = append(out, webhookView(w))
	}
	return c.JSON(http.StatusOK, out)
}

// adminWebhook is the webhook named in the path, deleted or not.
func (s *Server) adminWebhook(c echo.Context) (*store.Webhook, error) {
	id, err := pathID(c, "id", "webhook")
	if err != nil {
		return nil, err
	}
	w, err := s.store.WebhookByID(c.Request().Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errs.Reword(err, fmt.Sprintf("no webhook %d; GET /api/admin/webhooks lists them", id))
	}
	return w, err
}

func (s *Server) apiDeleteWebhook(c echo.Context) error {
	w, err := s.adminWebhook(c)
	if err != nil {
		return err
	}
	if err := s.store.DisableWebhook(c.Request().Context(), w.ID); errors.Is(err, store.ErrNotFound) {
		return errs.Reword(err, fmt.Sprintf("webhook %d was already deleted", w.ID))
	} else if err != nil {
		return err
	}
	s.log.Info("webhook deleted", "webhook", w.ID, "by", currentUser(c).ID)
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) apiWebhookDeliveries(c echo.Context) error {
	w, err := s.adminWebhook(c)
	if err != nil {
		return err
	}
	limit := 100
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return errs.E(errs.Invalid, fmt.Sprintf("limit %.20q must be a number from 1 to 1000", v))
		}
		limit = n
	}
	list, err := s.store.WebhookDeliveries(c.Request().Context(), w.ID, limit)
	if err != nil {
		return err
	}
	out := make([]DeliveryView, 0, len(list))
	for _, d := range list {
		out = append(out, deliveryView(d))
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) apiRetryDelivery(c echo.Context) error {
	w, err := s.adminWebhook(c)
	if err != nil {
		return err
	}
	if w.DisabledAt != nil {
		return errs.E(errs.Conflict, fmt.Sprintf("webhook %d was deleted; register the URL again to receive events", w.ID))
	}
	id, err := pathID(c, "delivery", "delivery")
	if err != nil {
		return err
	}
	d, err := s.store.RetryDelivery(c.Request().Context(), w.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return errs.Reword(err, fmt.Sprintf("webhook %d has no delivery %d left to retry (delivered ones are not sent again); GET /api/admin/webhooks/%d/deliveries lists them", w.ID, id, w.ID))
	}
	if err != nil {
		return err
	}
	s.hooks.Poke()
	return c.JSON(http.StatusAccepted, deliveryView(d))
}
