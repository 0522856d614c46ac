// Package workshops is an instructor's class without HTTP: join codes, the
// lab sessions a workshop starts and carries progress into, its prepared
// clusters, and its end (by the instructor or by the clock). The server's
// handlers (server/workshops.go) ask it and turn its errors into answers;
// docs/WORKSHOPS.md is what an instructor does and sees.
package workshops

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/progress"
	"github.com/podpath/podpath/session"
	"github.com/podpath/podpath/store"
)

// Live is how a class tells the people watching it: the instructor's
// board and the learners' pages, on every replica.
type Live interface {
	// Publish sends an event of the workshop to its boards and pages.
	Publish(workshop int64, event string, data any)
	// EndTakeovers ends the instructor's take-overs of a session's shell.
	EndTakeovers(session uuid.UUID, by string)
}

// Class runs the workshops of one installation.
type Class struct {
	Store  *store.Store
	Engine *session.Sessions
	Labs   []*labs.Lab
	Live   Live
	Limits Limits
	// Ended writes what announces a workshop's end (the webhooks' outbox
	// rows), within the end's transaction.
	Ended func(ctx context.Context, w *store.Workshop) error
	// TakeoverTTL is how long a replica may be silent before the
	// take-overs typed through it are closed (the replica lease's TTL).
	TakeoverTTL time.Duration
	Log         *slog.Logger
}

// Shape is the cluster shape prepared for a workshop: its first lab's.
func (c *Class) Shape(w *store.Workshop) session.Shape {
	if len(w.LabIDs) > 0 {
		if l := labs.Find(c.Labs, w.LabIDs[0]); l != nil {
			return session.ShapeOf(l)
		}
	}
	return session.Shape{Workers: 1}
}

// Lifetime is how long a session of the workshop may last: until the
// workshop's end, which ends it (and says so); the few minutes more are
// for a server that was down at that moment.
func Lifetime(w *store.Workshop) time.Duration {
	return time.Until(w.EndsAt) + 2*time.Minute
}

// InWorkshop are the start options that make a session part of w.
func InWorkshop(w *store.Workshop) []session.StartOption {
	return []session.StartOption{session.WithWorkshop(w.ID), session.WithLifetime(Lifetime(w))}
}

// StartIn starts the learner's session of lab l in workshop w.
func (c *Class) StartIn(ctx context.Context, w *store.Workshop, userID int64, l *labs.Lab, opts ...session.StartOption) (*store.LabSession, error) {
	return c.Engine.Start(ctx, userID, l, append(InWorkshop(w), opts...)...)
}

// Data is what the board and the join read of a workshop: its sessions
// by learner, their step statistics, and its open take-overs.
type Data struct {
	W        *store.Workshop
	Sessions map[int64][]*store.LabSession // by learner, oldest first
	Stats    map[uuid.UUID]map[string]*store.StepStat
	// Takeovers are the open take-overs of the workshop, by session.
	Takeovers map[uuid.UUID]*store.Takeover
}

// Load reads a workshop's Data.
func Load(ctx context.Context, st *store.Store, w *store.Workshop) (*Data, error) {
	sessions, err := st.WorkshopSessions(ctx, w.ID)
	if err != nil {
		return nil, err
	}
	stats, err := st.WorkshopStepStats(ctx, w.ID)
	if err != nil {
		return nil, err
	}
	open, err := st.OpenTakeovers(ctx, w.ID)
	if err != nil {
		return nil, err
	}
	d := &Data{W: w, Sessions: map[int64][]*store.LabSession{}, Stats: stats, Takeovers: open}
	for _, sess := range sessions {
		d.Sessions[sess.UserID] = append(d.Sessions[sess.UserID], sess)
	}
	return d, nil
}

// Finished says whether the learner's last session of the lab passed or
// skipped every step.
func (d *Data) Finished(userID int64, l *labs.Lab) bool {
	var last *store.LabSession
	for _, sess := range d.Sessions[userID] {
		if sess.LabID == l.ID {
			last = sess
		}
	}
	if last == nil {
		return false
	}
	_, done := progress.Finished(l, progress.FromStats(d.Stats[last.ID]))
	return done
}

// ActiveElsewhereError: the learner has an active session outside the
// workshop, so the workshop cannot start one for them.
type ActiveElsewhereError struct {
	Workshop *store.Workshop
	Session  *store.LabSession
}

func (e *ActiveElsewhereError) Error() string {
	return fmt.Sprintf("an active session of lab %s outside the workshop (%s)", e.Session.LabID, e.Session.ID)
}

// ErrNoLabs: none of the workshop's labs is installed here.
var ErrNoLabs = errors.New("none of the workshop's labs is installed on this server")

// Session returns the learner's active session of the workshop, or starts
// one of the first of its labs they have not finished (with the progress
// of their last session of it).
func (c *Class) Session(ctx context.Context, w *store.Workshop, userID int64) (*store.LabSession, error) {
	active := func() (*store.LabSession, error) {
		a, err := c.Store.ActiveLabSession(ctx, userID)
		if err != nil {
			return nil, err
		}
		if a.WorkshopID != nil && *a.WorkshopID == w.ID {
			return a, nil
		}
		return nil, &ActiveElsewhereError{Workshop: w, Session: a}
	}
	if a, err := active(); !errors.Is(err, store.ErrNotFound) {
		return a, err
	}
	d, err := Load(ctx, c.Store, w)
	if err != nil {
		return nil, err
	}
	var l *labs.Lab
	for _, id := range w.LabIDs {
		lab := labs.Find(c.Labs, id)
		if lab == nil {
			continue // no longer installed here
		}
		if l == nil {
			l = lab // all done: the first lab again, its progress kept
		}
		if !d.Finished(userID, lab) {
			l = lab
			break
		}
	}
	if l == nil {
		return nil, ErrNoLabs
	}
	sess, err := c.StartIn(ctx, w, userID, l)
	if errors.Is(err, store.ErrActiveSession) {
		return active() // a second join at the same moment started it
	}
	if err != nil {
		return nil, err
	}
	return sess, nil
}

// CarryProgress gives a new session of a workshop the progress of the
// learner's previous session of the same lab in it: taking a lab again
// (after its session ended, or from the lab's end page) goes on where they
// were, and the board, which reads a lab's latest session, loses nothing.
func (c *Class) CarryProgress(ctx context.Context, sess *store.LabSession) error {
	if sess.WorkshopID == nil {
		return nil
	}
	sessions, err := c.Store.WorkshopSessions(ctx, *sess.WorkshopID)
	if err != nil {
		return err
	}
	var prev *store.LabSession
	for _, x := range sessions {
		if x.UserID == sess.UserID && x.LabID == sess.LabID && x.ID != sess.ID {
			prev = x
		}
	}
	l := labs.Find(c.Labs, sess.LabID)
	if prev == nil || l == nil {
		return nil
	}
	var steps []string
	for _, st := range l.Steps {
		steps = append(steps, st.ID)
	}
	return c.Store.CopyProgress(ctx, prev.ID, sess.ID, steps)
}

// LearnerChanged tells the workshop's boards that a learner's row changed.
func (c *Class) LearnerChanged(workshop, userID int64) {
	c.Live.Publish(workshop, "learner", userID)
}

// Started hears every start of a lab session (register it with
// session.Sessions.OnStarted; it runs in the start's transaction): a
// session of a workshop gets the progress of the learner's last session of
// the same lab in it, unless the start copies progress of its own (an
// instructor's reset keeps only the steps before the one it resets from),
// and the workshop's boards hear once the start has committed. Every start
// goes through it, whoever asked: the lab page, the API, a join, a reset.
func (c *Class) Started(ctx context.Context, sess *store.LabSession, st session.Start) error {
	if sess.WorkshopID == nil {
		return nil
	}
	if st.ProgressFrom == uuid.Nil {
		if err := c.CarryProgress(ctx, sess); err != nil {
			return fmt.Errorf("carry the learner's progress into the new session: %w", err)
		}
	}
	workshop, user := *sess.WorkshopID, sess.UserID
	store.AfterCommit(ctx, func() { c.LearnerChanged(workshop, user) })
	return nil
}

// ErrNotEnded: Postgres did not take a workshop's end, and nothing of it
// was stored; ending it again may work.
var ErrNotEnded = errors.New("the workshop's end was not stored")

// End marks the workshop ended, drops its prepared clusters and ends every
// session of it (their clusters are deleted; results stay). The end, the
// code's retirement and what announces it are one transaction: if it
// fails (ErrNotEnded) the workshop goes on, open, and nothing else is
// touched.
func (c *Class) End(ctx context.Context, w *store.Workshop, reason string) error {
	if err := c.Store.InTx(ctx, func(ctx context.Context) error {
		if err := c.Store.EndWorkshop(ctx, w.ID); err != nil {
			return err
		}
		if c.Ended == nil {
			return nil
		}
		return c.Ended(ctx, w)
	}); err != nil {
		return fmt.Errorf("%w: %w", ErrNotEnded, err)
	}
	c.Engine.Prepare(w.ID, session.Shape{}, 0, nil)
	sessions, err := c.Store.WorkshopSessions(ctx, w.ID)
	if err != nil {
		return err
	}
	// Raised hands come down: the class is over, and the board keeps
	// its results without them.
	if learners, err := c.Store.WorkshopLearners(ctx, w.ID); err == nil {
		for _, ln := range learners {
			if ln.HandAt != nil {
				_ = c.Store.SetHand(ctx, w.ID, ln.UserID, false)
			}
		}
	}
	var firstErr error
	for _, sess := range sessions {
		if sess.State != store.SessionActive {
			continue
		}
		c.Live.EndTakeovers(sess.ID, "server")
		if err := c.Engine.End(ctx, sess, reason); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	c.Log.Info("workshop ended", "workshop", w.ID, "reason", reason)
	c.Live.Publish(w.ID, "ended", map[string]string{"reason": reason})
	return firstErr
}

// Tick prepares the clusters of workshops in their prepare window and ends
// those whose time is up; the leading replica runs it every few seconds.
func (c *Class) Tick(ctx context.Context) {
	// Take-overs typed through a replica that died.
	if n, err := c.Store.EndOpenTakeovers(ctx, c.TakeoverTTL); err != nil {
		c.Log.Warn("close take-over records of stopped replicas", "err", err)
	} else if n > 0 {
		c.Log.Info("closed take-over records of stopped replicas", "count", n)
	}
	mark := c.Engine.PrepareMark() // before the learner counts are read
	list, err := c.Store.LiveWorkshops(ctx)
	if err != nil {
		c.Log.Warn("workshops", "err", err)
		return
	}
	now := time.Now()
	for _, w := range list {
		switch w.State(now) {
		case store.WorkshopEnded:
			if err := c.End(ctx, w, "the workshop's time is up"); err != nil {
				c.Log.Warn("end workshop", "workshop", w.ID, "err", err)
			}
		case store.WorkshopPreparing, store.WorkshopOpen:
			// Keep prepared clusters for the seats not yet taken, up to
			// the number asked for, and no more than the host could run:
			// more would only hold memory other learners need.
			n := min(w.Prepare-w.Learners, w.Seats-w.Learners, c.RunnableSeats(w))
			c.Engine.Prepare(w.ID, c.Shape(w), max(0, n), mark)
		default:
			c.Engine.Prepare(w.ID, session.Shape{}, 0, nil)
		}
	}
	// A session that started while its workshop was being ended.
	strays, err := c.Store.StrayWorkshopSessions(ctx)
	if err != nil {
		c.Log.Warn("workshops", "err", err)
		return
	}
	for _, sess := range strays {
		c.Live.EndTakeovers(sess.ID, "server")
		if err := c.Engine.End(ctx, sess, "the workshop ended"); err != nil {
			c.Log.Warn("end a session of an ended workshop", "session", sess.ID, "err", err)
		}
	}
}

// RunnableSeats is how many of the workshop's clusters the capacity model
// lets run at once.
func (c *Class) RunnableSeats(w *store.Workshop) int {
	return c.Engine.Usage().Seats(c.Engine.ClusterCost(c.Shape(w)))
}

// Run ticks every interval until ctx ends or stop closes. It first closes
// the take-over records a stopped server left open.
func (c *Class) Run(ctx context.Context, interval time.Duration, stop <-chan struct{}) {
	if _, err := c.Store.EndOpenTakeovers(ctx, c.TakeoverTTL); err != nil {
		c.Log.Warn("close take-over records a stopped server left open", "err", err)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		c.Tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-t.C:
		}
	}
}
